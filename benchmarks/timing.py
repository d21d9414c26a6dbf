"""The timing loop the fused-kernel benchmarks share: genesis and torch interleaved in one process,
CUDA-event medians after warm-up, input sets rotated so that L2 flatters neither side."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch


def interleaved_us(
    fns: dict[str, Callable[[int], object]], reps: int, sets: int, warmup: int = 3, burst: int = 1
) -> dict[str, float]:
    """Median microseconds per call of each ``fn(i)`` (i: the input set, 0 .. sets - 1), alternating
    the functions every repetition.

    ``burst`` calls run between the two events of one sample, with no wait between them: with 1 the
    host's time per call is exposed whole (latency); with more the host runs ahead of the GPU as in a
    training loop, and only a host slower than the GPU shows (throughput)."""
    for fn in fns.values():
        for i in range(warmup):
            fn(i % sets)
    torch.cuda.synchronize()  # the whole device: genesis's streams too
    times: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(reps):
        for name, fn in fns.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for j in range(burst):
                fn((r + j) % sets)
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) * 1e3 / burst)
    return {k: statistics.median(v) for k, v in times.items()}


def kernel_us(fns: dict[str, Callable[[int], object]], calls: int, sets: int) -> dict[str, float]:
    """GPU kernel time per call of each ``fn(i)``: the sum of the kernel durations CUPTI records
    (torch.profiler sees Triton's kernels as well as torch's), so the host's time is left out.
    Beside ``interleaved_us`` it tells a slow kernel from a host that cannot keep the GPU fed."""
    from torch.profiler import ProfilerActivity, profile

    out = {}
    for name, fn in fns.items():
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(calls):
                fn(i % sets)
            torch.cuda.synchronize()
        busy = sum(e.self_device_time_total for e in prof.key_averages() if e.self_device_time_total > 0)
        out[name] = busy / calls
    return out


def host_us(fns: dict[str, Callable[[int], object]], reps: int, sets: int, warmup: int = 3) -> dict[str, float]:
    """Median host time to issue one call of each ``fn(i)`` (the GPU drained before each, the wait for it
    left out): where this exceeds the kernels' time, the host is what a training loop waits on."""
    import time

    for fn in fns.values():
        for i in range(warmup):
            fn(i % sets)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(reps):
        for name, fn in fns.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            fn(r % sets)
            times[name].append((time.perf_counter() - start) * 1e6)
    torch.cuda.synchronize()
    return {k: statistics.median(v) for k, v in times.items()}
