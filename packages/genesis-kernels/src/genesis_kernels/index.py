"""Index kernels: gather, scatter, scatter_add, index_select, index_add, embedding, masked_fill,
nonzero, masked_select.

The first six are launches of the shared indexed-elementwise kernel (``indexed.py``: device-side
bounds checks, atomics for the accumulating ones); each function here only lays out its
iteration space. ``index_range``: host-known bounds of the index's values, (lowest, highest, exact),
which spare the launch its bounds check's stream synchronisation (``indexed.py``). ``masked_fill``
is an elementwise ``where``.

``nonzero`` and ``masked_select`` use a device-side prefix sum in three launches: count per
block, an exclusive scan of the block counts (one program), then each block writes its elements
at ``block offset + local cumsum``. ``nonzero_count`` runs the first two and reads the total back;
the caller sizes the output with it and calls ``nonzero`` / ``masked_select``, which redo the scan
(cheap: it reads only the mask) and never write past the output they are given.
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from . import capture
from . import runtime as rt
from .buffer import MAX_RANK, Buffer, BufferLike, is_buffer, numel
from .elementwise import where
from .indexed import KnownRange, launch, shape1, with_size, wrap_dim
from .runtime import Kernel, cdiv, ptr_type
from .strided import Layout, layout, offset_of, size_types, stride_types


def gather(
    x: BufferLike,
    dim: int,
    index: BufferLike,
    out: BufferLike,
    *,
    index_range: KnownRange | None = None,
    stream: int = 0,
) -> None:
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``dim`` (torch.gather; no negative indices)."""
    xs, xst = shape1(x)
    ishape, ist = shape1(index)
    oshape = shape1(out)[0]
    dim = wrap_dim(dim, len(x.shape))
    if len(ishape) != len(xs):
        raise ValueError("gather: index and x must have the same number of dims")
    if oshape != ishape:
        raise ValueError(f"gather: out.shape {tuple(out.shape)} != index.shape {tuple(index.shape)}")
    for d in range(len(xs)):
        if d != dim and ishape[d] > xs[d]:
            raise ValueError(f"gather: index.size({d}) = {ishape[d]} exceeds x.size({d}) = {xs[d]}")
    launch(
        "take",
        out,
        x,
        [(index, ist, dim, xs[dim], xst[dim])],
        ishape,
        tuple(range(len(ishape))),
        with_size(xst, dim, 0),
        op="gather",
        ranges=[index_range],
        stream=stream,
    )


def _scatter(
    mode: str,
    out: BufferLike,
    dim: int,
    index: BufferLike,
    src: BufferLike | float | int | bool,
    stream: int,
    index_range: KnownRange | None,
) -> None:
    os_, ost = shape1(out)
    ishape, ist = shape1(index)
    dim = wrap_dim(dim, len(out.shape))
    if len(ishape) != len(os_):
        raise ValueError("scatter: index and out must have the same number of dims")
    sst: tuple[int, ...] = (0,) * len(ishape)
    if is_buffer(src):
        ss, sst = shape1(src)
        if len(ss) != len(ishape) or any(i > s for i, s in zip(ishape, ss)):
            raise ValueError(f"scatter: index.shape {tuple(index.shape)} exceeds src.shape {tuple(src.shape)}")
    for d in range(len(os_)):
        if d != dim and ishape[d] > os_[d]:
            raise ValueError(f"scatter: index.size({d}) = {ishape[d]} exceeds out.size({d}) = {os_[d]}")
    launch(
        mode,
        out,
        src,
        [(index, ist, dim, os_[dim], ost[dim])],
        ishape,
        with_size(tuple(range(len(ishape))), dim, -1),
        sst,
        op="scatter" if mode == "put" else "scatter_add",
        ranges=[index_range],
        stream=stream,
    )


def scatter(
    out: BufferLike,
    dim: int,
    index: BufferLike,
    src: BufferLike | float | int | bool,
    *,
    index_range: KnownRange | None = None,
    stream: int = 0,
) -> None:
    """In place: ``out[..., index[..., i, ...], ...] = src[..., i, ...]`` (torch ``scatter_``; ``src`` may be a
    scalar). With duplicate indices the winner is unspecified, as in torch."""
    _scatter("put", out, dim, index, src, stream, index_range)


def scatter_add(
    out: BufferLike,
    dim: int,
    index: BufferLike,
    src: BufferLike,
    *,
    index_range: KnownRange | None = None,
    stream: int = 0,
) -> None:
    """In place: ``out[..., index[..., i, ...], ...] += src[..., i, ...]`` (torch ``scatter_add_``; atomic)."""
    _scatter("add", out, dim, index, src, stream, index_range)


def _vector_index(index: BufferLike) -> tuple[int, int]:
    """Length and stride of a 0-d or 1-d index."""
    if len(index.shape) > 1:
        raise ValueError("index must be 0-d or 1-d")
    return (index.shape[0], index.strides[0]) if index.shape else (1, 0)


def index_select(
    x: BufferLike,
    dim: int,
    index: BufferLike,
    out: BufferLike,
    *,
    index_range: KnownRange | None = None,
    stream: int = 0,
) -> None:
    """``out = x`` with ``dim`` replaced by ``x[..., index[j], ...]`` (torch.index_select; no negative indices)."""
    xs, xst = shape1(x)
    dim = wrap_dim(dim, len(x.shape))
    n, istride = _vector_index(index)
    want = with_size(xs, dim, n) if x.shape else tuple(index.shape)
    if tuple(out.shape) != want:
        raise ValueError(f"index_select: out.shape {tuple(out.shape)} != {want}")
    oshape = shape1(out)[0]
    ist = tuple(istride if d == dim else 0 for d in range(len(oshape)))
    launch(
        "take",
        out,
        x,
        [(index, ist, dim, xs[dim], xst[dim])],
        oshape,
        tuple(range(len(oshape))),
        with_size(xst, dim, 0),
        op="index_select",
        ranges=[index_range],
        stream=stream,
    )


def index_add(
    out: BufferLike,
    dim: int,
    index: BufferLike,
    src: BufferLike,
    *,
    alpha: float | int = 1,
    index_range: KnownRange | None = None,
    stream: int = 0,
) -> None:
    """In place: ``out[..., index[j], ...] += alpha * src[..., j, ...]`` (torch ``index_add_``; atomic)."""
    os_, ost = shape1(out)
    dim = wrap_dim(dim, len(out.shape))
    n, istride = _vector_index(index)
    ss, sst = shape1(src)
    if ss != with_size(os_, dim, n):
        raise ValueError(f"index_add: src.shape {tuple(src.shape)} != {with_size(os_, dim, n)}")
    ist = tuple(istride if d == dim else 0 for d in range(len(ss)))
    launch(
        "add",
        out,
        src,
        [(index, ist, dim, os_[dim], ost[dim])],
        ss,
        with_size(tuple(range(len(ss))), dim, -1),
        sst,
        alpha=alpha,
        op="index_add",
        ranges=[index_range],
        stream=stream,
    )


def embedding(
    weight: BufferLike,
    indices: BufferLike,
    out: BufferLike,
    *,
    index_range: KnownRange | None = None,
    stream: int = 0,
) -> None:
    """``out[*i, :] = weight[indices[*i], :]``; ``weight`` is ``(V, D)``, ``out`` is ``indices.shape + (D,)``."""
    if len(weight.shape) != 2:
        raise ValueError("embedding: weight must be 2-d")
    V, D = weight.shape
    shape = tuple(indices.shape) + (D,)
    if tuple(out.shape) != shape:
        raise ValueError(f"embedding: out.shape {tuple(out.shape)} != {shape}")
    nb = len(indices.shape)
    launch(
        "take",
        out,
        weight,
        [(indices, tuple(indices.strides) + (0,), 0, V, weight.strides[0])],
        shape,
        tuple(range(nb + 1)),
        (0,) * nb + (weight.strides[1],),
        op="embedding",
        ranges=[index_range],
        stream=stream,
    )


def embedding_backward(
    grad_out: BufferLike,
    indices: BufferLike,
    grad_weight: BufferLike,
    *,
    padding_idx: int | None = None,
    index_range: KnownRange | None = None,
    stream: int = 0,
) -> None:
    """``grad_weight[indices[*i], :] += grad_out[*i, :]`` (atomic; zero ``grad_weight`` first for a fresh
    gradient). Rows equal to ``padding_idx`` are skipped, as torch's embedding backward."""
    if len(grad_weight.shape) != 2:
        raise ValueError("embedding_backward: grad_weight must be 2-d")
    V, D = grad_weight.shape
    shape = tuple(indices.shape) + (D,)
    if tuple(grad_out.shape) != shape:
        raise ValueError(f"embedding_backward: grad_out.shape {tuple(grad_out.shape)} != {shape}")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += V
    nb = len(indices.shape)
    launch(
        "add",
        grad_weight,
        grad_out,
        [(indices, tuple(indices.strides) + (0,), 0, V, grad_weight.strides[0])],
        shape,
        (-1,) * nb + (1,),
        tuple(grad_out.strides),
        skip=padding_idx,
        op="embedding_backward",
        ranges=[index_range],
        stream=stream,
    )


def masked_fill(
    x: BufferLike, mask: BufferLike, value: float | int | bool, out: BufferLike, *, stream: int = 0
) -> None:
    """``out = value where mask else x`` (``mask`` bool, broadcast to ``out.shape``); ``out`` may be ``x``."""
    if mask.dtype != "bool":
        raise TypeError(f"masked_fill: mask must be bool, got {mask.dtype}")
    where(mask, value, x, out, stream=stream)


# ----------------------------------------------------------------------------------------------
# Prefix-sum compaction: nonzero, masked_select
# ----------------------------------------------------------------------------------------------

_SCAN_BLOCK = 2048


@triton.jit
def _count_kernel(
    m,
    part,
    n,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    m0,
    m1,
    m2,
    m3,
    m4,
    m5,
    m6,
    m7,
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        i = pid * BLOCK + tl.arange(0, BLOCK)
    valid = i < n
    mo = offset_of(i, S1, S2, S3, S4, S5, S6, S7, m0, m1, m2, m3, m4, m5, m6, m7, RANK)
    t = (tl.load(m + mo, mask=valid, other=0) != 0) & valid
    tl.store(part + pid, tl.sum(t.to(tl.int32)).to(tl.int64))


@triton.jit
def _offsets_kernel(part, nblocks, BLOCK: tl.constexpr):
    """In place exclusive scan of ``nblocks`` counts (one program); the total goes to ``part[nblocks]``."""
    carry = tl.zeros([], tl.int64)
    for s in range(0, nblocks, BLOCK):
        j = s + tl.arange(0, BLOCK)
        c = tl.load(part + j, mask=j < nblocks, other=0)
        inc = tl.cumsum(c, 0)
        tl.store(part + j, inc - c + carry, mask=j < nblocks)
        carry += tl.sum(c)
    tl.store(part + nblocks, carry)


@triton.jit
def _compact_kernel(
    m,
    x,
    out,
    part,
    n,
    cap,
    os0,
    os1,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    m0,
    m1,
    m2,
    m3,
    m4,
    m5,
    m6,
    m7,
    x0,
    x1,
    x2,
    x3,
    x4,
    x5,
    x6,
    x7,
    Z1,
    Z2,
    Z3,
    Z4,
    Z5,
    Z6,
    Z7,
    NONZERO: tl.constexpr,
    RANK: tl.constexpr,
    ZRANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        i = pid * BLOCK + tl.arange(0, BLOCK)
    valid = i < n
    mo = offset_of(i, S1, S2, S3, S4, S5, S6, S7, m0, m1, m2, m3, m4, m5, m6, m7, RANK)
    t = (tl.load(m + mo, mask=valid, other=0) != 0) & valid
    ti = t.to(tl.int32)
    pos = tl.load(part + pid) + (tl.cumsum(ti, 0) - ti).to(tl.int64)
    keep = t & (pos < cap)  # never past the output the caller sized
    if NONZERO:
        # Coordinates of the row-major logical index over the original shape, innermost first.
        rem = i.to(tl.int64)
        base = out + pos * os0
        if ZRANK > 7:
            tl.store(base + 7 * os1, rem % Z7, mask=keep)
            rem = rem // Z7
        if ZRANK > 6:
            tl.store(base + 6 * os1, rem % Z6, mask=keep)
            rem = rem // Z6
        if ZRANK > 5:
            tl.store(base + 5 * os1, rem % Z5, mask=keep)
            rem = rem // Z5
        if ZRANK > 4:
            tl.store(base + 4 * os1, rem % Z4, mask=keep)
            rem = rem // Z4
        if ZRANK > 3:
            tl.store(base + 3 * os1, rem % Z3, mask=keep)
            rem = rem // Z3
        if ZRANK > 2:
            tl.store(base + 2 * os1, rem % Z2, mask=keep)
            rem = rem // Z2
        if ZRANK > 1:
            tl.store(base + os1, rem % Z1, mask=keep)
            rem = rem // Z1
        tl.store(base, rem, mask=keep)
    else:
        xo = offset_of(i, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)
        v = tl.load(x + xo, mask=keep, other=0)
        tl.store(out + pos * os0, v, mask=keep)


_COUNT = Kernel(_count_kernel)
_OFFSETS = Kernel(_offsets_kernel)
_COMPACT = Kernel(_compact_kernel)


def _scan_counts(mask: BufferLike, strides: list[tuple[int, ...]], stream: int) -> tuple[Layout, int, int]:
    """Launch the count and offset passes; returns (layout, nblocks, scratch pointer of the offsets)."""
    lay = layout(tuple(mask.shape), strides, reorder=False)  # keep the row-major logical order
    nblocks = cdiv(lay.n, _SCAN_BLOCK)
    part = rt.scratch(8 * (nblocks + 1), stream)
    it = "i64" if lay.int64 else "i32"
    key = (mask.dtype, lay.rank, lay.int64)
    fn = _COUNT.cache.get(key)
    if fn is None:
        types = {"m": ptr_type(mask.dtype), "part": "*i64", "n": it, **size_types(it), **stride_types("m", it)}
        consts = dict(RANK=lay.rank, INT64=lay.int64, BLOCK=_SCAN_BLOCK)
        fn = _COUNT.build(key, types, consts, (), num_warps=8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn((nblocks, 1, 1), stream, (mask.ptr, part, lay.n, *lay.sizes, *lay.strides[0], *fn._consts))  # type: ignore[attr-defined]
    off = _OFFSETS.cache.get(0)
    if off is None:
        off = _OFFSETS.build(0, {"part": "*i64", "nblocks": "i32"}, dict(BLOCK=1024), (), num_warps=4)
    off((1, 1, 1), stream, (part, nblocks, 1024))
    return lay, nblocks, part


def nonzero_count(mask: BufferLike, *, stream: int = 0, op: str = "nonzero") -> int:
    """How many elements of ``mask`` (any dtype, any strides) are nonzero: the length of ``nonzero``'s and of
    ``masked_select``'s output. Waits for ``stream`` (the count is read back): refused under CUDA-graph
    capture, where the output's size cannot depend on the data."""
    capture.forbid_readback(op, "the number of nonzero elements sizes the output")
    if numel(tuple(mask.shape)) == 0:
        return 0
    _, nblocks, part = _scan_counts(mask, [tuple(mask.strides)] if mask.shape else [()], stream)
    raw = rt.read_int32(part + 8 * nblocks, 2, stream)
    return int(np.array(raw, dtype=np.int32).view(np.int64)[0])


def _compact(mask: BufferLike, x: BufferLike | None, out: BufferLike, nonzero: bool, stream: int) -> None:
    n = numel(tuple(mask.shape))
    if n == 0 or numel(tuple(out.shape)) == 0:
        return
    strides = [tuple(mask.strides)] + ([tuple(x.strides)] if x is not None else [])
    lay, nblocks, part = _scan_counts(mask, strides, stream)
    zshape = tuple(mask.shape)
    it = "i64" if lay.int64 else "i32"
    odt = out.dtype
    key = (mask.dtype, None if x is None else x.dtype, odt, nonzero, lay.rank, len(zshape), lay.int64)
    fn = _COMPACT.cache.get(key)
    if fn is None:
        types = {
            "m": ptr_type(mask.dtype),
            "x": ptr_type(x.dtype) if x is not None else "i64",
            "out": ptr_type(odt),
            "part": "*i64",
            "n": it,
            "cap": "i64",
            "os0": "i64",
            "os1": "i64",
            **size_types(it),
            **stride_types("m", it),
            **stride_types("x", it),
            **{f"Z{d}": "i64" for d in range(1, MAX_RANK)},
        }
        consts = dict(NONZERO=nonzero, RANK=lay.rank, ZRANK=max(len(zshape), 1), INT64=lay.int64, BLOCK=_SCAN_BLOCK)
        fn = _COMPACT.build(key, types, consts, (), num_warps=8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    xs = lay.strides[1] if x is not None else (0,) * MAX_RANK
    zs = tuple(zshape[1:]) + (1,) * (MAX_RANK - max(len(zshape), 1))
    os1 = out.strides[1] if len(out.shape) > 1 else 0
    fn(
        (nblocks, 1, 1),
        stream,
        (
            mask.ptr,
            x.ptr if x is not None else 0,
            out.ptr,
            part,
            lay.n,
            out.shape[0],
            out.strides[0],
            os1,
            *lay.sizes,
            *lay.strides[0],
            *xs,
            *zs,
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def nonzero(mask: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """Row-major coordinates of the nonzero elements of ``mask``: ``out`` is int64 ``(nonzero_count(mask),
    mask.ndim)``. Elements past ``out.shape[0]`` are never written."""
    if out.dtype != "int64":
        raise TypeError("nonzero: out must be int64")
    if len(out.shape) != 2 or out.shape[1] != len(mask.shape):
        raise ValueError(f"nonzero: out must have shape (count, {len(mask.shape)}), got {tuple(out.shape)}")
    if not mask.shape:  # 0-d: one row of zero coordinates, nothing to write
        return
    _compact(mask, None, out, True, stream)


def masked_select(x: BufferLike, mask: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """``x``'s elements where ``mask`` (bool; both broadcast to one shape) is true, in row-major order, into the
    1-d ``out`` of length ``nonzero_count(mask)`` (dtype of ``x``)."""
    if mask.dtype != "bool":
        raise TypeError(f"masked_select: mask must be bool, got {mask.dtype}")
    if tuple(x.shape) != tuple(mask.shape):
        raise ValueError(f"masked_select: x.shape {tuple(x.shape)} != mask.shape {tuple(mask.shape)} (broadcast first)")
    if len(out.shape) != 1 or out.dtype != x.dtype:
        raise ValueError("masked_select: out must be 1-d with x's dtype")
    if not mask.shape:
        mask = Buffer(mask.ptr, (1,), (1,), mask.dtype)
        x = Buffer(x.ptr, (1,), (1,), x.dtype)
    _compact(mask, x, out, False, stream)


__all__ = [
    "embedding",
    "embedding_backward",
    "gather",
    "index_add",
    "index_select",
    "masked_fill",
    "masked_select",
    "nonzero",
    "nonzero_count",
    "scatter",
    "scatter_add",
]
