"""The cpu backend's runtime settings: thread pools and denormal flushing.

The cpu backend runs on torch's CPU kernels, so these are torch's own switches; genesis' Triton (cuda)
kernels are not affected by any of them, as torch's CUDA kernels are not affected by torch's.
"""

from __future__ import annotations

import torch


def get_num_threads() -> int:
    """The number of threads the cpu backend uses inside one op (intra-op parallelism)."""
    return int(torch.get_num_threads())


def set_num_threads(num: int) -> None:
    """Set the number of threads the cpu backend uses inside one op; ``num`` must be positive."""
    torch.set_num_threads(num)


def get_num_interop_threads() -> int:
    """The number of threads the cpu backend uses to run independent ops (inter-op parallelism)."""
    return int(torch.get_num_interop_threads())


def set_num_interop_threads(num: int) -> None:
    """Set the inter-op thread count: once only, before any inter-op work starts (torch raises otherwise)."""
    torch.set_num_interop_threads(num)


def init_num_threads() -> None:
    """Initialise the cpu backend's thread pool on this thread (torch.init_num_threads)."""
    torch.init_num_threads()


def set_flush_denormal(mode: bool) -> bool:
    """Flush denormal floats to zero in cpu ops (``mode=True``) or keep them; returns whether the cpu supports
    it (True on x86 with SSE3, as torch). cuda kernels keep denormals either way, as torch's do."""
    return bool(torch.set_flush_denormal(mode))


__all__ = [
    "get_num_threads",
    "set_num_threads",
    "get_num_interop_threads",
    "set_num_interop_threads",
    "init_num_threads",
    "set_flush_denormal",
]
