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
