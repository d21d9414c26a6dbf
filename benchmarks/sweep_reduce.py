# ruff: noqa: B023  (the lambdas are called before their loop variables change)
"""Tile sweep for reductions, copy and transposed elementwise ops, against torch on the GPU (< 90 s).

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/sweep_reduce.py [--reps 15]

For each layout (rows, columns, everything of an 8192 x 8192 fp32 tensor, and the middle dim of a
(64, 8192, 128) one) it times every candidate ``reduce.tile_config`` of the sum against torch
(medians of CUDA events, interleaved in one process, ratio = torch_time / genesis_time, > 1 means
Genesis is faster), then mean / amax / argmax / var / std / logsumexp / norm with the shipped
configs (with ``--var-tiles``, ``reduce.online_tile_config`` candidates of var first). Then the dense
copy per ``elementwise.launch_config`` and a transposed add per ``tiled.tile_config``. Prints a
compact table and the best candidate per layout; the shipped defaults are marked with ``*``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genesis_kernels as gk
from bench_kernels import buf, interleaved
from genesis_kernels import tiled

rd = sys.modules["genesis_kernels.reduce"]  # the package's ``reduce`` attribute is the function
ew = sys.modules["genesis_kernels.elementwise"]

# (dims, candidate (BLOCK_M, BLOCK_K, num_warps, programs per SM)) per layout of the sum
REDUCE_CANDIDATES = {
    "rows": [(1, 2048, 4, 4), (1, 4096, 8, 4), (4, 1024, 4, 4), (1, 8192, 8, 4), (2, 4096, 8, 4), (4, 2048, 8, 4),
             (1, 4096, 4, 4), (8, 1024, 8, 4)],
    "cols": [(256, 16, 8, 8), (128, 32, 4, 8), (512, 8, 8, 4), (512, 8, 8, 16), (256, 8, 4, 16), (128, 16, 4, 16),
             (1024, 4, 8, 8), (256, 32, 8, 4)],
    "all": [(1, 2048, 4, 4), (1, 4096, 8, 8), (1, 8192, 8, 4), (1, 2048, 4, 8), (1, 4096, 4, 4), (1, 8192, 16, 2),
            (1, 4096, 8, 2), (1, 1024, 4, 16)],
    "middle": [(128, 16, 4, 8), (128, 32, 4, 16), (128, 64, 8, 8), (128, 8, 4, 16), (128, 32, 8, 4), (64, 32, 4, 16),
               (128, 16, 4, 32), (128, 64, 8, 4)],
}  # fmt: skip
# var's (one pass: a mean and an M2 per element, so half the sum's tile), with --var-tiles
VAR_CANDIDATES = {
    "rows": [(1, 2048, 8, 4), (4, 1024, 8, 4), (2, 2048, 8, 4), (1, 4096, 16, 4), (2, 1024, 4, 8)],
    "cols": [(256, 8, 8, 8), (512, 8, 8, 4), (256, 4, 4, 16), (128, 16, 8, 8), (512, 4, 8, 4)],
    "all": [(1, 4096, 16, 4), (1, 1024, 4, 8), (1, 2048, 8, 8), (1, 4096, 8, 2), (1, 1024, 8, 4)],
    "middle": [(128, 8, 4, 16), (64, 32, 8, 8), (128, 32, 8, 4), (128, 16, 4, 16), (128, 16, 8, 4)],
}  # fmt: skip
COPY_CANDIDATES = [(2048, 4), (2048, 8), (4096, 4), (4096, 8), (8192, 8), (512, 4)]
TILED_CANDIDATES = [(32, 32, 4), (64, 64, 8), (32, 128, 4), (128, 64, 8), (64, 128, 4), (128, 128, 8), (64, 64, 4)]


def ratio(g: Callable[[], object], t: Callable[[], object], reps: int) -> tuple[float, float]:
    r = interleaved({"g": g, "t": t}, reps)
    return r["t"] / r["g"], r["t"]


def layouts() -> dict[str, tuple[torch.Tensor, tuple[int, ...]]]:
    x = torch.randn(8192, 8192, device="cuda")
    mid = torch.randn(64, 8192, 128, device="cuda")
    return {"rows": (x, (1,)), "cols": (x, (0,)), "all": (x, (0, 1)), "middle": (mid, (1,))}


def reduce_sweep(reps: int, budget: float, start: float) -> None:
    original = rd.tile_config
    for name, (x, dims) in layouts().items():
        kept = tuple(s for d, s in enumerate(x.shape) if d not in dims)
        out = torch.empty(kept, device="cuda")
        K = x.numel() // out.numel()
        want = x.double().sum(dims).float()
        rows = []
        for cfg in [None, *REDUCE_CANDIDATES[name]]:
            if time.perf_counter() - start > budget:
                print(f"  (time budget reached: {name} candidates after {cfg} skipped)")
                break
            # The candidate applies to the pass over x; a split's second pass keeps the shipped choice.
            rd.tile_config = (
                original if cfg is None else (lambda M, k, rc, i, _c=cfg: _c if k == K else original(M, k, rc, i))
            )
            rd.clear_plans()
            r, t_ms = ratio(lambda: gk.reduce("sum", buf(x), buf(out), dims), lambda: torch.sum(x, dims, out=out), reps)
            torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-2)
            rows.append((r, cfg))
            label = (
                "*"
                + str(
                    original(out.numel(), K, name in ("rows", "all"), x.shape[-1] if name in ("cols", "middle") else 0)
                )
                if cfg is None
                else str(cfg)
            )
            print(f"  sum {name:<7} {label:<24} ratio {r:5.2f}   torch {t_ms * 1e3:7.1f} us   "
                  f"genesis {x.numel() * 4 / (t_ms / r * 1e-3) / 1e9:5.0f} GB/s", flush=True)  # fmt: skip
        best = max(rows, key=lambda p: p[0])
        print(f"  BEST sum {name}: {best[1] or 'default'} ratio {best[0]:.2f}", flush=True)
        rd.tile_config = original
        rd.clear_plans()


def var_sweep(reps: int) -> None:
    original = rd.online_tile_config
    for name, (x, dims) in layouts().items():
        kept = tuple(s for d, s in enumerate(x.shape) if d not in dims)
        out = torch.empty(kept, device="cuda")
        K = x.numel() // out.numel()
        want = x.double().var(dims).float()
        rows = []
        for cfg in [None, *VAR_CANDIDATES[name]]:
            # The candidate applies to the pass over x; a split's merge of partials keeps the shipped choice.
            rd.online_tile_config = (
                original if cfg is None else (lambda M, k, rc, i, _c=cfg: _c if k == K else original(M, k, rc, i))
            )
            rd.clear_plans()
            r, t_ms = ratio(lambda: gk.var(buf(x), buf(out), dims), lambda: torch.var(x, dims, out=out), reps)
            torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
            rows.append((r, cfg))
            label = "*default" if cfg is None else str(cfg)
            print(f"  var {name:<7} {label:<24} ratio {r:5.2f}   torch {t_ms * 1e3:7.1f} us   "
                  f"genesis {x.numel() * 4 / (t_ms / r * 1e-3) / 1e9:5.0f} GB/s", flush=True)  # fmt: skip
        best = max(rows, key=lambda p: p[0])
        print(f"  BEST var {name}: {best[1] or 'default'} ratio {best[0]:.2f}", flush=True)
        rd.online_tile_config = original
        rd.clear_plans()


def other_ops(reps: int) -> None:
    for name, (x, dims) in layouts().items():
        kept = tuple(s for d, s in enumerate(x.shape) if d not in dims)
        out = torch.empty(kept, device="cuda")
        cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
            "mean": (lambda: gk.reduce("mean", buf(x), buf(out), dims), lambda: torch.mean(x, dims, out=out)),
            "amax": (lambda: gk.reduce("amax", buf(x), buf(out), dims), lambda: torch.amax(x, dims, out=out)),
            "var": (lambda: gk.var(buf(x), buf(out), dims), lambda: torch.var(x, dims, out=out)),
            "std": (lambda: gk.std(buf(x), buf(out), dims), lambda: torch.std(x, dims, out=out)),
            "lse": (lambda: gk.logsumexp(buf(x), buf(out), dims), lambda: torch.logsumexp(x, dims, out=out)),
            "norm": (
                lambda: gk.norm(buf(x), buf(out), 2.0, dims),
                lambda: torch.linalg.vector_norm(x, 2.0, dims, out=out),
            ),
        }
        if len(dims) == 1:
            idx = torch.empty(kept, dtype=torch.int64, device="cuda")
            cases["argmax"] = (
                lambda: gk.arg_reduce("argmax", buf(x), buf(out), buf(idx), dims[0]),
                lambda: torch.argmax(x, dims[0]),
            )
        else:
            flat, v0, i0 = x.view(-1), torch.empty((), device="cuda"), torch.empty((), dtype=torch.int64, device="cuda")
            cases["argmax"] = (
                lambda: gk.arg_reduce("argmax", buf(flat), buf(v0), buf(i0), 0),
                lambda: torch.argmax(x),
            )
        line = []
        for op, (g, t) in cases.items():
            line.append(f"{op} {ratio(g, t, reps)[0]:4.2f}")
        print(f"  {name:<7} " + "  ".join(line), flush=True)


def host_time() -> None:
    x = torch.randn(64, 64, device="cuda")
    out = torch.empty(64, device="cuda")
    bx, bo = buf(x), buf(out)
    for _ in range(100):
        gk.reduce("sum", bx, bo, (1,))
    n = 5000
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        gk.reduce("sum", bx, bo, (1,))
    torch.cuda.synchronize()
    g = (time.perf_counter() - t) / n * 1e6
    t = time.perf_counter()
    for _ in range(n):
        torch.sum(x, 1, out=out)
    torch.cuda.synchronize()
    print(f"  host time per small sum: genesis {g:.1f} us, torch {(time.perf_counter() - t) / n * 1e6:.1f} us")


def copy_sweep(reps: int) -> None:
    n = (256 << 20) // 4
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    original = ew.launch_config
    for cfg in [None, *COPY_CANDIDATES]:
        ew.launch_config = (
            original
            if cfg is None
            else (lambda itemsize, contiguous, _c=cfg: _c if contiguous else original(itemsize, contiguous))
        )
        ew.UNARY_DENSE.cache.clear()
        r, _ = ratio(lambda: gk.copy(buf(src), buf(dst)), lambda: dst.copy_(src), reps)
        label = "*" + str(original(4, True)) if cfg is None else str(cfg)
        print(f"  copy fp32 256 MiB {label:<14} ratio {r:5.2f}", flush=True)  # fmt: skip
    ew.launch_config = original
    ew.UNARY_DENSE.cache.clear()


def tiled_sweep(reps: int) -> None:
    original = tiled.tile_config
    for dtype in (torch.float32, torch.bfloat16):
        side = 8192 if dtype == torch.float32 else 11585
        a = torch.randn(side, side, device="cuda", dtype=dtype)
        bt = torch.randn(side, side, device="cuda", dtype=dtype).t()
        o = torch.empty(side, side, device="cuda", dtype=dtype)
        for cfg in [None, *TILED_CANDIDATES]:
            tiled.tile_config = original if cfg is None else (lambda itemsize, _c=cfg: _c)
            r, _ = ratio(
                lambda: gk.binary("add", buf(a), buf(bt), buf(o), compute_dtype="float32"),
                lambda: torch.add(a, bt, out=o),
                reps,
            )
            label = "*" + str(original(dtype.itemsize)) if cfg is None else str(cfg)
            print(f"  add {str(dtype)[6:]:<8} b transposed {label:<16} ratio {r:5.2f}", flush=True)
        tx = torch.randn(side, side, device="cuda", dtype=dtype).t()
        tiled.tile_config = original
        r, _ = ratio(lambda: gk.copy(buf(tx), buf(o)), lambda: o.copy_(tx), reps)
        print(f"  copy {str(dtype)[6:]:<8} transposed source {'*default':<12} ratio {r:5.2f}", flush=True)
    tiled.tile_config = original


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--budget", type=float, default=40.0, help="seconds for the reduction candidates")
    parser.add_argument("--var-tiles", action="store_true", help="also sweep var's tile candidates (~30 s)")
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    host_time()
    print("== sum: candidates (BLOCK_M, BLOCK_K, num_warps, programs/SM); * = shipped", flush=True)
    reduce_sweep(args.reps, args.budget, start)
    if args.var_tiles:
        print("== var: candidates (BLOCK_M, BLOCK_K, num_warps, programs/SM)", flush=True)
        var_sweep(args.reps)
    print("== other reductions, shipped configs: ratio torch / genesis", flush=True)
    other_ops(args.reps)
    print("== copy (BLOCK, num_warps) and transposed add (BLOCK_R, BLOCK_C, num_warps)", flush=True)
    copy_sweep(args.reps)
    tiled_sweep(args.reps)
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
