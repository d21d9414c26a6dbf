"""Per-device allocator registry and the torch.cuda-style memory functions.

`get_allocator(d)` creates device d's CachingAllocator (over cuMemAlloc) on first use.
`set_allocator(d, a)` installs another one (a CachingAllocator over FakeRawAllocator in CPU tests,
or a custom raw allocator), which every CUDAStorage on that device then uses.
"""

from __future__ import annotations

import threading
from typing import Any

from ..device import resolve
from .block import Block
from .caching import CachingAllocator
from .raw import CudaRawAllocator, FakeRawAllocator, RawAllocator

__all__ = [
    "Block",
    "CachingAllocator",
    "CudaRawAllocator",
    "FakeRawAllocator",
    "RawAllocator",
    "empty_cache",
    "get_allocator",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_allocator",
    "set_per_process_memory_fraction",
]

_lock = threading.Lock()
# device -> allocator; read without the lock on the hot path (dict reads are atomic under the GIL)
allocators: dict[int, CachingAllocator] = {}


def get_allocator(device: int) -> CachingAllocator:
    a = allocators.get(device)
    if a is None:
        with _lock:
            a = allocators.get(device)
            if a is None:
                a = allocators[device] = CachingAllocator(CudaRawAllocator(device))
    return a


def set_allocator(device: int, allocator: CachingAllocator | None) -> CachingAllocator | None:
    """Install `allocator` for `device` (None removes it); returns the previous one."""
    with _lock:
        prev = allocators.pop(device, None)
        if allocator is not None:
            allocators[device] = allocator
    return prev


def _get(device: object) -> CachingAllocator | None:
    # Statistics never create an allocator: no GPU (or no allocation yet) reads as zero.
    return allocators.get(resolve(device))


def memory_allocated(device: object = None) -> int:
    """Bytes held by live blocks (PyTorch: allocated_bytes.all.current). A counter read."""
    a = allocators.get(resolve(device))
    return a.b_alloc[0].current if a is not None else 0


def max_memory_allocated(device: object = None) -> int:
    a = _get(device)
    return a.b_alloc[0].peak if a is not None else 0


def memory_reserved(device: object = None) -> int:
    """Bytes in segments obtained from the device (PyTorch: reserved_bytes.all.current)."""
    a = _get(device)
    return a.b_res[0].current if a is not None else 0


def max_memory_reserved(device: object = None) -> int:
    a = _get(device)
    return a.b_res[0].peak if a is not None else 0


def reset_peak_memory_stats(device: object = None) -> None:
    a = _get(device)
    if a is not None:
        a.reset_peak_memory_stats()


def reset_accumulated_memory_stats(device: object = None) -> None:
    a = _get(device)
    if a is not None:
        a.reset_accumulated_memory_stats()


def memory_stats(device: object = None) -> dict[str, int]:
    a = _get(device)
    if a is None:
        return {}
    return a.memory_stats()


def memory_snapshot() -> list[dict[str, Any]]:
    """Segments of every device, PyTorch's torch.cuda.memory_snapshot() schema."""
    out: list[dict[str, Any]] = []
    for dev in sorted(allocators):
        out.extend(allocators[dev].snapshot())
    return out


def empty_cache(device: object = None) -> None:
    """Release cached, unused segments (all devices when device is None, like torch)."""
    targets = list(allocators.values()) if device is None else [a for a in [_get(device)] if a]
    for a in targets:
        a.empty_cache()


def set_per_process_memory_fraction(fraction: float, device: object = None) -> None:
    get_allocator(resolve(device)).set_memory_fraction(fraction)
