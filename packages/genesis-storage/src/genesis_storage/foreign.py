"""Zero-copy import of memory another library owns: DLPack producers / capsules and
``__cuda_array_interface__`` objects, wrapped as StridedViews.

A DLPack capsule is renamed "used_..." and an owner object calls the producer's deleter exactly
once, when the last Genesis storage wrapping it is gone; a CUDA-array-interface object is simply
kept alive by the storage. The DLPack structs and names come from dlpack.py.
"""

from __future__ import annotations

from typing import Any

from ._driver import check
from .device import current_device, ensure_context
from .dlpack import (
    DLPACK_VERSION,
    KDL_CUDA,
    NAME_LEGACY,
    NAME_VERSIONED,
    USED_LEGACY,
    USED_VERSIONED,
    DLManagedTensor,
    DLManagedTensorVersioned,
    capsule_api,
)
from .dtypes import from_dlpack_code, from_typestr, itemsize
from .storage import CUDAStorage
from .stream import current_stream_handle
from .view import StridedView, contiguous_strides, extent


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


def _wrap(
    ptr: int, device: int, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...] | None, owner: Any
) -> StridedView:
    if strides is None:
        strides = contiguous_strides(shape)
    numel, lo, hi = extent(shape, strides)
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
    if capsule_api.PyCapsule_IsValid(cap, NAME_VERSIONED):
        ptr = capsule_api.PyCapsule_GetPointer(cap, NAME_VERSIONED)
        mt: Any = DLManagedTensorVersioned.from_address(ptr)
        if mt.version.major != 1:
            raise BufferError(f"unsupported DLPack major version {mt.version.major}")
        capsule_api.PyCapsule_SetName(cap, USED_VERSIONED)
    elif capsule_api.PyCapsule_IsValid(cap, NAME_LEGACY):
        ptr = capsule_api.PyCapsule_GetPointer(cap, NAME_LEGACY)
        mt = DLManagedTensor.from_address(ptr)
        capsule_api.PyCapsule_SetName(cap, USED_LEGACY)
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
