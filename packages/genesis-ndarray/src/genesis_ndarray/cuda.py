"""The CUDA runtime as the layers above see it: devices, synchronisation, streams, CUDA graph
capture, the caching allocator's statistics and its out-of-memory error, all from genesis_storage."""

from __future__ import annotations

from genesis_storage import (
    CUDAGraph,
    Event,
    OutOfMemoryError,
    Stream,
    current_capture,
    current_device,
    current_stream,
    device_count,
    empty_cache,
    get_device_capability,
    get_device_name,
    get_device_properties,
    graph,
    graph_pool_handle,
    is_available,
    is_current_stream_capturing,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    register_capture_hook,
    reset_peak_memory_stats,
    set_device,
    set_per_process_memory_fraction,
    stream,
    synchronize,
)
from genesis_storage import device as device_guard


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """torch.cuda.set_sync_debug_mode: 0 / "default" nothing, 1 / "warn" warns and 2 / "error" raises
    RuntimeError on every op that makes the host wait for a cuda stream (item(), tolist(), copies to the
    cpu, nonzero / masked_select, bounds checks of indices whose range the host does not know)."""
    from genesis_kernels import sync_debug  # the launchers own the mode: they are where the waits happen

    sync_debug.set_sync_debug_mode(debug_mode)


def get_sync_debug_mode() -> int:
    """The sync debug mode: 0 (default), 1 (warn) or 2 (error)."""
    from genesis_kernels import sync_debug

    return sync_debug.get_sync_debug_mode()


__all__ = [
    "CUDAGraph",
    "Event",
    "OutOfMemoryError",
    "Stream",
    "current_capture",
    "current_device",
    "current_stream",
    "device_count",
    "device_guard",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_sync_debug_mode",
    "graph",
    "graph_pool_handle",
    "is_available",
    "is_current_stream_capturing",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "register_capture_hook",
    "reset_peak_memory_stats",
    "set_device",
    "set_per_process_memory_fraction",
    "set_sync_debug_mode",
    "stream",
    "synchronize",
]
