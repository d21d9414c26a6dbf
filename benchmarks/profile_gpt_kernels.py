"""Where a GPT training step's GPU time goes, kernel by kernel, for each variant of benchmarks/bench_gpt.py.

torch.profiler (CUPTI, process-wide, so it sees genesis's Triton kernels as well as torch's) records one
step after warm-up; the table lists each variant's busy time and its largest kernels, so that two variants
(genesis eager and genesis.compile, or genesis and torch) can be compared kernel family by kernel family.

    python3 benchmarks/profile_gpt_kernels.py                                   # genesis, genesis-compile, torch
    python3 benchmarks/profile_gpt_kernels.py --variants genesis torch-compile --top 25
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from torch.profiler import ProfilerActivity, profile

from bench_gpt import TO_TORCH, CompiledTrainer, Trainer, load

CONFIG = dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768)
MAKERS = {
    "genesis": lambda: Trainer(load("gpt_genesis", None), CONFIG, 8),
    "genesis-compile": lambda: CompiledTrainer(load("gpt_gc", None), CONFIG, 8, None),
    "genesis-compile-ro": lambda: CompiledTrainer(load("gpt_gcro", None), CONFIG, 8, "reduce-overhead"),
    "torch": lambda: Trainer(load("gpt_torch", TO_TORCH), CONFIG, 8),
    "torch-compile": lambda: CompiledTrainer(load("gpt_tc", TO_TORCH), CONFIG, 8, None),
    "torch-compile-ro": lambda: CompiledTrainer(load("gpt_tcro", TO_TORCH), CONFIG, 8, "reduce-overhead"),
}


def profiled(step: Callable[[], None]) -> tuple[float, list]:
    """``step()`` (which ends synchronised) under torch.profiler: its wall milliseconds and the kernels that
    ran, one entry per kernel name (``device_time_total`` in microseconds, ``count``, ``key``)."""
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
    wall = (time.perf_counter() - start) * 1e3
    return wall, [e for e in prof.key_averages() if e.device_time_total > 0]


def print_largest(kernels: list, top: int, width: int = 100) -> None:
    for e in sorted(kernels, key=lambda e: -e.device_time_total)[:top]:
        print(f"    {e.device_time_total / 1e3:7.2f} ms  x{e.count:<4d} {e.key[:width]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=["genesis", "genesis-compile", "torch"])
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x, y = (rng.integers(0, CONFIG["vocab_size"], size=(8, CONFIG["block_size"])) for _ in range(2))
    for name in args.variants:
        trainer = MAKERS[name]()
        for _ in range(4):  # warm-up: compiles, captures, records (reduce-overhead: the third call)
            trainer.step(x, y)
        trainer.sync()
        wall, kernels = profiled(lambda t=trainer: (t.step(x, y), t.sync()))
        busy = sum(e.device_time_total for e in kernels) / 1e3
        launches = sum(e.count for e in kernels)
        print(f"{name}: GPU busy {busy:.2f} ms over {launches} kernels (profiled wall {wall:.1f} ms)")
        print_largest(kernels, args.top)
        del trainer


if __name__ == "__main__":
    main()
