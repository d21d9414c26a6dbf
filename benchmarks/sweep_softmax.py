# ruff: noqa: B023  (the lambdas are called before their loop variables change)
"""Softmax forward: where the one-pass kernel (the row held in registers) should stop and the two-pass
online kernel take over, and with how many warps; against torch on the GPU (about a minute).

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/sweep_softmax.py [--reps 15]

Rows up to ``softmax._ONE_PASS_MAX`` elements are read once and written once; longer rows are read
twice (the online max / sum, then the result) and pay two exponentials per element in the first pass.
For each shape (fp32 and bf16, rows from 1,024 to 32,768 elements) every candidate (one-pass limit,
warps for tiles over 1,024 elements) is timed against ``torch.softmax(out=)``: CUDA-event medians,
interleaved in one process; ratio = torch_time / genesis_time (> 1: genesis faster). A candidate whose
result differs from a float32 torch reference by more than 1e-2 (relative norm) is marked ERR. The
shipped choice is marked ``*``. Not a test; needs a CUDA device.
"""

from __future__ import annotations

import argparse
import sys

import torch

import genesis_kernels as gk
from bench_kernels import buf, interleaved

softmax_module = sys.modules["genesis_kernels.softmax"]
SHAPES = [
    ((65536, 1024), torch.bfloat16),
    ((32768, 2048), torch.float32),
    ((16384, 4096), torch.float32),
    ((8192, 8192), torch.float32),
    ((8192, 8192), torch.bfloat16),
    ((4096, 16384), torch.float32),
    ((2048, 32768), torch.bfloat16),
]
# (one-pass limit, warps for tiles over 1,024 elements); the shipped values first.
CANDIDATES = [(4096, 8), (8192, 8), (8192, 16), (16384, 8), (16384, 16), (32768, 16), (32768, 32)]


def use(limit: int, warps: int, build):
    """Make the next softmax launches compile with this one-pass limit and warp count."""
    softmax_module._ONE_PASS_MAX = limit
    softmax_module._SOFTMAX.cache.clear()

    def forced(key, types, consts, aligned=(), num_warps=4, num_stages=3):
        return build(
            key, types, consts, aligned, num_warps=num_warps if num_warps <= 4 else warps, num_stages=num_stages
        )

    softmax_module._SOFTMAX.build = forced


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sweep_softmax.py needs a CUDA device")
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}")
    shipped = (softmax_module._ONE_PASS_MAX, 8)
    build = softmax_module._SOFTMAX.build
    print(f"{'shape':<16} {'dtype':<9} " + " ".join(f"{f'{lim}/{w}':>11}" for lim, w in CANDIDATES))
    try:
        for shape, dtype in SHAPES:
            x = torch.randn(shape, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            reference = torch.softmax(x.float(), -1)
            cells = []
            for limit, warps in CANDIDATES:
                use(limit, warps, build)
                gk.softmax(buf(x), buf(y))
                err = float((y.float() - reference).norm() / reference.norm())
                t = interleaved(
                    {"genesis": lambda: gk.softmax(buf(x), buf(y)), "torch": lambda: torch.softmax(x, -1, out=y)},
                    args.reps,
                )
                mark = "*" if (limit, warps) == shipped else " "
                cells.append(f"{mark}{t['torch'] / t['genesis']:5.2f}" + (" ERR" if err > 1e-2 else "    "))
            print(f"{shape!s:<16} {str(dtype)[6:]:<9} " + " ".join(f"{c:>11}" for c in cells), flush=True)
    finally:
        softmax_module._SOFTMAX.build = build
        softmax_module._ONE_PASS_MAX = shipped[0]
        softmax_module._SOFTMAX.cache.clear()


if __name__ == "__main__":
    main()
