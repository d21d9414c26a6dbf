"""genesis_storage: GPU buffers on cuda-python.

Devices and primary contexts, CUDAStorage from a caching allocator, strided views, streams and
events, CUDA graph capture with private memory pools, pageable/pinned/shared/mapped host storage,
and zero-copy DLPack / CUDA array interface.
Depends on cuda-python and numpy only; importing it never needs a GPU (everything is lazy).
"""

from __future__ import annotations

from importlib import metadata as _metadata
from pathlib import Path as _Path

from .allocator import (
    CachingAllocator,
    FakeRawAllocator,
    empty_cache,
    get_allocator,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_allocator,
    set_per_process_memory_fraction,
)
from .device import (
    DeviceProperties,
    current_device,
    device,
    device_count,
    device_index,
    get_device_capability,
    get_device_name,
    get_device_properties,
    is_available,
    mem_get_info,
    set_device,
    synchronize,
    unavailable_reason,
)
from .dtypes import DTYPES
from .errors import (
    CUDAError,
    CUDAUnavailableError,
    DeviceMismatchError,
    DoubleFreeError,
    OutOfMemoryError,
    StorageClosedError,
)
from .foreign import from_cuda_array_interface, from_dlpack
from .graphs import (
    CUDAGraph,
    current_capture,
    graph,
    graph_pool_handle,
    is_current_stream_capturing,
    register_capture_hook,
)
from .host import HostStorage, host_empty_cache, host_memory_stats
from .mapped import MappedStorage
from .shared import SharedStorage
from .storage import CUDAStorage
from .stream import Event, Stream, current_stream, default_stream, set_stream, stream
from .view import StridedView, contiguous_strides, empty, from_numpy, to_numpy


def _read_version() -> str:
    """The installed distribution's version; from pyproject.toml when run from a source tree."""
    try:
        return _metadata.version("genesis-storage")
    except _metadata.PackageNotFoundError:  # on PYTHONPATH from a checkout (tools/gpu-test): no metadata
        import tomllib

        with open(_Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])


__version__ = _read_version()

__all__ = [
    "DTYPES",
    "CUDAError",
    "CUDAGraph",
    "CUDAStorage",
    "CUDAUnavailableError",
    "CachingAllocator",
    "DeviceMismatchError",
    "DeviceProperties",
    "DoubleFreeError",
    "Event",
    "FakeRawAllocator",
    "HostStorage",
    "MappedStorage",
    "OutOfMemoryError",
    "SharedStorage",
    "StorageClosedError",
    "Stream",
    "StridedView",
    "contiguous_strides",
    "current_capture",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "device_index",
    "empty",
    "empty_cache",
    "from_cuda_array_interface",
    "from_dlpack",
    "from_numpy",
    "get_allocator",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "graph",
    "graph_pool_handle",
    "host_empty_cache",
    "host_memory_stats",
    "is_available",
    "is_current_stream_capturing",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "unavailable_reason",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "register_capture_hook",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_allocator",
    "set_device",
    "set_per_process_memory_fraction",
    "set_stream",
    "stream",
    "synchronize",
    "to_numpy",
]
