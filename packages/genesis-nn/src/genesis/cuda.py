"""genesis.cuda: devices, synchronisation, streams and memory statistics."""

from genesis_autograd.cuda import (
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
from genesis_autograd.cuda import device_guard as device


def manual_seed(seed: int) -> None:
    from genesis_autograd import manual_seed as seed_all

    seed_all(seed)


__all__ = [
    "Event", "Stream", "current_device", "current_stream", "device", "device_count", "empty_cache",
    "get_device_capability", "get_device_name", "get_device_properties", "is_available", "manual_seed",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_snapshot",
    "memory_stats", "reset_peak_memory_stats", "set_device", "set_per_process_memory_fraction", "stream",
    "synchronize",
]
