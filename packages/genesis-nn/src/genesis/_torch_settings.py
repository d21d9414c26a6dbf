"""torch.X runtime settings of issue #30: autocast state (and its deprecated per-device spellings), cpu
threads, deterministic mode, print options, warn-always, denormal flushing, the default device, the default
cpu generator, get_device_module and to_dlpack.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from genesis_autograd import Tensor, get_rng_state, initial_seed, set_rng_state
from genesis_autograd.autocast import (
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
)
from genesis_autograd.autocast import set_autocast_enabled as _set_enabled
from genesis_autograd.printing import set_printoptions
from genesis_autograd.settings import (
    are_deterministic_algorithms_enabled,
    get_default_device,
    get_deterministic_debug_mode,
    get_num_interop_threads,
    get_num_threads,
    init_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    set_default_device,
    set_deterministic_debug_mode,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    use_deterministic_algorithms,
)

from .utils.data.generator import Generator, _cpu_state_for_seed


def set_autocast_enabled(*args: Any) -> None:
    """``set_autocast_enabled(device_type, enabled)``; the one-argument form (cuda) is deprecated, as torch's."""
    if len(args) == 1:
        _deprecated("set_autocast_enabled(enabled)", "set_autocast_enabled('cuda', enabled)")
        args = ("cuda", args[0])
    if len(args) != 2:
        raise TypeError(f"set_autocast_enabled() takes (device_type, enabled), got {len(args)} arguments")
    _set_enabled(*args)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"genesis.{old} is deprecated. Please use genesis.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated spelling of ``is_autocast_enabled("cpu")``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated spelling of ``set_autocast_enabled("cpu", enabled)``."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    _set_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> Any:
    """Deprecated spelling of ``get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Deprecated spelling of ``set_autocast_dtype("cpu", dtype)``."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> Any:
    """Deprecated spelling of ``get_autocast_dtype("cuda")``."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: Any) -> None:
    """Deprecated spelling of ``set_autocast_dtype("cuda", dtype)``."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


_warn_always = False


def set_warn_always(b: bool, /) -> None:
    """Record torch's warn-always flag. genesis has no warn-once warnings of its own: every genesis warning is
    issued each time through Python's warnings module (whose filters decide what is shown), which is what
    torch does with the flag on; so the flag is reported by is_warn_always_enabled and changes nothing else."""
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled() -> bool:
    """The flag set by set_warn_always (False unless set)."""
    return _warn_always


class _DefaultGenerator(Generator):
    """The global cpu generator as a Generator object (torch.default_generator): seeding it or setting its
    state changes the stream that genesis' cpu draws without generator= come from."""

    def manual_seed(self, seed: int) -> Generator:
        """Seed the global cpu generator (only the cpu's, as torch.default_generator.manual_seed)."""
        self._seed = int(seed)
        set_rng_state(_cpu_state_for_seed(self._seed), "cpu")
        return self

    def initial_seed(self) -> int:
        """The seed the global cpu generator was last seeded with."""
        return initial_seed()

    def get_state(self) -> Tensor:
        """The global cpu generator's state (get_rng_state("cpu"))."""
        return get_rng_state("cpu")

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore the global cpu generator's state (set_rng_state(state, "cpu"))."""
        set_rng_state(new_state, "cpu")
        return self

    @contextmanager
    def active(self) -> Iterator[None]:
        """Draws inside the block already come from the global generator: nothing to swap."""
        yield


default_generator: Generator = _DefaultGenerator("cpu")


def get_device_module(device: Any = None) -> ModuleType:
    """The module of a device type: genesis.cuda for "cuda" (and for None when cuda is available). genesis
    has no cpu device module (torch.cpu): asking for it raises RuntimeError."""
    from . import cuda

    if device is not None and not isinstance(device, str) and not hasattr(device, "type"):
        raise RuntimeError(f"Invalid value of device '{device}', expect genesis.device, str, or None")
    from genesis_autograd import as_device

    available = cuda.is_available()  # type: ignore[attr-defined]  # (genesis.cuda star-imports its runtime)
    kind = ("cuda" if available else "cpu") if device is None else as_device(device).type
    if kind == "cuda":
        return cuda
    raise RuntimeError("genesis has no device module for 'cpu' (torch.cpu's stream and sync helpers are not provided)")


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule sharing ``tensor``'s memory (torch.to_dlpack; from_dlpack reads it back)."""
    return tensor.__dlpack__()


__all__ = [
    "set_autocast_enabled",
    "set_autocast_dtype",
    "is_autocast_cpu_enabled",
    "set_autocast_cpu_enabled",
    "get_autocast_cpu_dtype",
    "set_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "set_autocast_gpu_dtype",
    "clear_autocast_cache",
    "autocast_increment_nesting",
    "autocast_decrement_nesting",
    "set_autocast_cache_enabled",
    "is_autocast_cache_enabled",
    "get_num_threads",
    "set_num_threads",
    "get_num_interop_threads",
    "set_num_interop_threads",
    "init_num_threads",
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "get_deterministic_debug_mode",
    "set_deterministic_debug_mode",
    "set_printoptions",
    "set_warn_always",
    "is_warn_always_enabled",
    "set_flush_denormal",
    "get_default_device",
    "set_default_device",
    "default_generator",
    "get_device_module",
    "to_dlpack",
]
