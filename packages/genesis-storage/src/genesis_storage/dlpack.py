"""DLPack 1.x: the C structs, the capsule API, and export (``StridedView.__dlpack__``).

Export: the capsule points at a DLManagedTensor[Versioned] built with ctypes; a registry keeps the
struct, its shape/stride arrays and the view (hence the storage) alive until the consumer calls
the deleter, or until the capsule dies unconsumed (its destructor then calls the deleter).
Import (a capsule or producer into a StridedView) is ``foreign.py``, which builds on these structs.
This module does not import view.py: view.py imports it (one way).
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import Any

from ._driver import check
from .device import ensure_context
from .dtypes import DLPACK_CODE
from .stream import current_stream, current_stream_handle

KDL_CUDA = 2
FLAG_READ_ONLY = 1
FLAG_IS_COPIED = 2
DLPACK_VERSION = (1, 1)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


NAME_VERSIONED = b"dltensor_versioned"
NAME_LEGACY = b"dltensor"
USED_VERSIONED = b"used_dltensor_versioned"
USED_LEGACY = b"used_dltensor"

# Two private handles on the Python C API: one taking objects, one taking raw pointers (used
# inside the capsule destructor, where the capsule must not be re-referenced).
capsule_api = ctypes.PyDLL(None)
capsule_api.PyCapsule_New.restype = ctypes.py_object
capsule_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_api.PyCapsule_IsValid.restype = ctypes.c_int
capsule_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
capsule_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_api.PyCapsule_SetName.restype = ctypes.c_int
capsule_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_raw = ctypes.PyDLL(None)
_raw.PyCapsule_IsValid.restype = ctypes.c_int
_raw.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_raw.PyCapsule_GetPointer.restype = ctypes.c_void_p
_raw.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# ---------------------------------------------------------------------------- export
_exported: dict[int, tuple[Any, ...]] = {}  # key -> (struct, shape, strides, view)
_keys = itertools.count(1)
_lock = threading.Lock()


def _release(key: int) -> None:
    with _lock:
        _exported.pop(key, None)


# The C callbacks are wrapped by calling the CFUNCTYPE rather than using it as a decorator:
# CFUNCTYPE's result is untyped, and as a decorator it would erase the functions' signatures.
def _release_versioned(ptr: int) -> None:
    _release(DLManagedTensorVersioned.from_address(ptr).manager_ctx or 0)


def _release_legacy(ptr: int) -> None:
    _release(DLManagedTensor.from_address(ptr).manager_ctx or 0)


_deleter_versioned = _Deleter(_release_versioned)
_deleter_legacy = _Deleter(_release_legacy)

_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _destroy_capsule(capsule: int) -> None:
    # Called when the capsule object dies. Consumed capsules were renamed "used_*": nothing to do.
    for name, cls in ((NAME_VERSIONED, DLManagedTensorVersioned), (NAME_LEGACY, DLManagedTensor)):
        if _raw.PyCapsule_IsValid(capsule, name):
            ptr = _raw.PyCapsule_GetPointer(capsule, name)
            cls.from_address(ptr).deleter(ptr)
            return


_capsule_destructor = _CapsuleDestructor(_destroy_capsule)


def _sync_consumer(view: Any, stream: int | None) -> None:
    """Make the consumer's stream wait for the work queued on ours (DLPack's stream contract)."""
    if stream == -1:
        return
    consumer = 0 if stream is None or stream == 1 else int(stream)  # 1 (legacy) == handle 0 for us
    producer = current_stream_handle(view.device)
    if consumer == producer:
        return
    ev = current_stream(view.device).record_event()
    drv = ensure_context(view.device)
    check("cuStreamWaitEvent", drv.cuStreamWaitEvent(drv.CUstream(consumer), ev._cu, 0))


def to_dlpack(
    view: Any,
    stream: int | None = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> Any:
    """A DLPack capsule of ``view`` (a StridedView; typed loosely so this module needs no view import)."""
    if dl_device is not None and tuple(dl_device) != (KDL_CUDA, view.device):
        raise BufferError(
            f"__dlpack__: cannot export a device-{view.device} CUDA buffer to dl_device {tuple(dl_device)}"
        )
    flags = 0
    if copy:
        st = view.storage.clone()
        view = type(view)(st, view.dtype, view.shape, view.strides, view.offset)
        flags |= FLAG_IS_COPIED
    view.storage.ptr  # noqa: B018 - raises on a freed storage
    _sync_consumer(view, stream)
    ndim = len(view.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*view.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*view.strides)
    code, bits = DLPACK_CODE[view.dtype]
    key = next(_keys)
    versioned = max_version is not None and max_version[0] >= 1
    if versioned:
        mt: Any = DLManagedTensorVersioned()
        mt.version = DLPackVersion(*DLPACK_VERSION)
        mt.flags = flags
        mt.deleter = _deleter_versioned
        name = NAME_VERSIONED
    else:
        mt = DLManagedTensor()
        mt.deleter = _deleter_legacy
        name = NAME_LEGACY
    t = mt.dl_tensor
    t.data = view.storage.ptr or None
    t.byte_offset = view.offset * view.itemsize
    t.device = DLDevice(KDL_CUDA, view.device)
    t.ndim = ndim
    t.dtype = DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    mt.manager_ctx = key
    with _lock:
        _exported[key] = (mt, shape, strides, view)
    return capsule_api.PyCapsule_New(ctypes.addressof(mt), name, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def exported_count() -> int:
    """Capsules handed out whose deleter has not run yet (for leak tests)."""
    return len(_exported)
