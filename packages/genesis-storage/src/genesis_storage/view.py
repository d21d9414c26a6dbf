"""StridedView: (storage, dtype, shape, strides, offset) with shape/strides/offset in elements.

A view keeps its storage alive; memory returns to the allocator when the last view (and the
storage object) is gone. Bounds are checked once, at construction, so kernels can trust `ptr`.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .dlpack import to_dlpack
from .dtypes import (
    DTYPES,
    NUMPY_DTYPES,
    TYPESTR,
    bfloat16_bits_to_float32,
    float32_to_bfloat16_bits,
    from_numpy_dtype,
)
from .storage import CUDAStorage, memcpy_dtoh
from .stream import current_stream_handle


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int, int]:
    """(numel, lowest, highest) element index reached relative to the offset."""
    numel = 1
    for n in shape:
        numel *= n
    lo = hi = 0
    if numel:
        for n, st in zip(shape, strides):
            if st >= 0:
                hi += st * (n - 1)
            else:
                lo += st * (n - 1)
    return numel, lo, hi


class StridedView:
    """A typed, strided window on a CUDAStorage."""

    __slots__ = (
        "__weakref__",
        "_contig",
        "device",
        "dtype",
        "itemsize",
        "numel",
        "offset",
        "ptr",
        "shape",
        "storage",
        "strides",
    )

    def __init__(
        self, storage: CUDAStorage, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0
    ) -> None:
        isz = DTYPES.get(dtype)
        if isz is None:
            raise TypeError(f"unknown dtype {dtype!r}; known: {sorted(DTYPES)}")
        shape = tuple(shape)
        strides = tuple(strides)
        if len(shape) != len(strides):
            raise ValueError(f"shape {shape} has {len(shape)} dims but strides {strides} has {len(strides)}")
        for n in shape:
            if n < 0:
                raise ValueError(f"negative dimension in shape {shape}")
        if offset < 0:
            raise IndexError(f"view offset {offset} is negative")
        numel, lo, hi = extent(shape, strides)
        capacity = storage.nbytes // isz
        if numel and (offset + lo < 0 or offset + hi >= capacity):
            raise IndexError(
                f"view (shape {shape}, strides {strides}, offset {offset}) reaches elements "
                f"{offset + lo}..{offset + hi} but the storage holds {capacity} {dtype} elements "
                f"({storage.nbytes} bytes)"
            )
        if not numel and offset > capacity:
            raise IndexError(f"view offset {offset} is past the storage's {capacity} {dtype} elements")
        self.storage = storage
        self.dtype = dtype
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.itemsize = isz
        self.device = storage.device
        self.numel = numel
        self.ptr = storage.ptr + offset * isz  # raises on a freed storage
        self._contig: bool | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    def is_contiguous(self) -> bool:
        c = self._contig
        if c is None:
            c = True
            expected = 1
            for n, st in zip(reversed(self.shape), reversed(self.strides)):
                if n != 1 and st != expected:
                    c = False
                    break
                expected *= n
            c = c or self.numel == 0
            self._contig = c
        return c

    def as_strided(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int | None = None) -> StridedView:
        """A view of the same storage; offset counts elements from the storage start."""
        off = self.offset if offset is None else offset
        return StridedView(self.storage, self.dtype, shape, strides, off)

    def reshaped(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> StridedView:
        """The same elements in another shape, with ``strides`` that a view computation over this view's
        strides produced (genesis_ndarray's view_strides): as for a permutation, the new view reaches
        exactly the elements this one does, so nothing is validated again (view / reshape are on every
        attention layer's and linear's host path). The caller vouches for the strides; as_strided checks."""
        return self._same_elements(tuple(shape), tuple(strides))

    def narrowed(self, dim: int, start: int, length: int) -> StridedView:
        """Elements ``start`` to ``start + length`` of dimension ``dim`` (0 <= dim < ndim, and
        0 <= start <= start + length <= shape[dim]: the caller checks, as for reshaped): a sub-view,
        which reaches only elements this view reaches, so nothing is validated again (split, chunk
        and cat use it per piece)."""
        shape = list(self.shape)
        shape[dim] = length
        view = self._same_elements(tuple(shape), self.strides)
        step = start * self.strides[dim]
        view.offset = self.offset + step
        view.ptr = self.ptr + step * self.itemsize
        view.numel = self.numel // self.shape[dim] * length if self.shape[dim] else 0
        return view

    def _same_elements(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> StridedView:
        """A view of this one's elements laid out as (shape, strides), built without the checks of __init__."""
        view = object.__new__(StridedView)
        view.storage = self.storage
        view.dtype = self.dtype
        view.shape = shape
        view.strides = strides
        view.offset = self.offset
        view.itemsize = self.itemsize
        view.device = self.device
        view.numel = self.numel
        view.ptr = self.ptr
        view._contig = None
        return view

    def permuted(self, order: tuple[int, ...] | list[int]) -> StridedView:
        """The same elements with the dimensions in ``order`` (a permutation of range(ndim)).

        A permutation reaches exactly the elements this view reaches, so unlike as_strided nothing is
        validated again: a transpose is the hot path of every matmul backward and attention layout."""
        if len(order) != len(self.shape) or sorted(order) != list(range(len(self.shape))):
            raise ValueError(f"permuted: {tuple(order)} is not a permutation of the {len(self.shape)} dimensions")
        shape, strides = self.shape, self.strides
        return self._same_elements(tuple([shape[d] for d in order]), tuple([strides[d] for d in order]))

    def __repr__(self) -> str:
        return (
            f"StridedView(dtype={self.dtype}, shape={self.shape}, strides={self.strides}, "
            f"offset={self.offset}, device={self.device})"
        )

    # ------------------------------------------------------------------ interop
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        typestr = TYPESTR.get(self.dtype)
        if typestr is None:
            raise TypeError(f"{self.dtype} has no __cuda_array_interface__ typestr; use DLPack")
        self.storage.ptr  # noqa: B018 - raises StorageClosedError on a freed storage
        self.storage.value_range = None  # the consumer may write through it
        h = current_stream_handle(self.device)
        return {
            "shape": self.shape,
            "typestr": typestr,
            "data": (self.ptr if self.numel else 0, False),
            "version": 3,
            "strides": None if self.is_contiguous() else tuple(s * self.itemsize for s in self.strides),
            "stream": 1 if h == 0 else h,  # CAI: 1 = legacy default stream, 0 is not allowed
        }

    def __dlpack__(
        self,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        self.storage.value_range = None  # the consumer may write through it
        return to_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self.device)  # kDLCUDA

    # ------------------------------------------------------------------ conveniences
    def numpy(self) -> np.ndarray:
        return to_numpy(self)

    def astype(self, dtype: str) -> StridedView:
        """A converted copy on the same device (goes through host memory: the storage layer has no
        kernels; genesis-kernels provides the on-device cast)."""
        host = to_numpy(self)
        if self.dtype == "bfloat16":
            host = bfloat16_bits_to_float32(host)
        if dtype == "bfloat16":
            out = float32_to_bfloat16_bits(host.astype(np.float32))
        else:
            out = host.astype(NUMPY_DTYPES[dtype])
        return from_numpy(out, self.device, dtype=dtype)


# shape -> (numel, contiguous strides, shape as ints): empty() is called for every op's output, and a
# contiguous view of a fresh allocation of exactly numel * itemsize bytes needs no bounds check.
_CONTIG: dict[tuple[int, ...], tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
_CONTIG_MAX = 4096


def _contig_info(shape: tuple[int, ...]) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    dims = tuple(operator.index(n) for n in shape)
    numel = 1
    for n in dims:
        if n < 0:
            raise ValueError(f"negative dimension in shape {dims}")
        numel *= n
    info = (numel, contiguous_strides(dims), dims)
    if len(_CONTIG) >= _CONTIG_MAX:
        _CONTIG.clear()
    _CONTIG[dims] = info
    return info


_new_view = object.__new__


def empty(shape: tuple[int, ...], dtype: str, device: int | None = None) -> StridedView:
    """A contiguous view of fresh (uninitialised) memory."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    info = _CONTIG.get(shape)
    if info is None:
        info = _contig_info(shape)
    isz = DTYPES.get(dtype)
    if isz is None:
        raise TypeError(f"unknown dtype {dtype!r}; known: {sorted(DTYPES)}")
    numel, strides, dims = info
    storage = CUDAStorage(numel * isz, device)
    v = _new_view(StridedView)
    v.storage = storage
    v.dtype = dtype
    v.shape = dims
    v.strides = strides
    v.offset = 0
    v.itemsize = isz
    v.device = storage.device
    v.numel = numel
    # A storage fresh from CUDAStorage() is live, so _ptr is an int (None only after free());
    # reading the field skips the .ptr property's check on every op's output.
    v.ptr = storage._ptr  # type: ignore[assignment]
    v._contig = True
    return v


def from_numpy(array: np.ndarray, device: int | None = None, dtype: str | None = None) -> StridedView:
    """Copy a numpy array (any layout) to the device as a contiguous view.

    dtype="bfloat16" takes uint16 raw bits, or float32/float64 values (rounded to nearest even).
    """
    array = np.asarray(array)
    if dtype == "bfloat16":
        if array.dtype != np.uint16:
            array = float32_to_bfloat16_bits(array.astype(np.float32))
    elif dtype is None:
        dtype = from_numpy_dtype(array.dtype)
    elif np.dtype(NUMPY_DTYPES[dtype]) != array.dtype:
        array = array.astype(NUMPY_DTYPES[dtype])
    host = np.ascontiguousarray(array)
    view = empty(host.shape, dtype, device)
    view.storage.copy_from_host(host.reshape(-1).view(np.uint8))
    return view


def to_numpy(view: StridedView) -> np.ndarray:
    """Copy to a new C-contiguous host array of view.shape; bfloat16 comes back as uint16 bits."""
    out = np.empty(view.shape, dtype=NUMPY_DTYPES[view.dtype])
    if not view.numel:
        return out
    view.storage.ptr  # noqa: B018 - raises on a freed storage
    if view.is_contiguous():
        memcpy_dtoh(out, view.ptr, view.nbytes, view.device)
        return out
    _, lo, hi = extent(view.shape, view.strides)
    span = np.empty(hi - lo + 1, dtype=out.dtype)
    memcpy_dtoh(span, view.ptr + lo * view.itemsize, span.nbytes, view.device)
    src = np.lib.stride_tricks.as_strided(
        span[-lo:], shape=view.shape, strides=tuple(s * view.itemsize for s in view.strides)
    )
    out[...] = src
    return out
