"""Shared pieces of the CUDA backend: registration, dtypes, allocation, streams.

Native arrays of this backend are genesis_storage StridedViews; kernels come
from genesis_kernels and launch on the current stream of the array's device.
"""

from __future__ import annotations

import genesis_storage as gs
from genesis_storage.stream import current_stream_handle

from ...device import Device
from ...dtypes import DType, dtype_by_name, promote_types, result_type_with_scalar
from ...registry import register, register_resolver

View = gs.StridedView


def reg(name: str):
    return register(name, "cuda")


def resolver(family: str):
    """Decorator: register ``fn(op, *dtypes) -> entry | None`` as the cuda resolver of ``family`` (registry.py)."""
    return register_resolver(family, "cuda")


def dtype_of(v: View) -> DType:
    return dtype_by_name[v.dtype]


def index_of(device: Device) -> int:
    """A cuda device's index. The factories and to() resolve a bare "cuda" to the current device before
    a backend sees it (resolve_device), so a missing index here is a bug of the caller."""
    index = device.index
    if index is None:
        raise RuntimeError(f"expected a cuda device with an index (resolve_device), got {device!r}")
    return index


def stream_of(v: View) -> int:
    """The raw handle of this thread's current stream on v's device (read on every launch)."""
    return current_stream_handle(v.device)


def empty_like_shape(v: View, shape, dtype: DType | None = None) -> View:
    return gs.empty(tuple(shape), (dtype.name if dtype is not None else v.dtype), v.device)


def new(shape, dtype: DType, device: Device) -> View:
    index = index_of(device)
    count = gs.device_count()
    if index >= count:
        if count == 0:  # torch's one message: no driver, or no GPU
            raise RuntimeError(gs.unavailable_reason())
        raise RuntimeError(f"CUDA error: invalid device ordinal (device {device} requested, {count} available)")
    return gs.empty(tuple(shape), dtype.name, index)


def result_type(a, b) -> DType:
    """torch's promotion for two operands, each a View or a Python scalar.

    Zero-dim arrays count like scalars next to arrays with dims: they change the
    result only when their category (bool < int < float) is higher.
    """
    if isinstance(a, View):
        if isinstance(b, View):
            if a.dtype == b.dtype:  # the common case: same dtype, nothing to promote
                return dtype_by_name[a.dtype]
            da, db = dtype_of(a), dtype_of(b)
            a0, b0 = len(a.shape) == 0, len(b.shape) == 0
            if a0 != b0:
                dim_t, zero_t = (db, da) if a0 else (da, db)
                return zero_t if zero_t.category > dim_t.category else dim_t
            return promote_types(da, db)
        return result_type_with_scalar(dtype_of(a), b)
    return result_type_with_scalar(dtype_of(b), a)


def expand_to(v, shape):
    """v broadcast to ``shape`` as a view with 0 strides (scalars pass through)."""
    if not isinstance(v, View) or v.shape == tuple(shape):
        return v
    pad = len(shape) - len(v.shape)
    strides = [0] * pad
    for size, stride, target in zip(v.shape, v.strides, shape[pad:]):
        strides.append(stride if size == target else 0)
    return v.as_strided(tuple(shape), tuple(strides), v.offset)
