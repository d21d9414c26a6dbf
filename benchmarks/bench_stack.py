"""The full stack's cost against torch's, on one GPU, in one process, interleaved.

1. A small op: add of 1,024 float32 elements on cuda, in a tight loop, with
   requires_grad False and True (host wall time per op: what launch overhead costs).
2. ``empty`` of 1 MiB on cuda and its release, through the full stack (genesis.empty, torch.empty).
3. A 4-layer MLP (width 1024, batch 64, float32): forward + backward wall time.

Medians over rounds; each round times both frameworks back to back.
    python3 benchmarks/bench_stack.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import genesis
import genesis.nn as gnn


def _per_call(fn, sync, iters: int) -> float:
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) / iters


def _interleaved(cases: dict, sync: dict, iters: int, rounds: int) -> dict:
    for name, fn in cases.items():  # warm-up: compilation, caches
        _per_call(fn, sync[name], max(3, iters // 10))
    samples = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            samples[name].append(_per_call(fn, sync[name], iters))
    return {name: statistics.median(v) for name, v in samples.items()}


def bench_small_add(quick: bool) -> None:
    iters, rounds = (200, 5) if quick else (2000, 11)
    x = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    print("== small op: a + b, 1,024 float32 elements (host wall time per op, us) ==")
    print(f"{'requires_grad':>14} {'genesis':>9} {'torch':>9} {'ratio':>7}")
    for requires_grad in (False, True):
        ga = genesis.tensor(x, device="cuda", requires_grad=requires_grad)
        gb = genesis.tensor(x, device="cuda", requires_grad=requires_grad)
        ta = torch.tensor(x, device="cuda", requires_grad=requires_grad)
        tb = torch.tensor(x, device="cuda", requires_grad=requires_grad)
        result = _interleaved(
            {"genesis": lambda ga=ga, gb=gb: ga + gb, "torch": lambda ta=ta, tb=tb: ta + tb},
            {"genesis": genesis.cuda.synchronize, "torch": torch.cuda.synchronize},
            iters,
            rounds,
        )
        g, t = result["genesis"] * 1e6, result["torch"] * 1e6
        print(f"{requires_grad!s:>14} {g:9.2f} {t:9.2f} {g / t:7.2f}")


def bench_empty(quick: bool) -> None:
    iters, rounds = (500, 5) if quick else (5000, 11)
    n = (1 << 20) // 4  # 1 MiB of float32; the tensor dies at once, so its block goes back to the cache
    result = _interleaved(
        {
            "genesis": lambda: genesis.empty(n, device="cuda"),
            "torch": lambda: torch.empty(n, device="cuda"),
        },
        {"genesis": genesis.cuda.synchronize, "torch": torch.cuda.synchronize},
        iters,
        rounds,
    )
    g, t = result["genesis"] * 1e6, result["torch"] * 1e6
    print("== empty(1 MiB, device='cuda') + free, full stack (host wall time per call, us) ==")
    print(f"genesis {g:.2f}   torch {t:.2f}   ratio {g / t:.2f}")


def bench_mlp(quick: bool) -> None:
    iters, rounds = (10, 3) if quick else (50, 7)
    width, batch, depth = 1024, 64, 4
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(
        *[m for _ in range(depth) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]
    ).cuda()
    gmodel = gnn.Sequential(*[m for _ in range(depth) for m in (gnn.Linear(width, width), gnn.ReLU())])
    with genesis.no_grad():
        for gp, tp in zip(gmodel.parameters(), tmodel.parameters()):
            gp.copy_(genesis.tensor(tp.detach().cpu().numpy()))
    gmodel.to("cuda")
    x = np.random.default_rng(1).standard_normal((batch, width)).astype(np.float32)
    gx, tx = genesis.tensor(x, device="cuda"), torch.tensor(x, device="cuda")

    def g_step():
        gmodel.zero_grad()
        gmodel(gx).sum().backward()

    def t_step():
        tmodel.zero_grad()
        tmodel(tx).sum().backward()

    result = _interleaved(
        {"genesis": g_step, "torch": t_step},
        {"genesis": genesis.cuda.synchronize, "torch": torch.cuda.synchronize},
        iters,
        rounds,
    )
    g, t = result["genesis"] * 1e3, result["torch"] * 1e3
    print(f"== MLP forward + backward ({depth} x Linear({width}, {width}) + ReLU, batch {batch}, float32; ms) ==")
    print(f"genesis {g:.3f}   torch {t:.3f}   ratio {g / t:.2f}")
    # Same function? Compare the first layer's weight gradient.
    gw = gmodel[0].weight.grad.cpu().numpy()
    tw = tmodel[0].weight.grad.cpu().numpy()
    rel = np.linalg.norm(gw - tw) / np.linalg.norm(tw)
    print(f"weight-gradient relative difference genesis vs torch: {rel:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    bench_small_add(args.quick)
    bench_empty(args.quick)
    bench_mlp(args.quick)


if __name__ == "__main__":
    main()
