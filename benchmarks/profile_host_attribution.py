"""Where the host time of an eager GPT-2 training step goes, layer by layer, on the GPU machine.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/profile_host_attribution.py
    ... profile_host_attribution.py --quick            # a small model, for a smoke run
    ... profile_host_attribution.py --py-spy py-spy    # also sample with py-spy --native (carried wheel)

The step is bench_gpt.py's (examples/train_gpt.py's GPT, bf16 autocast, AdamW, clip_grad_norm_).
Printed, for one steady-state step:

1. wall time of a step for genesis and torch (interleaved, medians), and the host issue time:
   how long ``step()`` takes to return, before the closing synchronisation;
2. the garbage collector: collections per step by generation and the time they took;
3. every CUDA driver call genesis makes from Python (cuda-python and the kernels runtime's ctypes
   libcuda), counted and timed, by name;
4. a cProfile of the step with each function's own time charged to one layer (nn Module, autocast,
   autograd Tensor / Function / engine, NDArray, dispatch registry, backends, kernels' launchers,
   Triton's C launcher, the allocator, storage, the driver bindings, builtins); cProfile slows
   Python calls down, so its figures are shares, checked against the unprofiled host time;
5. with ``--py-spy``: py-spy samples the process 200 times a second with native frames, and each sample is
   charged to the outermost libcuda entry point on its stack (or libc / the garbage collector /
   Triton's launcher), else to the layer of its innermost Python frame. Sampling slows the program
   less than cProfile does, and its shares are the ones to trust.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpt import TO_TORCH, Trainer, load

# Python files -> layer. The first matching fragment wins (most specific first).
LAYERS: list[tuple[str, str]] = [
    ("genesis_autograd/autocast", "autocast"),
    ("genesis/amp/", "autocast"),
    ("genesis/nn/module", "nn Module.__call__ / hooks"),
    ("genesis/nn/", "nn modules / functional"),
    ("genesis/optim/", "optimizer"),
    ("genesis/", "genesis top level"),
    ("genesis_autograd/engine", "autograd engine (backward walk)"),
    ("genesis_autograd/function", "autograd Function (record / apply)"),
    ("genesis_autograd/functions/", "autograd op Functions"),
    ("genesis_autograd/", "autograd Tensor"),
    ("genesis_ndarray/registry", "dispatch registry"),
    ("genesis_ndarray/backends/cuda", "cuda backend"),
    ("genesis_ndarray/", "NDArray"),
    ("genesis_kernels/runtime", "kernels runtime / launch"),
    ("genesis_kernels/launch_abi", "kernels runtime / launch"),
    ("genesis_kernels/", "kernel launchers (args, grids, layouts)"),
    ("genesis_storage/allocator", "allocator"),
    ("genesis_storage/", "storage / streams"),
    ("triton/", "Triton (Python)"),
    ("cuda/bindings", "cuda-python (Python)"),
    ("numpy/", "numpy"),
    ("ctypes/", "ctypes"),
]


def layer_of(filename: str) -> str:
    for fragment, layer in LAYERS:
        if fragment in filename:
            return layer
    return "other Python"


# ------------------------------------------------------------------ 1. wall and issue time
def timed_steps(trainers: dict[str, Trainer], batches: list, warmup: int) -> dict[str, dict[str, float]]:
    wall: dict[str, list[float]] = defaultdict(list)
    issue: dict[str, list[float]] = defaultdict(list)
    for i, (x, y) in enumerate(batches):
        for name, trainer in trainers.items():
            trainer.sync()
            start = time.perf_counter()
            trainer.step(x, y)
            issued = time.perf_counter()
            trainer.sync()
            end = time.perf_counter()
            if i >= warmup:
                wall[name].append(end - start)
                issue[name].append(issued - start)
    return {
        name: {"wall_ms": 1e3 * statistics.median(wall[name]), "issue_ms": 1e3 * statistics.median(issue[name])}
        for name in trainers
    }


# ------------------------------------------------------------------ 2. garbage collector
def gc_per_step(trainer: Trainer, batches: list) -> tuple[Counter, float, int]:
    collections: Counter[int] = Counter()
    spent = 0.0
    started: list[float] = []

    def callback(phase: str, info: dict) -> None:
        nonlocal spent
        if phase == "start":
            started.append(time.perf_counter())
        else:
            spent += time.perf_counter() - started.pop()
            collections[info["generation"]] += 1

    gc.callbacks.append(callback)
    try:
        for x, y in batches:
            trainer.step(x, y)
        trainer.sync()
    finally:
        gc.callbacks.remove(callback)
    return collections, spent, len(gc.get_objects())


# ------------------------------------------------------------------ 3. driver calls
class TimedBinding:
    """Wraps a driver binding (the cuda-python module or the ctypes libcuda): each ``cu*`` call is
    counted and timed under its name before it returns."""

    def __init__(self, inner: Any, tag: str, calls: Counter, seconds: Counter) -> None:
        self._inner, self._tag, self._calls, self._seconds = inner, tag, calls, seconds
        self._wrapped: dict[str, Callable] = {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not (name.startswith("cu") and callable(value)):
            return value
        if name not in self._wrapped:
            key = f"{name.removesuffix('_v2')} [{self._tag}]"
            calls, seconds = self._calls, self._seconds

            def call(*args: Any) -> Any:
                start = time.perf_counter()
                try:
                    return value(*args)
                finally:
                    seconds[key] += time.perf_counter() - start
                    calls[key] += 1

            self._wrapped[name] = call
        return self._wrapped[name]


def driver_calls(trainer: Trainer, batches: list) -> tuple[Counter, Counter]:
    import genesis_kernels.runtime as rt
    from genesis_storage import _driver

    calls: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    real_driver, real_lib = _driver.driver(), rt.cuda().lib
    _driver._driver = TimedBinding(real_driver, "cuda-python", calls, seconds)
    rt.cuda().lib = TimedBinding(real_lib, "ctypes", calls, seconds)
    try:
        for x, y in batches:
            trainer.step(x, y)
        trainer.sync()
    finally:
        _driver._driver = real_driver
        rt.cuda().lib = real_lib
    return calls, seconds


# ------------------------------------------------------------------ 4. cProfile by layer
def cprofile_layers(trainer: Trainer, batches: list) -> tuple[dict[str, float], dict[str, int], float, pstats.Stats]:
    profiler = cProfile.Profile()
    trainer.sync()
    start = time.perf_counter()
    profiler.enable()
    for x, y in batches:
        trainer.step(x, y)
    trainer.sync()
    profiler.disable()
    elapsed = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    own: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for (filename, _line, name), (_cc, ncalls, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if filename == "~":  # a builtin: name it by what it is
            if "synchronize" in name or "Synchronize" in name:
                layer = "synchronise (waiting for the GPU)"
            elif "launch" in name:
                layer = "Triton C launcher (launch + driver)"
            elif name.startswith("<built-in method cu") or "cuda.bindings" in name:
                layer = "cuda-python driver calls"
            else:
                layer = (
                    "builtins ("
                    + name.removeprefix("<built-in method ").removeprefix("<method ").split(" ")[0].rstrip(">")
                    + ")"
                )
                layer = layer if tottime > 0.002 * elapsed else "builtins (rest)"
        else:
            layer = layer_of(filename)
        own[layer] += tottime
        calls[layer] += ncalls
    return own, calls, elapsed, stats


# ------------------------------------------------------------------ 5. py-spy, native
def py_spy_record(py_spy: str, trainer: Trainer, batches: list, out: Path) -> Path | None:
    raw = out / "py_spy_raw.txt"
    command = [py_spy, "record", "--pid", str(os.getpid()), "--native", "--idle", "--rate", str(RATE),
               "--format", "raw", "--output", str(raw)]  # fmt: skip
    spy = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(2.0)  # let it attach
    for x, y in batches:
        trainer.step(x, y)
    trainer.sync()
    spy.send_signal(signal.SIGINT)
    try:
        text, _ = spy.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        spy.kill()
        text, _ = spy.communicate()
    print(text.decode(errors="replace")[-2000:])
    return raw if raw.exists() else None


RATE = 200  # samples per second: py-spy --native falls behind at 1 kHz on the GPU machine


def charge_sample(frames: list[str]) -> str:
    """One collapsed stack (root first) -> the layer it is charged to."""
    for frame in frames:  # outermost native entry point that matters
        if "libcuda" in frame:
            return "driver: " + frame.split(" ")[0]
        if "__triton_launcher" in frame or "cuda_utils" in frame or "triton_launcher" in frame:
            return "Triton C launcher (own code)"
    leaf = frames[-1]
    if "gc_collect" in leaf or "collect_with_callback" in leaf or "gc_collect_main" in " ".join(frames[-6:]):
        return "garbage collector"
    if any(k in leaf for k in ("malloc", "free", "mmap", "munmap", "memcpy", "memset")) and ".py" not in leaf:
        return "libc malloc / free / memcpy"
    for frame in reversed(frames):
        if ".py:" in frame or ".py)" in frame:
            filename = frame[frame.find("(") + 1 :]
            if "threading.py" in filename or "subprocess.py" in filename:
                return "idle (profiler's thread)"
            return layer_of(filename)
    return "native, no Python frame"


def summarise_py_spy(raw: Path, steps: int) -> list[tuple[str, float]]:
    totals: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        frames = [f for f in frames if not f.startswith(("thread ", "process "))]
        if not frames:
            continue
        if not any("profile_host_attribution" in f or "bench_gpt" in f for f in frames):
            continue  # other threads (py-spy's own attachment, watchdogs)
        if any("py_spy_record" in f for f in frames) and not any(".step" in f or "step (" in f for f in frames):
            totals["profiling harness"] += int(count)
            continue
        totals[charge_sample(frames)] += int(count)
    return [(layer, count * 1e3 / RATE / steps) for layer, count in totals.most_common()]


# ------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small model (smoke run)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--py-spy", default="", help="path of a py-spy binary: also sample with native frames")
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="where py-spy's raw samples go")
    parser.add_argument("--top", type=int, default=30, help="cProfile functions listed by own time")
    args = parser.parse_args()
    if args.quick:
        config, batch = dict(vocab_size=8192, block_size=256, n_layer=4, n_head=8, n_embd=512), 8
    else:
        config, batch = dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768), 8
    rng = np.random.default_rng(0)

    def batches(n: int) -> list:
        shape = (batch, config["block_size"])
        return [(rng.integers(0, config["vocab_size"], size=shape), rng.integers(0, config["vocab_size"], size=shape))
                for _ in range(n)]  # fmt: skip

    genesis_trainer = Trainer(load("gpt_genesis", None), config, batch)
    torch_trainer = Trainer(load("gpt_torch", TO_TORCH), config, batch)
    n = args.steps
    print(f"GPT {config}, batch {batch}; {n} steps per measurement after {args.warmup} warm-up steps\n")

    times = timed_steps({"genesis": genesis_trainer, "torch": torch_trainer}, batches(args.warmup + n), args.warmup)
    print("1. step time (median)         wall ms   host issue ms")
    for name, t in times.items():
        print(f"   {name:26s} {t['wall_ms']:8.2f}   {t['issue_ms']:8.2f}")
    print(f"   ratio torch / genesis wall: {times['torch']['wall_ms'] / times['genesis']['wall_ms']:.3f}\n")

    collections, spent, objects = gc_per_step(genesis_trainer, batches(n))
    print(f"2. garbage collector, genesis: {dict(sorted(collections.items()))} collections in {n} steps "
          f"(generation: count), {1e3 * spent / n:.2f} ms per step; {objects:,} tracked objects")  # fmt: skip
    # The control first: genesis alone (not interleaved with torch's steps, which leave the CPU caches
    # cold) with the collector on, then the same with it off.
    alone = timed_steps({"genesis": genesis_trainer}, batches(2 + n), 2)["genesis"]
    print(f"   genesis alone, gc enabled: wall {alone['wall_ms']:.2f} ms, issue {alone['issue_ms']:.2f} ms")
    gc.collect()
    gc.disable()
    no_gc = timed_steps({"genesis": genesis_trainer}, batches(2 + n), 2)["genesis"]
    gc.enable()
    print(f"   genesis alone, gc disabled: wall {no_gc['wall_ms']:.2f} ms, issue {no_gc['issue_ms']:.2f} ms\n")

    calls, seconds = driver_calls(genesis_trainer, batches(n))
    print("3. driver calls from Python per step (genesis; each launch through Triton's C launcher adds")
    print("   cuCtxGetCurrent + cuLaunchKernelEx, not seen here)")
    print(f"   {'call':44s} {'calls':>8s} {'ms':>8s} {'us/call':>8s}")
    for key, count in calls.most_common():
        print(f"   {key:44s} {count / n:8.1f} {1e3 * seconds[key] / n:8.3f} {1e6 * seconds[key] / count:8.2f}")
    print(f"   total {sum(calls.values()) / n:.0f} calls, {1e3 * sum(seconds.values()) / n:.2f} ms per step\n")

    own, ncalls, elapsed, stats = cprofile_layers(genesis_trainer, batches(n))
    total_own = sum(own.values())
    print(f"4. cProfile, genesis: {1e3 * elapsed / n:.1f} ms per profiled step "
          f"(unprofiled {times['genesis']['wall_ms']:.1f}); own time by layer")  # fmt: skip
    print(f"   {'layer':44s} {'ms/step':>8s} {'share':>7s} {'calls/step':>11s}")
    for layer, t in sorted(own.items(), key=lambda kv: -kv[1]):
        print(f"   {layer:44s} {1e3 * t / n:8.2f} {100 * t / total_own:6.1f}% {ncalls[layer] / n:11.0f}")
    print(f"   Python-level calls per step: {sum(ncalls.values()) / n:,.0f}\n")
    stats.sort_stats("tottime").print_stats(args.top)

    if args.py_spy:
        raw = py_spy_record(args.py_spy, genesis_trainer, batches(n), Path(args.out))
        if raw is not None:
            print(f"5. py-spy --native, genesis, ms per step ({n} steps, {RATE} samples/s)")
            for layer, ms in summarise_py_spy(raw, n):
                print(f"   {layer:44s} {ms:8.2f}")


if __name__ == "__main__":
    main()
