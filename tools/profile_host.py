"""The cuda path's host time without a GPU: device memory faked, kernel launches stubbed.

A training step on small models is host-bound (benchmarks/profile_gpt.py shows the GPU idle most
of a GPT-2-small step), and the host side can be measured on any machine: this tool runs the
cuda backend's Python (autograd, ndarray, the launchers' argument handling, the allocator) with
a fake raw allocator, every kernel launch a no-op and every read-back answering "all clear", so
the time it reports is the time Python spends issuing the step. No result is computed: numbers
are meaningless, only the host cost is real.

    python tools/profile_host.py                  # GPT-2 small step: phases and a cProfile
    python tools/profile_host.py --layers 2 --profile 0
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # kernels are never run, but the launchers take this path

ROOT = Path(__file__).resolve().parents[1]


def fake_gpu() -> None:
    """Device 0 backed by a fake raw allocator; launches, uploads and read-backs do nothing."""
    import genesis_storage as gs
    from genesis_storage.allocator import CachingAllocator, FakeRawAllocator, set_allocator
    from genesis_storage.storage import CUDAStorage

    set_allocator(0, CachingAllocator(FakeRawAllocator(capacity=1 << 40)))
    gs.device_count = lambda: 1
    CUDAStorage.copy_from_host = lambda self, src: None

    import genesis_kernels.indexed as indexed
    import genesis_kernels.runtime as rt

    rt.Kernel._interpreted = lambda self, types: lambda grid, stream, args: None
    rt.read_int32 = lambda ptr, count, stream: [0] * count
    rt.scratch = lambda nbytes, stream: 1 << 20
    indexed._raise_if_bad = lambda *args, **kwargs: None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--profile", type=int, default=30, help="cProfile lines to print (0: none)")
    args = parser.parse_args()
    fake_gpu()
    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_gpt import Trainer, load

    script = load("gpt_host_profile", None)
    config = dict(vocab_size=50304, block_size=1024, n_layer=args.layers, n_head=12, n_embd=768)
    trainer = Trainer(script, config, 8)
    lib = trainer.lib
    rng = np.random.default_rng(0)
    x, y = (rng.integers(0, config["vocab_size"], (8, config["block_size"])) for _ in range(2))
    for _ in range(2):  # first steps build plans and caches
        trainer.step(x, y)
    phases: dict[str, list[float]] = {}
    for _ in range(args.steps):
        marks = [time.perf_counter()]
        xs, ys = lib.tensor(x, device="cuda"), lib.tensor(y, device="cuda")
        marks.append(time.perf_counter())
        with lib.autocast("cuda", dtype=lib.bfloat16):
            _, loss = trainer.model(xs, ys)
        marks.append(time.perf_counter())
        trainer.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        marks.append(time.perf_counter())
        script.nn.utils.clip_grad_norm_(trainer.model.parameters(), 1.0)
        marks.append(time.perf_counter())
        trainer.optimizer.step()
        marks.append(time.perf_counter())
        for name, a, b in zip(("upload", "forward", "backward", "clip", "optimizer"), marks, marks[1:]):
            phases.setdefault(name, []).append((b - a) * 1e3)
    total = 0.0
    print(f"GPT {args.layers} x 768, 8 x 1024 tokens, bf16 autocast: host ms per step (median of {args.steps})")
    for name, times in phases.items():
        median = sorted(times)[len(times) // 2]
        total += median
        print(f"  {name:10s} {median:8.2f}")
    print(f"  {'total':10s} {total:8.2f}")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        trainer.step(x, y)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
