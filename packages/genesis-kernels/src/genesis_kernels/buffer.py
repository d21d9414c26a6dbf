"""Buffers: what every kernel in this package reads and writes.

A buffer is any object with ``.ptr`` (int address), ``.shape`` (tuple of int),
``.strides`` (tuple of int, in elements; 0 allowed for broadcast) and ``.dtype``
(one of the names in ``DTYPES``). The ndarray layer passes its own objects;
:class:`Buffer` is the light class for tests and for internal scratch views.

This file also holds the layout logic shared by the elementwise and reduction
launchers: drop size-1 dims, order dims by the output's strides and merge dims
that are contiguous for every operand, so that the common case is rank 1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, TypeVar

import triton.language as tl

from genesis_storage import contiguous_strides

MAX_RANK = 8
INT32_LIMIT = 2**31 - 1


class BufferLike(Protocol):
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str


T = TypeVar("T")
_BY_LAYOUT_MAX = 1024  # layouts kept per launcher; a loop uses a handful, so a full cache is dropped whole


def by_layout(work_out: Callable[..., T]) -> Callable[..., T]:
    """Memoise ``work_out(bufs, *extra)``, which reads nothing of ``bufs`` but their shapes, strides and
    dtypes (never their addresses).

    Working out a launch's iteration space (collapse, extents, checks) costs more host time than the
    launch itself, and a training loop meets the same few layouts on every step. A call that raises
    (a bad layout) caches nothing; results are shared, so they must be immutable (tuples).
    """
    cache: dict[tuple, T] = {}

    @functools.wraps(work_out)
    def cached(bufs: Sequence[BufferLike], *extra: Any) -> T:
        key = (tuple([(tuple(b.shape), tuple(b.strides), b.dtype) for b in bufs]), *extra)
        hit = cache.get(key)
        if hit is None:
            hit = work_out(bufs, *extra)
            if len(cache) >= _BY_LAYOUT_MAX:
                cache.clear()
            cache[key] = hit
        return hit

    cached.cache = cache  # type: ignore[attr-defined]  # for tests
    return cached


def is_buffer(v: object) -> TypeGuard[BufferLike]:
    """Whether ``v`` is a device buffer rather than a Python scalar (anything with a ``ptr``)."""
    return hasattr(v, "ptr")


class Buffer:
    """A view of device (or, under the interpreter, host) memory."""

    __slots__ = ("dtype", "ptr", "shape", "strides")

    def __init__(
        self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...] | None = None, dtype: str = "float32"
    ) -> None:
        self.ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(int(s) for s in strides)
        self.dtype = dtype
        if dtype not in DTYPES:
            raise TypeError(f"unsupported dtype {dtype!r}")
        if len(self.shape) != len(self.strides):
            raise ValueError(f"shape {self.shape} and strides {self.strides} differ in rank")

    def __repr__(self) -> str:
        return f"Buffer(ptr={self.ptr:#x}, shape={self.shape}, strides={self.strides}, dtype={self.dtype!r})"


@dataclass(frozen=True)
class DType:
    name: str
    triton: str  # the Triton signature name: "fp32", "i64", "i1", ...
    tl: Any  # the triton.language dtype
    itemsize: int
    is_float: bool
    is_signed: bool


def _d(name: str, triton: str, tldt: Any, itemsize: int, is_float: bool, is_signed: bool) -> DType:
    return DType(name, triton, tldt, itemsize, is_float, is_signed)


DTYPES: dict[str, DType] = {
    "float32": _d("float32", "fp32", tl.float32, 4, True, True),
    "float16": _d("float16", "fp16", tl.float16, 2, True, True),
    "bfloat16": _d("bfloat16", "bf16", tl.bfloat16, 2, True, True),
    "float64": _d("float64", "fp64", tl.float64, 8, True, True),
    "int8": _d("int8", "i8", tl.int8, 1, False, True),
    "int16": _d("int16", "i16", tl.int16, 2, False, True),
    "int32": _d("int32", "i32", tl.int32, 4, False, True),
    "int64": _d("int64", "i64", tl.int64, 8, False, True),
    "uint8": _d("uint8", "u8", tl.uint8, 1, False, False),
    "bool": _d("bool", "i1", tl.int1, 1, False, False),
}
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")


def dtype_info(name: str) -> DType:
    try:
        return DTYPES[name]
    except KeyError:
        raise TypeError(f"unsupported dtype {name!r}; expected one of {sorted(DTYPES)}") from None


def tl_dtype(name: str) -> Any:
    """The triton.language dtype of a dtype name (a constexpr value for kernels; Triton ships no types)."""
    return dtype_info(name).tl


def pad_dims(t: tuple[int, ...], value: int, rank: int = MAX_RANK) -> tuple[int, ...]:
    """``t`` filled up to ``rank`` entries with ``value`` (the fixed-rank argument lists of strided kernels)."""
    return tuple(t) + (value,) * (rank - len(t))


def accumulate_dtype(name: str) -> str:
    """The dtype reductions and half-precision arithmetic accumulate in."""
    if name in ("float16", "bfloat16", "float32"):
        return "float32"
    if name == "float64":
        return "float64"
    return "int64"


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def is_dense(b: BufferLike) -> bool:
    """Whether ``b`` is laid out row-major with no gaps (dims of size 1 may have any stride), as the
    multi-tensor kernels stream it."""
    expect = 1
    for size, stride in zip(reversed(b.shape), reversed(b.strides)):
        if size != 1 and stride != expect:
            return False
        expect *= size
    return True


def extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """One past the largest element offset a view can reach (0 for an empty view)."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * abs(st) for s, st in zip(shape, strides))


def check_same_shape(*bufs: BufferLike) -> None:
    shape = bufs[-1].shape
    for b in bufs:
        if tuple(b.shape) != tuple(shape):
            raise ValueError(f"shape mismatch: {tuple(b.shape)} vs {tuple(shape)}")


def collapse(
    shape: tuple[int, ...], strides: list[tuple[int, ...]], reorder: bool = True
) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Simplify an iteration space shared by several operands (``strides[0]`` is the output's).

    Size-1 dims are dropped; dims are ordered by the output's strides, largest first
    (ties broken by the inputs', so a fully transposed op becomes a contiguous one) unless
    ``reorder`` is False (kernels whose result depends on the logical order, such as random);
    neighbouring dims that are contiguous for every operand are merged. Returns the
    new shape and strides; rank 0 means a single element.
    """
    dims = [d for d, s in enumerate(shape) if s != 1]
    # A stable sort on (out stride, in strides...) descending: the innermost dim ends up last.
    if reorder:
        dims.sort(key=lambda d: tuple(-abs(st[d]) for st in strides))
    new_shape: list[int] = []
    new_strides: list[list[int]] = [[] for _ in strides]
    for d in dims:
        size = shape[d]
        if new_shape and all(ns[-1] == st[d] * size for ns, st in zip(new_strides, strides)):
            new_shape[-1] *= size
            for ns, st in zip(new_strides, strides):
                ns[-1] = st[d]
            continue
        new_shape.append(size)
        for ns, st in zip(new_strides, strides):
            ns.append(st[d])
    return tuple(new_shape), [tuple(ns) for ns in new_strides]
