"""Lazy binding to the CUDA driver API (cuda.bindings.driver) and return-code checking.

Importing this module never touches the driver: `cuInit` runs on the first call that needs it,
so `import genesis_storage` works on machines without libcuda (CI).
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

from .errors import CUDAError, CUDAUnavailableError

_lock = threading.Lock()
_driver: Any = None
_init_error: BaseException | None = None
# Set at interpreter exit: finalizers then skip driver calls (the process is releasing
# everything anyway, and the driver or the context may already be torn down).
shutting_down = False


def _mark_shutdown() -> None:
    global shutting_down
    shutting_down = True


atexit.register(_mark_shutdown)


def driver() -> Any:
    """The `cuda.bindings.driver` module, after a successful cuInit(0). Raises CUDAUnavailableError."""
    global _driver, _init_error
    if _driver is not None:
        return _driver
    with _lock:
        if _driver is not None:
            return _driver
        if _init_error is not None:
            raise CUDAUnavailableError(f"CUDA is not available: {_init_error}") from _init_error
        try:
            from cuda.bindings import driver as drv

            (err,) = drv.cuInit(0)
            if err:
                raise CUDAError("cuInit", err, _error_name(drv, err))
        except BaseException as exc:  # missing libcuda raises cuda.pathfinder errors, not CUresult
            _init_error = exc
            raise CUDAUnavailableError(f"CUDA is not available: {exc}") from exc
        _driver = drv
        return drv


def _error_name(drv: Any, err: Any) -> str:
    try:
        e2, name = drv.cuGetErrorName(err)
        if not e2:
            return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        pass
    return getattr(err, "name", f"CUresult {int(err)}")


def check(call: str, ret: Any) -> Any:
    """Unpack a cuda.bindings return tuple `(err, *values)`; raise CUDAError naming `call` on failure.

    Returns None, the single value, or a tuple of values.
    """
    err = ret[0]
    if err:  # CUresult is an int enum; CUDA_SUCCESS == 0
        raise CUDAError(call, err, _error_name(_driver, err))
    n = len(ret)
    if n == 1:
        return None
    if n == 2:
        return ret[1]
    return ret[1:]


def is_oom(err: Any) -> bool:
    return int(err) == 2  # CUDA_ERROR_OUT_OF_MEMORY
