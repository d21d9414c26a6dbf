"""The CUDA runtime as the layers above see it: devices, synchronisation, streams
and the caching allocator's statistics, all from genesis_storage."""

from __future__ import annotations

from genesis_storage import (
    Event,
    Stream,
    current_device,
    current_stream,
    device_count,
    empty_cache,
    get_device_capability,
    get_device_name,
    get_device_properties,
    is_available,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    reset_peak_memory_stats,
    set_device,
    set_per_process_memory_fraction,
    stream,
    synchronize,
)
from genesis_storage import device as device_guard

__all__ = [
    "Event",
    "Stream",
    "current_device",
    "current_stream",
    "device_count",
    "device_guard",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "is_available",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "reset_peak_memory_stats",
    "set_device",
    "set_per_process_memory_fraction",
    "stream",
    "synchronize",
]
