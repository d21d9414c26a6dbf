# ruff: noqa: B023  (the lambdas are called before their loop variables change)
"""Tile sweep for a Linear layer's bias gradient: the column sums of a bf16 (rows, N) output gradient into
float32, ``g.sum(0, dtype=float32)``, against torch on the GPU (< 60 s).

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/sweep_bias_grad.py [--reps 30]

The shapes are GPT-2 small's at 8 x 1,024 tokens (the attention's output and the MLP's second projection:
768 columns; the fused q/k/v projection: 2,304; the MLP's first: 3,072) and Llama-3.2-1B's at 2,048
tokens. For each it times the shipped ``reduce.tile_config`` (marked ``*``) and every candidate
(BLOCK_M, BLOCK_K, num_warps, programs per SM) of the pass over the gradient (a split's second pass keeps
the shipped choice), interleaved with torch: ratio = torch_time / genesis_time (> 1: genesis faster), and
the bandwidth of the gradient's one read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genesis_kernels as gk
from bench_kernels import buf, interleaved

rd = sys.modules["genesis_kernels.reduce"]  # the package's ``reduce`` attribute is the function

SHAPES = [(8192, 768), (8192, 2304), (8192, 3072), (2048, 2048), (2048, 8192)]
CANDIDATES = [(256, 16, 4, 4), (256, 16, 4, 2), (128, 32, 4, 4), (128, 32, 4, 2), (256, 32, 8, 2), (512, 16, 8, 2),
              (128, 64, 8, 2), (256, 8, 4, 4), (64, 64, 4, 2), (512, 8, 8, 2)]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    original = rd.tile_config
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    for rows, n in SHAPES:
        g = torch.randn(rows, n, device="cuda").bfloat16()
        out = torch.empty(n, device="cuda")
        want = g.double().sum(0).float()
        results = []
        for cfg in [None, *CANDIDATES]:
            rd.tile_config = (
                original if cfg is None else (lambda M, k, rc, i, _c=cfg: _c if k == rows else original(M, k, rc, i))
            )
            rd.clear_plans()
            ours = lambda: gk.reduce("sum", buf(g), buf(out), (0,))
            theirs = lambda: torch.sum(g, 0, dtype=torch.float32)
            r = interleaved({"g": ours, "t": theirs}, args.reps)
            torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-3)
            ratio = r["t"] / r["g"]
            label = "*" + str(original(n, rows, False, n)) if cfg is None else str(cfg)
            gbs = g.numel() * 2 / (r["g"] * 1e-3) / 1e9
            results.append((ratio, label))
            print(f"  ({rows:>5}, {n:>5}) {label:<22} ratio {ratio:5.2f}   torch {r['t'] * 1e3:6.1f} us   "
                  f"genesis {r['g'] * 1e3:6.1f} us  {gbs:5.0f} GB/s", flush=True)  # fmt: skip
        best = max(results)
        print(f"  BEST ({rows}, {n}): {best[1]} ratio {best[0]:.2f}", flush=True)
    rd.tile_config = original
    rd.clear_plans()


if __name__ == "__main__":
    main()
