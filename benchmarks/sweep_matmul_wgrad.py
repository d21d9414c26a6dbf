"""Config sweep for the GPT-2-small training matmuls, weight gradients first, against torch (< 4 min on an H100).

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/sweep_matmul_wgrad.py [--reps 20] [--budget 200]

Shapes: a GPT-2-small's Linear layers over M = 8192 rows (768 -> 2304 qkv, 768 -> 768 attention proj,
768 -> 3072 fc, 3072 -> 768 MLP proj, 768 -> 50304 LM head), each in the three products its training
step runs (bf16):

    fwd    y  = x @ W^T    "NT"  (M = 8192, N = out, K = in)
    dgrad  dx = dy @ W     "NN"  (M = 8192, N = in,  K = out)
    wgrad  dW = dy^T @ x   "TN"  (M = out,  N = in,  K = 8192; dy (8192, out) read transposed in place)

For each shape, every candidate ``matmul.TmaConfig`` (the shipped one from ``matmul._tma_config``,
marked ``*``, and alternatives: data-parallel and stream-K tiles) is planned through
``genesis_kernels.matmul_plan`` with ``_tma_config`` overridden, run once and checked against an fp32
torch reference (relative Frobenius error <= 1e-2, no NaN left in the output; a candidate that fails to
compile, falls back, or is wrong is reported and skipped), then all passing candidates and torch are
timed interleaved (CUDA-event medians after warm-up, input sets rotated so L2 flatters no one).
ratio = torch time / genesis time (> 1: Genesis faster). Weight gradients get the widest candidate
list; the forward / dgrad shapes (targets already met) a short one. ``--budget`` seconds after start,
remaining shapes run the shipped config only. Ends with a markdown table for benchmarks/matmul_notes.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import torch

if not torch.cuda.is_available():  # --smoke on a CPU machine: the kernels run in Triton's interpreter
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")

import genesis_kernels as gk

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

mm = sys.modules["genesis_kernels.matmul"]  # the package's ``matmul`` attribute is the function
Cfg = mm.TmaConfig
SHIPPED = mm._tma_config

# (in, out) of GPT-2-small's Linear layers
LINEARS = {
    "qkv": (768, 2304),
    "attn.proj": (768, 768),
    "fc": (768, 3072),
    "mlp.proj": (3072, 768),
    "lm_head": (768, 50304),
}
ROWS = 8192

# Weight-gradient candidates: data-parallel (the configs shipped before stream-K) and stream-K tiles.
WGRAD_CANDIDATES = [
    Cfg(128, 128, 64, 8, 4, stream_k=False),
    Cfg(128, 256, 64, 8, 3, stream_k=False),
    Cfg(128, 128, 64, 8, 4, stream_k=True),
    Cfg(128, 128, 64, 8, 3, stream_k=True),
    Cfg(128, 256, 64, 8, 3, stream_k=True),
    Cfg(256, 128, 64, 8, 3, stream_k=True),
    Cfg(128, 128, 64, 4, 4, stream_k=True),
    Cfg(128, 64, 64, 4, 4, stream_k=True),
]
OTHER_CANDIDATES = [Cfg(128, 128, 64, 8, 4), Cfg(128, 256, 64, 8, 3)]


def interleaved_us(fns: dict[str, Callable[[int], object]], reps: int, sets: int, warmup: int = 3) -> dict[str, float]:
    """Median microseconds per call of each ``fn(i)`` (i: the input set), alternating the functions every
    repetition; CUDA events on the GPU (host clock under --smoke on a CPU)."""
    for fn in fns.values():
        for i in range(warmup):
            fn(i % sets)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(reps):
        for name, fn in fns.items():
            if DEVICE == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(r % sets)
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end) * 1e3)
            else:
                t0 = time.perf_counter()
                fn(r % sets)
                times[name].append((time.perf_counter() - t0) * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


def buf(t: torch.Tensor) -> gk.Buffer:
    return gk.Buffer(t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype).removeprefix("torch."))


def operand(rows: int, cols: int, transposed: bool) -> torch.Tensor:
    """A (1, rows, cols) bf16 operand, row-major or the transposed view of a row-major (cols, rows) matrix."""
    if transposed:
        return torch.randn(cols, rows, device=DEVICE, dtype=torch.bfloat16).t().unsqueeze(0)
    return torch.randn(1, rows, cols, device=DEVICE, dtype=torch.bfloat16)


def label(cfg: Cfg) -> str:
    return f"{'SK' if cfg.stream_k else 'DP'} {cfg.bm}x{cfg.bn}x{cfg.bk} w{cfg.warps} s{cfg.stages}"


def plan_for(cfg: Cfg | None, a: gk.Buffer, b: gk.Buffer, out: gk.Buffer) -> Callable[..., None]:
    """The plan with ``_tma_config`` returning ``cfg`` (None: the shipped choice); raises if a stream-K
    candidate fell back to the data-parallel kernel (it would be timed under the wrong name)."""
    mm._tma_config = SHIPPED if cfg is None else (lambda *args: cfg)
    mm._PLANS.clear()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = gk.matmul_plan(a, b, out)
    finally:
        mm._tma_config = SHIPPED
        mm._PLANS.clear()
    for w in caught:
        if "stream-K" in str(w.message):
            raise RuntimeError(str(w.message))
    if plan is None:
        raise RuntimeError("no plan")
    return plan


def sweep_shape(name: str, m: int, n: int, k: int, layout: str, cands: list[Cfg], reps: int) -> dict:
    per_set = (m * k + k * n) * 2
    sets = max(2, min(4, (400 << 20) // per_set))
    a = [operand(m, k, layout[0] == "T") for _ in range(sets)]
    b = [operand(k, n, layout[1] == "T") for _ in range(sets)]
    out = torch.empty(1, m, n, device=DEVICE, dtype=torch.bfloat16)
    ga, gb, go = [buf(x) for x in a], [buf(x) for x in b], buf(out)
    ref = (a[0].float() @ b[0].float()).double()
    stream = torch.cuda.current_stream().cuda_stream if DEVICE == "cuda" else 0
    shipped_cfg = SHIPPED(2, m, n, k, False)
    # torch as a training step calls it (2-D mm: Linear's backward is grad.t().mm(x)), and the batch-1
    # bmm that benchmarks/bench_matmul.py times (the ratios in matmul_notes.md are against that one).
    fns: dict[str, Callable[[int], object]] = {
        "torch": lambda i: torch.mm(a[i][0], b[i][0], out=out[0]),
        "torch bmm": lambda i: torch.matmul(a[i], b[i], out=out),
    }
    # warp_specialize as the shipped choice sets it (with Triton 3.7 it leaves sm_90 code unchanged)
    cands = [c._replace(warp_specialize=not c.stream_k) for c in cands]
    seen: dict[str, Cfg] = {}
    for cfg in [shipped_cfg, *cands]:
        key = label(cfg) + (" *" if cfg == shipped_cfg else "")
        if cfg in seen.values() or key + " *" in seen:
            continue
        seen[key] = cfg
        try:
            plan = plan_for(cfg, ga[0], gb[0], go)
            out.fill_(float("nan"))
            plan(ga[0].ptr, gb[0].ptr, go.ptr, go.ptr, stream)
            if DEVICE == "cuda":
                torch.cuda.synchronize()
            if out.isnan().any():
                raise RuntimeError("output elements left unwritten (NaN)")
            err = ((out.double() - ref).norm() / ref.norm()).item()
            if not err <= 1e-2:
                raise RuntimeError(f"relative error {err:.2e} > 1e-2")
        except Exception as exc:  # a sweep: report the candidate and go on
            print(f"    {key}: skipped: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
            continue
        fns[key] = lambda i, plan=plan: plan(ga[i].ptr, gb[i].ptr, go.ptr, go.ptr, stream)
    t = interleaved_us(fns, reps=reps, sets=sets, warmup=3)
    flops = 2 * m * n * k
    print(
        f"  {name:<22} {layout} M={m} N={n} K={k}: torch mm {t['torch']:7.1f} us "
        f"({flops / t['torch'] / 1e6:4.0f} TFLOP/s), torch bmm {t['torch bmm']:7.1f} us"
    )
    rows = sorted((v, k_) for k_, v in t.items() if k_ in seen)
    for us, key in rows:
        cfg = seen[key]
        print(
            f"    {key:<26} {us:7.1f} us  ratio {t['torch'] / us:5.2f}x  ({flops / us / 1e6:4.0f} TFLOP/s, "
            f"{-(-m // cfg.bm) * -(-n // cfg.bn)} tiles)",
            flush=True,
        )
    shipped_key = next((k_ for k_ in t if k_.endswith(" *")), None)
    best_us, best_key = rows[0] if rows else (float("nan"), "-")
    return dict(
        name=name,
        layout=layout,
        shape=(m, n, k),
        torch=t["torch"],
        shipped=shipped_key,
        shipped_ratio=t["torch"] / t[shipped_key] if shipped_key else float("nan"),
        shipped_ratio_bmm=t["torch bmm"] / t[shipped_key] if shipped_key else float("nan"),
        best=best_key,
        best_ratio=t["torch"] / best_us,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--budget", type=float, default=200.0, help="seconds; after it, shipped configs only")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes, 2 reps (CPU: interpreter)")
    args = parser.parse_args()
    start = time.time()
    torch.manual_seed(0)
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (Triton interpreter)"
    print(name, "torch", torch.__version__, "SMs", mm.sm_count(), flush=True)
    global ROWS, LINEARS, WGRAD_CANDIDATES, OTHER_CANDIDATES
    if args.smoke:  # shapes the interpreter's 64 x 32 tiles and 4 "SMs" split like the real ones
        ROWS, args.reps = 1024, 2
        LINEARS = {"qkv": (96, 160), "proj": (96, 96)}
        WGRAD_CANDIDATES = [*WGRAD_CANDIDATES[:3], Cfg(64, 32, 32, 4, 2, stream_k=True)]
        OTHER_CANDIDATES = OTHER_CANDIDATES[:1]
    shapes = []
    for lname, (fin, fout) in LINEARS.items():  # weight gradients first: the shapes this sweep is for
        shapes.append((f"wgrad {lname}", fout, fin, ROWS, "TN", WGRAD_CANDIDATES))
    for lname, (fin, fout) in LINEARS.items():
        shapes.append((f"fwd {lname}", ROWS, fout, fin, "NT", OTHER_CANDIDATES))
        shapes.append((f"dgrad {lname}", ROWS, fin, fout, "NN", OTHER_CANDIDATES))
    results = []
    for name, m, n, k, layout, cands in shapes:
        if time.time() - start > args.budget:
            cands = []
        results.append(sweep_shape(name, m, n, k, layout, cands, args.reps))
        if DEVICE == "cuda":
            torch.cuda.empty_cache()  # the shape's inputs (up to 1.6 GB for the LM head) are gone
        print(f"    [{time.time() - start:5.0f} s]", flush=True)
    print("\nratio = torch time / genesis time; * = shipped config")
    print("| product | layout | M x N x K | torch mm us | shipped | ratio (vs mm) | ratio (vs bmm) | best | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        m, n, k = r["shape"]
        print(
            f"| {r['name']} | {r['layout']} | {m}x{n}x{k} | {r['torch']:.1f} | {r['shipped']} | "
            f"{r['shipped_ratio']:.2f} | {r['shipped_ratio_bmm']:.2f} | {r['best']} | {r['best_ratio']:.2f} |"
        )
    wg = [r["shipped_ratio"] for r in results if r["name"].startswith("wgrad")]
    print(f"\nwgrad shipped ratios: min {min(wg):.2f}, geomean {statistics.geometric_mean(wg):.2f}")
    print(f"total {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
