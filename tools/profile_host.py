"""The cuda path's host time without a GPU: device memory faked, kernel launches stubbed.

A training step on small models is host-bound (benchmarks/profile_gpt.py shows the GPU idle most
of a GPT-2-small step), and the host side can be measured on any machine: this tool runs the
cuda backend's Python (autograd, ndarray, the launchers' argument handling, the allocator) with
a fake raw allocator, every kernel launch a no-op and every read-back answering "all clear", so
the time it reports is the time Python spends issuing the step. No result is computed: numbers
are meaningless, only the host cost is real.

    python tools/profile_host.py                  # GPT-2 small step: phases and a cProfile
    python tools/profile_host.py --layers 2 --profile 0
    python tools/profile_host.py --small-ops      # per-op host microseconds (a + b, empty, views, ...)
    python tools/profile_host.py --small-ops --cases add --profile 20
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections.abc import Callable
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


def _small_cases() -> dict[str, Callable[[], object]]:
    """name -> one op on the fake GPU, on 1,024-element fp32 tensors (1 MiB for empty)."""
    import genesis

    a, b = genesis.randn(1024, device="cuda"), genesis.randn(1024, device="cuda")
    ga = genesis.randn(1024, device="cuda", requires_grad=True)
    gb = genesis.randn(1024, device="cuda", requires_grad=True)
    m = genesis.randn(32, 32, device="cuda")
    h = genesis.randn(1024, device="cuda", dtype=genesis.bfloat16)
    na, nb = a.data, b.data

    def autocast_add() -> object:
        with genesis.autocast("cuda", dtype=genesis.bfloat16):
            return a + b

    return {
        "empty": lambda: genesis.empty(1 << 18, device="cuda"),
        "add": lambda: a + b,
        "add_grad": lambda: ga + gb,
        "add_scalar": lambda: a + 2.0,
        "mul": lambda: a * b,
        "add_bf16_f32": lambda: h + a,
        "ndarray_add": lambda: na + nb,
        "relu": lambda: a.relu(),
        "exp": lambda: a.exp(),
        "sum": lambda: a.sum(),
        "view": lambda: m.view(1024),
        "transpose": lambda: m.t(),
        "shape": lambda: m.shape,
        "size": lambda: m.size(0),
        "autocast_add": autocast_add,
    }


def small_ops(names: list[str] | None, number: int, repeat: int, profile: int) -> None:
    """Host microseconds per op (best of ``repeat`` runs of ``number`` calls) and Python calls per op."""
    cases = _small_cases()
    names = names or list(cases)
    clock = time.perf_counter
    print(f"fake GPU: host us per op, best of {repeat} x {number} calls")
    for name in names:
        fn = cases[name]
        for _ in range(number // 10 + 3):
            fn()
        best = float("inf")
        for _ in range(repeat):
            start = clock()
            for _ in range(number):
                fn()
            best = min(best, clock() - start)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(200):
            fn()
        profiler.disable()
        stats = pstats.Stats(profiler)
        calls = sum(stat[1] for stat in stats.stats.values()) / 200 - 1  # type: ignore[attr-defined]
        print(f"  {name:14s} {best / number * 1e6:8.2f} us {calls:6.0f} calls")
        if profile:
            stats.sort_stats("tottime").print_stats(profile)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small-ops", action="store_true", help="per-op host time of small ops instead of a step")
    parser.add_argument("--cases", nargs="+", default=None, help="with --small-ops: which cases (default all)")
    parser.add_argument("--number", type=int, default=20000, help="with --small-ops: calls per timing run")
    parser.add_argument("--repeat", type=int, default=7, help="with --small-ops: timing runs (best reported)")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--profile", type=int, default=30, help="cProfile lines to print (0: none)")
    args = parser.parse_args()
    fake_gpu()
    if args.small_ops:
        small_ops(args.cases, args.number, args.repeat, args.profile if "--profile" in sys.argv else 0)
        return
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
