"""Devices and their primary contexts.

Genesis uses each device's *primary* context (the one the runtime API, torch and Triton use), so a
pointer allocated here is valid in every CUDA library of the process. The context is retained once
per device and made current in each thread before that thread issues driver calls.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

from . import _driver
from ._driver import check
from .errors import CUDAUnavailableError


class _ThreadState(threading.local):
    """Per-thread state shared with stream.py, storage.py and graphs.py. Class-level defaults make every
    read a plain attribute lookup (getattr(local, name, default) on a missing name costs ~0.3 us).
    The current Stream objects themselves are stream.py's (its own thread-local): the hot paths need
    only the raw handles kept here."""

    device = 0  # this thread's current device
    handles: dict[int, int] | None = None  # device -> raw handle of the current stream (set_stream)


_tls = _ThreadState()

_lock = threading.Lock()
_count: int | None = None
_primary: dict[int, Any] = {}  # device -> CUcontext (retained for the life of the process)
_cudevice: dict[int, Any] = {}


class DeviceProperties(NamedTuple):
    name: str
    total_memory: int
    multi_processor_count: int
    l2_cache_size: int
    major: int
    minor: int


def is_available() -> bool:
    """True when a CUDA driver and at least one device are present. Never raises."""
    try:
        return device_count() > 0
    except Exception:
        return False


def device_count() -> int:
    """Number of CUDA devices; 0 when there is no driver."""
    global _count
    if _count is None:
        try:
            drv = _driver.driver()
            _count = int(check("cuDeviceGetCount", drv.cuDeviceGetCount()))
        except CUDAUnavailableError:
            _count = 0
    return _count


def check_index(index: int) -> int:
    n = device_count()
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"device index must be an int, got {type(index).__name__}")
    if not 0 <= index < n:
        if n == 0:
            raise CUDAUnavailableError(unavailable_reason())
        raise ValueError(f"device index {index} out of range: {n} CUDA device(s) present")
    return index


def unavailable_reason() -> str:
    """Why no CUDA device can be used, in torch's words: no driver, or a driver with no GPU."""
    try:
        _driver.driver()
    except CUDAUnavailableError:
        return (
            "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
            "driver from http://www.nvidia.com/Download/index.aspx"
        )
    return "No CUDA GPUs are available"


def _cu_device(index: int) -> Any:
    dev = _cudevice.get(index)
    if dev is None:
        check_index(index)
        dev = check("cuDeviceGet", _driver.driver().cuDeviceGet(index))
        _cudevice[index] = dev
    return dev


def primary_context(index: int) -> Any:
    ctx = _primary.get(index)
    if ctx is None:
        with _lock:
            ctx = _primary.get(index)
            if ctx is None:
                drv = _driver.driver()
                ctx = check("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain(_cu_device(index)))
                _primary[index] = ctx
    return ctx


def ensure_context(index: int) -> Any:
    """Make device `index`'s primary context current in this thread; return the driver module.

    Always sets it (cheap) because other libraries in the thread may have switched contexts.
    """
    drv = _driver.driver()
    check("cuCtxSetCurrent", drv.cuCtxSetCurrent(primary_context(index)))
    return drv


def current_device() -> int:
    """This thread's current device (0 until set_device is called in the thread; per thread, as the
    CUDA runtime's and torch's)."""
    return _tls.device


def device_index(device: object, optional: bool = False) -> int:
    """The index a device argument names, as torch.cuda's ``_get_device_index``: an int as it is; a
    ``"cuda"`` / ``"cuda:N"`` string or an object with ``type`` and ``index`` (a genesis or torch device)
    by its index. A device without an index (``"cuda"``) and None name this thread's current device
    when ``optional``, and raise ValueError otherwise (torch.cuda.set_device("cuda") does)."""
    if device.__class__ is int:
        return device
    if isinstance(device, int) and not isinstance(device, bool):
        return int(device)
    if device is None:
        index = None
    else:
        if isinstance(device, str):
            kind, sep, idx = device.partition(":")
            if sep and not (idx.isdigit() and str(int(idx)) == idx):
                raise RuntimeError(f"Invalid device string: '{device}'")
            index = int(idx) if sep else None
        elif hasattr(device, "type") and hasattr(device, "index"):
            kind, index = device.type, device.index
        else:
            raise TypeError(f"expected a cuda device, an index or None, got {type(device).__name__}")
        if kind != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
    if index is None:
        if not optional:
            raise ValueError(f"Expected a device with a specified index or an integer, but got:{device}")
        return _tls.device
    return index


def set_device(device: object) -> None:
    """Make ``device`` (an index, ``"cuda:N"`` or a device) this thread's current device; a negative
    index is a no-op (torch.cuda.set_device's rules)."""
    index = device_index(device)
    if index < 0:
        return
    check_index(index)
    _tls.device = index
    ensure_context(index)


class device:
    """`with device(d):` makes d this thread's current device inside the block. d is what
    set_device takes, or None / a negative index for a block that changes nothing (torch.cuda.device)."""

    __slots__ = ("_prev", "index")

    def __init__(self, device: object) -> None:
        self.index = device_index(device, optional=True)
        self._prev = 0

    def __enter__(self) -> device:
        self._prev = current_device()
        if self.index >= 0 and self.index != self._prev:
            set_device(self.index)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.index >= 0 and self.index != self._prev:
            set_device(self._prev)


def resolve(device: object) -> int:
    """The index of a device argument that may be None (the current device); see device_index."""
    if device is None:
        return _tls.device
    if device.__class__ is int:
        return device
    return device_index(device, optional=True)


def _attr(index: int, name: str) -> int:
    drv = _driver.driver()
    attr = getattr(drv.CUdevice_attribute, name)
    return int(check("cuDeviceGetAttribute", drv.cuDeviceGetAttribute(attr, _cu_device(index))))


def get_device_name(index: object = None) -> str:
    index = resolve(index)
    raw: bytes = check("cuDeviceGetName", _driver.driver().cuDeviceGetName(256, _cu_device(index)))
    return raw.split(b"\0", 1)[0].decode()


def get_device_capability(index: object = None) -> tuple[int, int]:
    index = resolve(index)
    return (
        _attr(index, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
        _attr(index, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"),
    )


def get_device_properties(index: object = None) -> DeviceProperties:
    index = resolve(index)
    total = int(check("cuDeviceTotalMem", _driver.driver().cuDeviceTotalMem(_cu_device(index))))
    major, minor = get_device_capability(index)
    return DeviceProperties(
        name=get_device_name(index),
        total_memory=total,
        multi_processor_count=_attr(index, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        l2_cache_size=_attr(index, "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
        major=major,
        minor=minor,
    )


def mem_get_info(index: object = None) -> tuple[int, int]:
    """(free, total) bytes of the device, as the driver reports them."""
    drv = ensure_context(resolve(index))
    free, total = check("cuMemGetInfo", drv.cuMemGetInfo())
    return int(free), int(total)


def synchronize(index: object = None) -> None:
    """Wait for all work on the device (all streams) to finish."""
    drv = ensure_context(resolve(index))
    check("cuCtxSynchronize", drv.cuCtxSynchronize())
