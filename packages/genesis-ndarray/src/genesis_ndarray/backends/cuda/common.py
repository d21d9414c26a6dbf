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


_PRESENT: set[int] = set()  # device indices new() has found present (the device count does not change)


def new(shape, dtype: DType, device: Device) -> View:
    index = device.index
    if index not in _PRESENT:
        index = index_of(device)
        count = gs.device_count()
        if index >= count:
            if count == 0:  # torch's one message: no driver, or no GPU
                raise RuntimeError(gs.unavailable_reason())
            raise RuntimeError(f"CUDA error: invalid device ordinal (device {device} requested, {count} available)")
        _PRESENT.add(index)
    return gs.empty(shape if shape.__class__ is tuple else tuple(shape), dtype.name, index)


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


# ------------------------------------------------------------------ host-known value ranges
# An integer array's storage may carry bounds of its values that the host knows at no device cost
# (genesis_storage's CUDAStorage.value_range: (dtype, lowest, highest, exact)): uploads from host
# data, arange, randint / randperm, and integer casts of those set it. Index ops pass the bounds to
# their kernels, which then skip the bounds check's stream synchronisation (genesis_kernels.indexed).
# Every op of this backend that writes into an existing array calls ``forget_range`` on it first;
# genesis_storage drops the bounds on its own writes and on every export (DLPack, CAI).
_INTEGER_DTYPES = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}
_INTEGER_DTYPES.update({"int16": (-(2**15), 2**15 - 1), "int8": (-128, 127), "uint8": (0, 255)})
# Uploads above this many elements get no bounds: finding them (a min and a max over the host data)
# would cost about as much host time as the copy itself, which a bounds check's sync then outweighs less.
RANGE_UPLOAD_LIMIT = 1 << 20


def value_range(v: View) -> tuple[int, int, bool] | None:
    """Host-known (lowest, highest, exact) of ``v``'s values; exact: both are values ``v`` holds."""
    known = getattr(v.storage, "value_range", None)
    if known is None or known[0] != v.dtype or not v.numel:
        return None
    return known[1], known[2], known[3] and _covers(v)


def _covers(v: View) -> bool:
    """Whether ``v`` reaches every element of its storage (a dense array, or a permuted / expanded /
    reshaped view of one): the storage's exact bounds are then ``v``'s."""
    if v.offset:
        return False
    expected = 1
    for stride, size in sorted((st, n) for n, st in zip(v.shape, v.strides) if n > 1 and st):
        if stride != expected:
            return False
        expected *= size
    return expected == v.storage.nbytes // v.itemsize


def set_range(v: View, lo: int, hi: int, exact: bool) -> View:
    """Record bounds of the values just written into ``v`` (a whole fresh storage, integer dtype)."""
    limits = _INTEGER_DTYPES.get(v.dtype)
    if limits is not None and limits[0] <= lo <= hi <= limits[1]:
        v.storage.value_range = (v.dtype, int(lo), int(hi), bool(exact and _covers(v)))
    return v


def forget_range(v: View) -> None:
    """``v``'s memory is about to be written: its storage's values are no longer known."""
    v.storage.value_range = None


def forget_ranges(*lists: list[View] | None) -> None:
    """``forget_range`` for every array of the lists a multi-tensor op writes (None: no such list)."""
    for views in lists:
        if views:
            for v in views:
                v.storage.value_range = None
