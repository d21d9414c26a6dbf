"""The op registry: op name -> per-device implementation.

Backends register their functions here; NDArray looks them up by its device
type. Adding a device means registering its functions, and no code above this
package ever asks which device it is on.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

_TABLES: dict[str, dict[str, Callable]] = {}

# Backends are imported on first use: the cuda backend pulls in Triton, which a
# CPU-only program never needs.
_BACKEND_MODULES = {
    "cpu": "genesis_ndarray.backends.cpu",
    "cuda": "genesis_ndarray.backends.cuda",
}


def register(op: str, device_type: str) -> Callable[[Callable], Callable]:
    """Decorator: make ``fn`` the implementation of ``op`` on ``device_type``."""

    def decorate(fn: Callable) -> Callable:
        _TABLES.setdefault(device_type, {})[op] = fn
        return fn

    return decorate


def table(device_type: str) -> dict[str, Callable]:
    """The op table of one device type (op name -> implementation)."""
    found = _TABLES.get(device_type)
    if found is None:
        module = _BACKEND_MODULES.get(device_type)
        if module is None:
            raise RuntimeError(f"no backend is registered for device type {device_type!r}")
        importlib.import_module(module)
        found = _TABLES[device_type]
    return found


def lookup(op: str, device_type: str) -> Callable:
    ops = table(device_type)
    try:
        return ops[op]
    except KeyError:
        raise NotImplementedError(f"operator {op!r} is not implemented for device type {device_type!r}") from None


def device_types() -> tuple[str, ...]:
    """Every device type a backend exists for (loaded or not)."""
    return tuple(dict.fromkeys([*_BACKEND_MODULES, *_TABLES]))
