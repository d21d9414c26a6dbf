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
    python tools/profile_host.py --small-ops --driver-calls   # per-op CUDA driver calls, by name
    python tools/profile_host.py --small-ops --real-gpu --driver-calls   # the same on a real GPU

With ``--driver-calls`` the fake GPU hides no driver call: instead of a fake raw allocator and stubbed
runtime, the real code paths run (CudaRawAllocator, the kernels runtime's non-interpreted branches)
over a counting stand-in for the CUDA driver (cuda-python's ``cuda.bindings.driver`` as
genesis_storage binds it, and the ctypes ``libcuda`` the kernels runtime loads), so each op's calls
are listed by name. Triton's C launcher is still stubbed; a launch of it is listed as the two driver
calls it makes (``cuCtxGetCurrent`` in its ensureCudaContext, then ``cuLaunchKernelEx``), marked
``[C]``. Timings in this mode include the counting and mean nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

if "--real-gpu" not in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # kernels are never run, but the launchers take this path

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ driver-call counting
DRIVER_CALLS: Counter[str] = Counter()  # "cuName [binding]" -> calls, filled in --driver-calls mode


class _AnyEnum:
    """cuda-python's enum classes (CUstreamCaptureMode, CUevent_flags, ...): every member reads as 0."""

    def __getattr__(self, name: str) -> int:
        return 0


class CountingDriver:
    """Stands in for ``cuda.bindings.driver``: each ``cu*`` call is counted and answers success
    with plausible values (a bump pointer for cuMemAlloc, one device, ...); types are plain ints."""

    def __init__(self) -> None:
        self._next = 1 << 40
        results: dict[str, Callable[..., tuple]] = {
            "cuDeviceGetCount": lambda: (0, 1),
            "cuDeviceGet": lambda i: (0, i),
            "cuDevicePrimaryCtxRetain": lambda dev: (0, 0xC0 + dev),
            "cuCtxGetCurrent": lambda: (0, 0xC0),
            "cuThreadExchangeStreamCaptureMode": lambda mode: (0, 0),
            "cuMemAlloc": self._malloc,
            "cuEventCreate": lambda flags: (0, object()),
            "cuCtxGetStreamPriorityRange": lambda: (0, 0, -5),
            "cuStreamCreateWithPriority": lambda flags, prio: (0, self._malloc(512)[1]),
            "cuMemGetInfo": lambda: (0, 1 << 40, 1 << 40),
            "cuGetErrorName": lambda err: (0, b"CUDA_ERROR_FAKE"),
        }
        self._results = results

    def _malloc(self, nbytes: int) -> tuple[int, int]:
        addr = self._next
        self._next += (nbytes + (2 << 20) - 1) // (2 << 20) * (2 << 20) + (2 << 20)
        return 0, addr

    def __getattr__(self, name: str) -> Any:
        if name.startswith("cu"):
            result = self._results.get(name, lambda *args: (0,))
            key = f"{name} [cuda-python]"

            def call(*args: Any) -> tuple:
                DRIVER_CALLS[key] += 1
                return result(*args)

            return call
        if name in ("CUdeviceptr", "CUstream", "CUcontext", "CUevent"):
            return int
        if name.startswith("CU_"):
            return 1
        return _AnyEnum()


class CountingLib:
    """Stands in for the ctypes ``libcuda.so.1`` of genesis_kernels.runtime: calls are counted, output
    arguments filled (a context, device pointers, real host memory for pinned / mapped blocks)."""

    def __init__(self) -> None:
        self._next = 1 << 44
        self._host: list[Any] = []  # keeps the "pinned" host blocks alive

    def __getattr__(self, name: str) -> Any:
        key = f"{name.removesuffix('_v2')} [ctypes]"

        def call(*args: Any) -> int:
            DRIVER_CALLS[key] += 1
            if name == "cuCtxGetCurrent":
                args[0]._obj.value = 0xC0
            elif name == "cuMemAlloc_v2":
                args[0]._obj.value, self._next = self._next, self._next + (args[1].value + 4095) // 4096 * 4096
            elif name == "cuMemHostAlloc":
                import numpy as np

                block = np.zeros(args[1].value // 8 + 1, dtype=np.int64)
                self._host.append(block)
                args[0]._obj.value = block.ctypes.data
            elif name == "cuMemHostGetDevicePointer_v2":
                args[0]._obj.value = args[1].value
            elif name == "cuDeviceGetAttribute":
                args[0]._obj.value = 132
            return 0

        call.restype = None  # type: ignore[attr-defined]  # (_Cuda sets it)
        return call


def _counted_launch(*unused: Any) -> Callable[[tuple[int, int, int], int, tuple], None]:
    """A stubbed Triton launch, counted as the driver calls of Triton's C launcher. A new function
    per kernel: launchers keep attributes of their own on it."""

    def launch(grid: tuple[int, int, int], stream: int, args: tuple) -> None:
        if grid[0] * grid[1] * grid[2]:
            DRIVER_CALLS["cuCtxGetCurrent [C]"] += 1
            DRIVER_CALLS["cuLaunchKernelEx [C]"] += 1

    return launch


class _Counted:
    """Wraps a real driver binding (the cuda-python module, or the ctypes libcuda): calls are
    counted under ``tag``, then made."""

    def __init__(self, inner: Any, tag: str) -> None:
        self._inner, self._tag = inner, tag

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not (name.startswith("cu") and callable(value)):
            return value
        key = f"{name.removesuffix('_v2')} [{self._tag}]"

        def call(*args: Any) -> Any:
            DRIVER_CALLS[key] += 1
            return value(*args)

        return call


def count_real_driver_calls() -> None:
    """On a real GPU: count the Python-level driver calls (cuda-python and the kernels runtime's
    ctypes libcuda). Triton's C launcher cannot be seen from here: each launch adds cuCtxGetCurrent
    and cuLaunchKernelEx."""
    import genesis_kernels.runtime as rt
    from genesis_storage import _driver

    _driver._driver = _Counted(_driver.driver(), "cuda-python")
    rt.cuda().lib = _Counted(rt.cuda().lib, "ctypes")  # type: ignore[assignment]


def fake_gpu(driver_calls: bool = False) -> None:
    """Device 0 backed by a fake raw allocator; launches, uploads and read-backs do nothing.

    ``driver_calls``: device 0 is the real CudaRawAllocator over a counting stand-in for the driver,
    and the kernels runtime takes its GPU branches over a counting ctypes libcuda (see the docstring)."""
    import genesis_kernels.indexed as indexed
    import genesis_kernels.runtime as rt
    import genesis_storage as gs
    from genesis_storage.allocator import CachingAllocator, FakeRawAllocator, set_allocator
    from genesis_storage.storage import CUDAStorage

    CUDAStorage.copy_from_host = lambda self, src: None
    if driver_calls:
        from genesis_storage import _driver
        from genesis_storage.allocator import CudaRawAllocator

        _driver._driver = CountingDriver()
        set_allocator(0, CachingAllocator(CudaRawAllocator(0)))
        cuda = rt._Cuda.__new__(rt._Cuda)
        cuda.lib = CountingLib()
        rt._cuda = cuda
        rt.INTERPRET = False
        rt.Kernel._compiled = _counted_launch  # type: ignore[method-assign]
        return
    set_allocator(0, CachingAllocator(FakeRawAllocator(capacity=1 << 40)))
    gs.device_count = lambda: 1
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
    big = genesis.randn(1 << 20, device="cuda")  # a split reduction: partial sums in the runtime's scratch
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
        "sum_big": lambda: big.sum(),
        "view": lambda: m.view(1024),
        "transpose": lambda: m.t(),
        "shape": lambda: m.shape,
        "size": lambda: m.size(0),
        "autocast_add": autocast_add,
    }


def small_ops(names: list[str] | None, number: int, repeat: int, profile: int, driver_calls: bool = False) -> None:
    """Host microseconds per op (best of ``repeat`` runs of ``number`` calls) and Python calls per op;
    with ``driver_calls``, the CUDA driver calls per op too (fake_gpu(driver_calls=True) counts them)."""
    cases = _small_cases()
    names = names or list(cases)
    clock = time.perf_counter
    where = "real GPU (launches asynchronous)" if "--real-gpu" in sys.argv else "fake GPU"
    print(f"{where}: host us per op, best of {repeat} x {number} calls")
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
        line = f"  {name:14s} {best / number * 1e6:8.2f} us {calls:6.0f} calls"
        if driver_calls:
            DRIVER_CALLS.clear()
            for _ in range(200):
                fn()
            per_op = {k: v / 200 for k, v in sorted(DRIVER_CALLS.items()) if v}
            line += f" {sum(per_op.values()):5.2f} driver calls: " + (
                ", ".join(f"{k} x{v:g}" for k, v in per_op.items()) or "none"
            )
        print(line)
        if profile:
            stats.sort_stats("tottime").print_stats(profile)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small-ops", action="store_true", help="per-op host time of small ops instead of a step")
    parser.add_argument("--cases", nargs="+", default=None, help="with --small-ops: which cases (default all)")
    parser.add_argument("--number", type=int, default=20000, help="with --small-ops: calls per timing run")
    parser.add_argument("--repeat", type=int, default=7, help="with --small-ops: timing runs (best reported)")
    parser.add_argument(
        "--driver-calls", action="store_true", help="count driver calls (per op with --small-ops, else per step)"
    )
    parser.add_argument("--real-gpu", action="store_true", help="with --small-ops: time on the GPU, no fakes")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--profile", type=int, default=30, help="cProfile lines to print (0: none)")
    args = parser.parse_args()
    if args.real_gpu:
        if args.driver_calls:
            count_real_driver_calls()
    else:
        fake_gpu(driver_calls=args.driver_calls)
    if args.small_ops:
        profile = args.profile if "--profile" in sys.argv else 0
        small_ops(args.cases, args.number, args.repeat, profile, args.driver_calls)
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
    if args.driver_calls:
        DRIVER_CALLS.clear()
        trainer.step(x, y)
        calls = {k: v for k, v in sorted(DRIVER_CALLS.items()) if v}
        print(f"driver calls in one step: {sum(calls.values())}")
        for name, count in calls.items():
            print(f"  {name:40s} {count:6d}")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        trainer.step(x, y)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
