"""Process-wide runtime settings of the layers below, for genesis' top level (which reaches only this layer):
the cpu backend's threads and denormal flushing, deterministic mode, and the factories' default device."""

from __future__ import annotations

from genesis_ndarray.cpu_runtime import (
    get_num_interop_threads,
    get_num_threads,
    init_num_threads,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
)
from genesis_ndarray.determinism import (
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode,
    use_deterministic_algorithms,
)
from genesis_ndarray.device import get_default_device, set_default_device

__all__ = [
    "get_num_threads",
    "set_num_threads",
    "get_num_interop_threads",
    "set_num_interop_threads",
    "init_num_threads",
    "set_flush_denormal",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "get_deterministic_debug_mode",
    "set_deterministic_debug_mode",
    "get_default_device",
    "set_default_device",
]
