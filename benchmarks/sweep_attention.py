"""Tile sweep for flash attention (genesis_kernels.attention) on the GPU, against torch (< 4 min on an H100).

    PYTHONPATH=$(ls -d $PWD/packages/*/src | paste -sd:) python3 benchmarks/sweep_attention.py [--reps 10]

Causal bf16 at the issue-#10 shape (B, H, L, D) = (4, 16, 4096, 128) and at (4, 32, 4096, 64). For each
kernel separately it tries the candidate (BLOCK_M, BLOCK_N, num_warps, num_stages) of CANDIDATES by
patching the module's table (_FWD_CONFIGS / _DKDV_CONFIGS / _DQ_CONFIGS) for that head dim:
  fwd   time of the forward;
  dkdv  time of the whole backward (delta + dK/dV + dQ) with dQ at its shipped config;
  dq    time of the whole backward with dK/dV at its shipped config,
so within one kernel's rows the differences are that kernel's. The first pass compiles and runs every
candidate once and checks it against torch's sdpa (relative error of out, or of the gradients that kernel
writes; over 2e-2 is marked BAD and never chosen); a candidate that fails to compile or to launch (e.g.
out of shared memory) is printed as 'skip' with the error. The second pass times (CUDA-event medians after
warm-up, inputs rotated over 2 sets). The shipped config is marked '*'.

Then, per shape, the full forward + backward of the shipped configs and of the sweep's best ones against
torch's sdpa with the flash backend, the cuDNN backend and torch's default choice (interleaved medians;
ratio = torch time / genesis time, > 1 means genesis is faster), forward-only TFLOP/s of all of them,
a per-kernel split of genesis's time (CUPTI, torch.profiler), and last a config table ready to paste
into attention.py. Not a test; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_attention import Genesis
from timing import interleaved_us

att = importlib.import_module("genesis_kernels.attention")

SETS = 2
DEVICE = "cuda"
SHAPES = [(4, 16, 4096, 128), (4, 32, 4096, 64)]
TABLES = {"fwd": "_FWD_CONFIGS", "dkdv": "_DKDV_CONFIGS", "dq": "_DQ_CONFIGS"}
# (BLOCK_M, BLOCK_N, num_warps, num_stages) per kernel and padded head dim; the shipped one is added if absent.
CANDIDATES = {
    "fwd": {
        128: [(128, 128, 8, 2), (128, 128, 8, 3), (128, 64, 8, 4), (128, 64, 4, 3), (64, 64, 4, 3), (128, 32, 4, 4)],
        64: [(128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 4, 3), (128, 128, 8, 4), (64, 64, 4, 4)],
    },
    "dkdv": {
        128: [(32, 128, 8, 2), (64, 128, 8, 2), (64, 128, 8, 3), (32, 64, 4, 3), (64, 64, 4, 3), (32, 128, 8, 4)],
        64: [(32, 128, 4, 3), (32, 128, 8, 3), (64, 128, 4, 3), (64, 64, 4, 3), (32, 64, 4, 4)],
    },
    "dq": {
        128: [(128, 32, 8, 3), (128, 64, 8, 2), (128, 128, 8, 2), (64, 64, 4, 3), (128, 32, 4, 3), (64, 32, 4, 3)],
        64: [(128, 64, 4, 3), (128, 32, 4, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 32, 8, 4)],
    },
}
BAD = 2e-2  # bf16 genesis vs bf16 torch at L = 4096: both ~4e-3 from the exact result


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@contextlib.contextmanager
def patched(kernel: str, block_d: int, cfg: tuple[int, int, int, int] | None):
    table = getattr(att, TABLES[kernel])
    old = table[block_d]
    if cfg is not None:
        table[block_d] = cfg
    try:
        yield
    finally:
        table[block_d] = old


class Case:
    """Inputs (SETS of them), torch's reference output and gradients, and genesis's preallocated outputs."""

    def __init__(self, shape: tuple[int, int, int, int]) -> None:
        B, H, L, D = self.shape = shape
        self.block_d = max(16, 1 << (D - 1).bit_length())
        self.q, self.k, self.v, self.g = (
            [torch.randn(B, H, L, D, device=DEVICE, dtype=torch.bfloat16) for _ in range(SETS)] for _ in range(4)
        )
        self.gen = Genesis(self.q[0], self.k[0], causal=True)
        self.flops = 4 * B * H * L * L * D / 2  # forward, causal: half of the two L x L x D products
        q, k, v = (t[0].detach().requires_grad_() for t in (self.q, self.k, self.v))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(self.g[0])
        self.ref = {"out": out.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad}

    def fwd(self, i: int) -> None:
        self.gen.forward(self.q[i], self.k[i], self.v[i])

    def bwd(self, i: int) -> None:
        self.gen.backward(self.q[i], self.k[i], self.v[i], self.g[i])

    def fwd_bwd(self, i: int) -> None:
        self.fwd(i)
        self.bwd(i)

    def error(self, kernel: str) -> float:
        """Run set 0 through genesis (forward, and backward unless ``kernel`` is fwd) and compare."""
        self.fwd(0)
        if kernel != "fwd":
            self.bwd(0)
        torch.cuda.synchronize()
        gen = self.gen
        got = {"fwd": [(gen.out, "out")], "dkdv": [(gen.dk, "dk"), (gen.dv, "dv")], "dq": [(gen.dq, "dq")]}[kernel]
        return max(rel(t, self.ref[name]) for t, name in got)


def sweep_kernel(case: Case, kernel: str, reps: int, start: float, budget: float) -> tuple | None:
    """Every candidate of ``kernel`` at ``case``: compile + check pass, then a timing pass. Returns the best."""
    shipped = getattr(att, TABLES[kernel])[case.block_d]
    cands = [shipped] + [c for c in CANDIDATES[kernel][case.block_d] if c != shipped]
    timed_fn = case.fwd if kernel == "fwd" else case.bwd
    ok: list[tuple[tuple, float]] = []
    for cfg in cands:  # pass 1: compile, run once, check
        if time.perf_counter() - start > budget:
            print(f"  {kernel} d{case.shape[3]} {cfg}: skipped (time budget)", flush=True)
            continue
        t0 = time.perf_counter()
        try:
            with patched(kernel, case.block_d, cfg):
                err = case.error(kernel)
        except Exception as e:  # compile errors, out of shared memory at load, ...
            print(f"  {kernel} d{case.shape[3]} {cfg}: skip ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
            continue
        flag = "" if err < BAD and math.isfinite(err) else "  BAD"
        print(f"  {kernel} d{case.shape[3]} {cfg}: compiled+checked in {time.perf_counter() - t0:4.1f} s, "
              f"rel err {err:.2e}{flag}", flush=True)  # fmt: skip
        if not flag:
            ok.append((cfg, err))
    if not ok:
        return None
    rows = []
    for cfg, err in ok:  # pass 2: time
        with patched(kernel, case.block_d, cfg):
            us = interleaved_us({"g": timed_fn}, reps, SETS, warmup=2)["g"]
        rows.append((us, cfg, err))
    what = "forward" if kernel == "fwd" else "backward (delta + dK/dV + dQ)"
    print(f"  {kernel} d{case.shape[3]}: median {what} time per candidate")
    for us, cfg, _ in sorted(rows):
        mark = "*" if cfg == shipped else " "
        extra = f"  {case.flops / us / 1e6:5.0f} TFLOP/s" if kernel == "fwd" else ""
        print(f"   {mark}{cfg!s:<22} {us:9.1f} us{extra}")
    best = min(rows)
    ship_us = [us for us, c, _ in rows if c == shipped]
    ship = f"{ship_us[0]:.1f} us" if ship_us else "did not run"
    print(f"  BEST {kernel} d{case.shape[3]}: {best[1]}  ({best[0]:.1f} us; shipped {ship})\n", flush=True)
    return best[1]


def torch_fwd_bwd(case: Case, backend: SDPBackend | None) -> Callable[[int], None]:
    leaves = [[t.detach().requires_grad_() for t in (case.q[i], case.k[i], case.v[i])] for i in range(SETS)]

    def run(i: int) -> None:
        q, k, v = leaves[i]
        q.grad = k.grad = v.grad = None
        with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(case.g[i])

    return run


def torch_fwd(case: Case, backend: SDPBackend | None) -> Callable[[int], None]:
    def run(i: int) -> None:
        with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext(), torch.no_grad():
            torch.nn.functional.scaled_dot_product_attention(case.q[i], case.k[i], case.v[i], is_causal=True)

    return run


def usable(fns: dict[str, Callable[[int], None]]) -> dict[str, Callable[[int], None]]:
    """The functions that run (a torch backend may refuse the shape or be missing)."""
    out = {}
    for name, fn in fns.items():
        try:
            fn(0)
            torch.cuda.synchronize()
            out[name] = fn
        except Exception as e:
            print(f"  {name}: unavailable ({type(e).__name__}: {str(e).splitlines()[0][:100]})")
    return out


def per_kernel_split(case: Case) -> str:
    """GPU time per genesis kernel of one forward + backward (CUPTI through torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    case.fwd_bwd(0)
    torch.cuda.synchronize()
    calls = 3
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            case.fwd_bwd(i % SETS)
        torch.cuda.synchronize()
    parts = []
    for e in prof.key_averages():
        if e.self_device_time_total > 0:
            name = e.key.replace("_attn_", "").replace("_kernel", "")
            parts.append(f"{name} {e.self_device_time_total / calls:.0f} us")
    return ", ".join(parts)


def compare(case: Case, label: str, configs: dict[str, tuple], reps: int) -> None:
    B, H, L, D = case.shape
    with contextlib.ExitStack() as stack:
        for kernel, cfg in configs.items():
            stack.enter_context(patched(kernel, case.block_d, cfg))
        fb = usable({
            "genesis": case.fwd_bwd,
            "torch flash": torch_fwd_bwd(case, SDPBackend.FLASH_ATTENTION),
            "torch cudnn": torch_fwd_bwd(case, SDPBackend.CUDNN_ATTENTION),
            "torch default": torch_fwd_bwd(case, None),
        })  # fmt: skip
        t = interleaved_us(fb, reps, SETS)
        f = usable({
            "genesis": case.fwd,
            "torch flash": torch_fwd(case, SDPBackend.FLASH_ATTENTION),
            "torch cudnn": torch_fwd(case, SDPBackend.CUDNN_ATTENTION),
            "torch default": torch_fwd(case, None),
        })  # fmt: skip
        tf = interleaved_us(f, reps, SETS)
        try:
            split = per_kernel_split(case)
        except Exception as e:  # the profiler is a diagnostic; its failure must not cost the table
            split = f"profiler failed ({type(e).__name__})"
    g, gf = t["genesis"], tf["genesis"]
    print(f"\n== {label}: causal bf16 {B}x{H}x{L}x{D}, genesis configs {configs}")
    print(f"   genesis fwd+bwd {g:8.1f} us ({3.5 * case.flops / g / 1e6:4.0f} TFLOP/s), "
          f"fwd {gf:7.1f} us ({case.flops / gf / 1e6:4.0f} TFLOP/s)")  # fmt: skip
    for name in ("torch flash", "torch cudnn", "torch default"):
        if name in t and name in tf:
            fwd_tf = case.flops / tf[name] / 1e6
            print(f"   {name:<14} fwd+bwd {t[name]:8.1f} us  ratio {t[name] / g:5.2f}x   "
                  f"fwd {tf[name]:7.1f} us ({fwd_tf:4.0f} TFLOP/s) ratio {tf[name] / gf:5.2f}x")  # fmt: skip
    print(f"   genesis per kernel (one fwd+bwd): {split}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--budget", type=float, default=170.0, help="seconds for the candidate sweep")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sweep_attention.py needs a CUDA device")
    start = time.perf_counter()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    best: dict[int, dict[str, tuple]] = {}
    cases = []
    for shape in SHAPES:
        case = Case(shape)
        cases.append(case)
        best[case.block_d] = {}
        for kernel in ("fwd", "dkdv", "dq"):
            cfg = sweep_kernel(case, kernel, args.reps, start, args.budget)
            if cfg is not None:
                best[case.block_d][kernel] = cfg
    print(f"sweep done at {time.perf_counter() - start:.0f} s", flush=True)
    for case in cases:
        compare(case, "shipped", {}, args.reps + 5)
        if best[case.block_d]:
            compare(case, "sweep's best", best[case.block_d], args.reps + 5)
        del case.q, case.k, case.v, case.g
        torch.cuda.empty_cache()
    print("\nConfig table (paste into attention.py; entries for other head dims unchanged):")
    for kernel, table in TABLES.items():
        current = dict(getattr(att, table))
        for block_d, cfgs in best.items():
            if kernel in cfgs:
                current[block_d] = cfgs[kernel]
        print(f"{table} = {{" + ", ".join(f"{d}: {c}" for d, c in sorted(current.items())) + "}")
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
