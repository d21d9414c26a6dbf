"""DLPack 1.x (versioned capsules, legacy fallback) and __cuda_array_interface__ import/export.

Export: the capsule points at a DLManagedTensor[Versioned] built with ctypes; a registry keeps the
struct, its shape/stride arrays and the view (hence the storage) alive until the consumer calls
the deleter, or until the capsule dies unconsumed (its destructor then calls the deleter).
Import: the capsule is renamed "used_..." and an owner object calls the producer's deleter exactly
once, when the last Genesis storage wrapping it is gone.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import Any

from .dtypes import DLPACK_CODE, from_dlpack_code, from_typestr, itemsize
from .storage import CUDAStorage
from .stream import current_stream, current_stream_handle
from .view import StridedView, _extent, contiguous_strides

KDL_CUDA = 2
FLAG_READ_ONLY = 1
FLAG_IS_COPIED = 2
DLPACK_VERSION = (1, 1)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_NAME_V = b"dltensor_versioned"
_NAME_L = b"dltensor"
_USED_V = b"used_dltensor_versioned"
_USED_L = b"used_dltensor"

# Two private handles on the Python C API: one taking objects, one taking raw pointers (used
# inside the capsule destructor, where the capsule must not be re-referenced).
_api = ctypes.PyDLL(None)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
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


@_Deleter
def _deleter_versioned(ptr: int) -> None:
    _release(DLManagedTensorVersioned.from_address(ptr).manager_ctx or 0)


@_Deleter
def _deleter_legacy(ptr: int) -> None:
    _release(DLManagedTensor.from_address(ptr).manager_ctx or 0)


_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CapsuleDestructor
def _capsule_destructor(capsule: int) -> None:
    # Called when the capsule object dies. Consumed capsules were renamed "used_*": nothing to do.
    for name, cls in ((_NAME_V, DLManagedTensorVersioned), (_NAME_L, DLManagedTensor)):
        if _raw.PyCapsule_IsValid(capsule, name):
            ptr = _raw.PyCapsule_GetPointer(capsule, name)
            cls.from_address(ptr).deleter(ptr)
            return


def _sync_consumer(view: StridedView, stream: int | None) -> None:
    """Make the consumer's stream wait for the work queued on ours (DLPack's stream contract)."""
    if stream == -1:
        return
    consumer = 0 if stream is None or stream == 1 else int(stream)  # 1 (legacy) == handle 0 for us
    producer = current_stream_handle(view.device)
    if consumer == producer:
        return
    from ._driver import check
    from .device import ensure_context

    ev = current_stream(view.device).record_event()
    drv = ensure_context(view.device)
    check("cuStreamWaitEvent", drv.cuStreamWaitEvent(drv.CUstream(consumer), ev._cu, 0))


def to_dlpack(view: StridedView, stream: int | None = None, max_version: tuple[int, int] | None = None,
              dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    if dl_device is not None and tuple(dl_device) != (KDL_CUDA, view.device):
        raise BufferError(f"__dlpack__: cannot export a device-{view.device} CUDA buffer to dl_device "
                          f"{tuple(dl_device)}")
    flags = 0
    if copy:
        st = view.storage.clone()
        view = StridedView(st, view.dtype, view.shape, view.strides, view.offset)
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
        name = _NAME_V
    else:
        mt = DLManagedTensor()
        mt.deleter = _deleter_legacy
        name = _NAME_L
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
    return _api.PyCapsule_New(ctypes.addressof(mt), name, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def exported_count() -> int:
    """Capsules handed out whose deleter has not run yet (for leak tests)."""
    return len(_exported)


# ---------------------------------------------------------------------------- import
class _DLPackOwner:
    """Calls the producer's deleter exactly once, when the importing storage is gone."""

    __slots__ = ("__weakref__", "capsule", "deleter", "ptr")

    def __init__(self, ptr: int, deleter: Any, capsule: Any) -> None:
        self.ptr = ptr
        self.deleter = deleter
        self.capsule = capsule  # keeps the (renamed) capsule's memory valid

    def __del__(self) -> None:
        d, self.deleter = self.deleter, None
        if d:
            d(self.ptr)


def _wrap(ptr: int, device: int, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...] | None,
          owner: Any) -> StridedView:
    if strides is None:
        strides = contiguous_strides(shape)
    numel, lo, hi = _extent(shape, strides)
    isz = itemsize(dtype)
    nbytes = (hi - lo + 1) * isz if numel else 0
    storage = CUDAStorage.from_pointer(ptr + lo * isz, nbytes, device, owner)
    return StridedView(storage, dtype, shape, strides, -lo)


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def from_dlpack(obj: Any) -> StridedView:
    """Zero-copy import of a DLPack producer (or capsule) on a CUDA device."""
    if _is_capsule(obj):
        cap = obj
    else:
        dev_type, dev_id = obj.__dlpack_device__()
        if dev_type != KDL_CUDA:
            raise BufferError(f"from_dlpack: producer is on DLPack device type {dev_type}, not CUDA (2)")
        h = current_stream_handle(dev_id)
        s = 1 if h == 0 else h
        try:
            cap = obj.__dlpack__(stream=s, max_version=DLPACK_VERSION)
        except TypeError:  # producer predates DLPack 1.0 keywords
            cap = obj.__dlpack__(stream=s)
    if _api.PyCapsule_IsValid(cap, _NAME_V):
        ptr = _api.PyCapsule_GetPointer(cap, _NAME_V)
        mt: Any = DLManagedTensorVersioned.from_address(ptr)
        if mt.version.major != 1:
            raise BufferError(f"unsupported DLPack major version {mt.version.major}")
        _api.PyCapsule_SetName(cap, _USED_V)
    elif _api.PyCapsule_IsValid(cap, _NAME_L):
        ptr = _api.PyCapsule_GetPointer(cap, _NAME_L)
        mt = DLManagedTensor.from_address(ptr)
        _api.PyCapsule_SetName(cap, _USED_L)
    else:
        raise BufferError("from_dlpack: not a DLPack capsule, or one already consumed")
    t = mt.dl_tensor
    owner = _DLPackOwner(ptr, mt.deleter, cap)
    if t.device.device_type != KDL_CUDA:
        raise BufferError(f"from_dlpack: tensor is on DLPack device type {t.device.device_type}, not CUDA")
    dtype = from_dlpack_code(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
    data = (t.data or 0) + t.byte_offset
    return _wrap(data, t.device.device_id, dtype, shape, strides, owner)


def from_cuda_array_interface(obj: Any) -> StridedView:
    """Zero-copy import of an object with __cuda_array_interface__ (v2/v3); keeps obj alive."""
    cai = obj if isinstance(obj, dict) else obj.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise BufferError("masked __cuda_array_interface__ arrays are not supported")
    dtype = from_typestr(cai["typestr"])
    isz = itemsize(dtype)
    shape = tuple(int(n) for n in cai["shape"])
    ptr = int(cai["data"][0] or 0)
    bstrides = cai.get("strides")
    strides = None
    if bstrides is not None:
        if any(s % isz for s in bstrides):
            raise BufferError(f"strides {tuple(bstrides)} are not multiples of the itemsize {isz}")
        strides = tuple(int(s) // isz for s in bstrides)
    from ._driver import check
    from .device import current_device, ensure_context

    dev = current_device()
    if ptr:
        drv = ensure_context(dev)
        attr = drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        dev = int(check("cuPointerGetAttribute", drv.cuPointerGetAttribute(attr, drv.CUdeviceptr(ptr))))
    stream = cai.get("stream")
    if stream is not None:  # the producer's pending writes: our stream waits for them
        if stream == 0:
            raise BufferError("__cuda_array_interface__ stream 0 is not allowed by the protocol")
        ours = current_stream_handle(dev)
        theirs = 0 if stream == 1 else int(stream)
        if theirs != ours:
            drv = ensure_context(dev)
            ev = check("cuEventCreate", drv.cuEventCreate(int(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)))
            check("cuEventRecord", drv.cuEventRecord(ev, drv.CUstream(theirs)))
            check("cuStreamWaitEvent", drv.cuStreamWaitEvent(drv.CUstream(ours), ev, 0))
            check("cuEventDestroy", drv.cuEventDestroy(ev))
    return _wrap(ptr, dev, dtype, shape, strides, obj)
