# ruff: noqa: B023  (the lambdas are called before their loop variables change)
"""Tuning probe for the GPU machine (not a benchmark of record): where a small launch spends its
host time, and how elementwise / reduction launch configurations compare with torch.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 tools/probe_kernels.py

Replaces ``elementwise.launch_config`` and ``reduce.tile_config`` for each candidate and prints
torch_time / genesis_time per configuration (medians of CUDA events, interleaved with torch).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import genesis_kernels as gk
from bench_kernels import buf, interleaved
from genesis_kernels.runtime import Kernel, sm_count

ew = sys.modules["genesis_kernels.elementwise"]
rd = sys.modules["genesis_kernels.reduce"]  # the package's ``reduce`` attribute is the function


@triton.jit
def _add4(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(a + i, mask=m) + tl.load(b + i, mask=m), mask=m)


@triton.jit
def _add_grid_stride(a, b, out, n, BLOCK: tl.constexpr, STEP: tl.constexpr, EVICT: tl.constexpr):
    # Persistent variant: a fixed grid walks the whole tensor (n is a multiple of BLOCK here).
    for start in tl.range(tl.program_id(0) * BLOCK, n, STEP):
        i = start + tl.arange(0, BLOCK)
        if EVICT:
            x = tl.load(a + i, eviction_policy="evict_first") + tl.load(b + i, eviction_policy="evict_first")
        else:
            x = tl.load(a + i) + tl.load(b + i)
        tl.store(out + i, x)


def persistent_add() -> None:
    print("== add fp32 256 MiB, grid-stride persistent kernel: torch time / genesis time", flush=True)
    n = (256 << 20) // 4
    a, b, o = (torch.randn(n, device="cuda") for _ in range(3))
    k = Kernel(_add_grid_stride)
    stream = torch.cuda.current_stream().cuda_stream
    for block, warps in ((1024, 4), (2048, 8), (4096, 8)):
        for per_sm in (2, 4, 8, 16):
            for evict in (False, True):
                progs = per_sm * sm_count()
                f = k.build(
                    (block, warps, progs, evict),
                    {"a": "*fp32", "b": "*fp32", "out": "*fp32", "n": "i32"},
                    {"BLOCK": block, "STEP": progs * block, "EVICT": evict},
                    ("a", "b", "out", "n"),
                    num_warps=warps,
                )
                args = (a.data_ptr(), b.data_ptr(), o.data_ptr(), n, block, progs * block, evict)
                t = interleaved({"g": lambda: f((progs, 1, 1), stream, args), "t": lambda: torch.add(a, b, out=o)}, 30)
                torch.testing.assert_close(o, a + b)
                print(
                    f"  BLOCK {block:5d} warps {warps} programs/SM {per_sm:2d} evict_first {evict!s:<5} "
                    f"ratio {t['t'] / t['g']:.3f}",
                    flush=True,
                )


def wall_per_op(fn, loops: int = 20000) -> float:
    for _ in range(200):
        fn()
    samples = []
    for _ in range(5):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(loops):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t) / loops * 1e6)
    return statistics.median(samples)


def launch_costs() -> None:
    print("== host wall time per small add (1,024 fp32), us", flush=True)
    a, b, o = (torch.randn(1024, device="cuda") for _ in range(3))
    ba, bb, bo = buf(a), buf(b), buf(o)
    stream = torch.cuda.current_stream().cuda_stream
    gk.binary("add", ba, bb, bo, compute_dtype="float32", stream=stream)
    launch = next(f for k, f in ew.BINARY_DENSE.cache.items() if k[:2] == ("add", "float32"))
    block = launch._block
    args = (a.data_ptr(), b.data_ptr(), o.data_ptr(), 1024, *launch._consts)
    k4 = Kernel(_add4)
    f4 = k4.build("k", {"a": "*fp32", "b": "*fp32", "out": "*fp32", "n": "i32"}, {"BLOCK": 1024}, ("a", "b", "out"))
    args4 = (a.data_ptr(), b.data_ptr(), o.data_ptr(), 1024, 1024)
    rows = {
        "torch.add(out=)": lambda: torch.add(a, b, out=o),
        "gk.binary": lambda: gk.binary("add", ba, bb, bo, compute_dtype="float32", stream=stream),
        "cached dense launch fn": lambda: launch((1, 1, 1), stream, args),
        "4-arg kernel launch fn": lambda: f4((1, 1, 1), stream, args4),
    }
    for name, fn in rows.items():
        print(f"  {name:<28} {wall_per_op(fn):6.2f}", flush=True)
    print(f"  (block {block})", flush=True)


def elementwise_sweep() -> None:
    print("== add, 256 MiB contiguous: torch time / genesis time per (BLOCK, num_warps)", flush=True)
    original = ew.launch_config
    for dtype in (torch.float32, torch.bfloat16):
        n = (256 << 20) // (4 if dtype == torch.float32 else 2)
        a, b, o = (torch.randn(n, device="cuda", dtype=dtype) for _ in range(3))
        for block, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 4), (4096, 8), (8192, 8), (8192, 16)):
            ew.launch_config = lambda itemsize, contiguous, _b=block, _w=warps: (_b, _w)
            t = interleaved(
                {
                    "g": lambda: gk.binary("add", buf(a), buf(b), buf(o), compute_dtype=str(dtype)[6:]),
                    "t": lambda: torch.add(a, b, out=o),
                },
                30,
            )
            print(f"  {str(dtype)[6:]:<9} BLOCK {block:5d} warps {warps:2d}   ratio {t['t'] / t['g']:.3f}", flush=True)
    ew.launch_config = original


def reduce_sweep() -> None:
    print("== sum of 8192 x 8192 fp32: torch time / genesis time per (BLOCK_M, BLOCK_K, warps, per_sm)", flush=True)
    x = torch.randn(8192, 8192, device="cuda")
    original = rd.tile_config
    cases = {
        "last": (
            -1,
            [
                (1, 2048, 4, 4),
                (2, 2048, 8, 4),
                (4, 1024, 8, 4),
                (1, 4096, 8, 4),
                (1, 8192, 16, 4),
                (2, 4096, 8, 4),
                (4, 2048, 8, 4),
                (8, 1024, 8, 4),
                (1, 2048, 8, 4),
                (4, 512, 4, 4),
            ],
        ),
        "first": (
            0,
            [
                (128, 32, 8, 4),
                (128, 32, 8, 8),
                (128, 32, 8, 16),
                (256, 16, 8, 8),
                (256, 32, 8, 8),
                (512, 8, 8, 8),
                (64, 64, 4, 8),
                (128, 16, 4, 16),
                (256, 16, 4, 16),
                (512, 16, 8, 16),
            ],
        ),
        "all": (
            None,
            [
                (1, 2048, 4, 4),
                (1, 4096, 8, 4),
                (1, 8192, 8, 4),
                (1, 4096, 4, 8),
                (1, 2048, 4, 8),
                (1, 4096, 8, 8),
                (1, 8192, 16, 4),
                (1, 1024, 4, 16),
                (1, 2048, 8, 16),
            ],
        ),
    }
    for name, (dim, configs) in cases.items():
        out = torch.empty(8192, device="cuda") if dim is not None else torch.empty((), device="cuda")
        dims = (dim % 2,) if dim is not None else (0, 1)
        for cfg in [None, *configs]:
            rd.tile_config = original if cfg is None else (lambda M, K, rc, kc, _c=cfg: _c)
            t = interleaved(
                {
                    "g": lambda: gk.reduce("sum", buf(x), buf(out), dims),
                    "t": lambda: torch.sum(x, dim=dim, out=out) if dim is not None else torch.sum(x),
                },
                30,
            )
            torch.testing.assert_close(out.double().sum(), x.double().sum(dims).sum(), rtol=1e-4, atol=1e-2)
            label = "default" if cfg is None else str(cfg)
            print(f"  sum {name:<6} {label:<22} ratio {t['t'] / t['g']:.3f}", flush=True)
    rd.tile_config = original


def indexing() -> None:
    print("== indexing on 1e7 elements (bounds flag read back through mapped host memory)", flush=True)
    n = 10**7
    x = torch.randn(n, device="cuda")
    idx = torch.randint(0, n, (n,), device="cuda")
    out = torch.empty(n, device="cuda")
    t = interleaved(
        {"g": lambda: gk.gather(buf(x), 0, buf(idx), buf(out)), "t": lambda: torch.gather(x, 0, idx, out=out)}, 30
    )
    print(f"  gather       ratio {t['t'] / t['g']:.3f}", flush=True)
    rows = x.view(n // 100, 100)
    ridx = torch.randint(0, n // 100, (n // 100,), device="cuda")
    rout = torch.empty(n // 100, 100, device="cuda")
    t = interleaved(
        {
            "g": lambda: gk.index_select(buf(rows), 0, buf(ridx), buf(rout)),
            "t": lambda: torch.index_select(rows, 0, ridx, out=rout),
        },
        30,
    )
    print(f"  index_select ratio {t['t'] / t['g']:.3f}", flush=True)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), flush=True)
    launch_costs()
    indexing()
    reduce_sweep()
    persistent_add()
