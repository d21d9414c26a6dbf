"""Sorting along a dim: sort / argsort (stable, ascending or descending) and topk.

Every value becomes an int64 *key* whose signed order is the wanted order: floats by their
bits with the negative half flipped (-0.0 folded onto +0.0, every NaN onto the largest key,
so NaNs go last ascending and first descending, as torch), integers as themselves,
descending as the bitwise complement. Ties are broken by the original position, which
makes every sort stable.

* Rows up to ``MAX_BLOCK`` elements sort in registers: a bitonic network over
  ``(key, position)`` pairs (Triton's hypercube formulation of ``tl.sort``, extended to
  carry the position), several short rows per program. Values are then re-read from the
  input at the sorted positions, so they come out bit-exact (NaN payloads included).
* Longer rows: the same kernel sorts each ``MAX_BLOCK`` chunk, then merge passes double
  the sorted runs: each element finds its place in the merged run with a binary search
  in the partner run (elements of the left run go before equal elements of the right
  one, which keeps the sort stable), ``ceil(log2(chunks))`` passes in all. Passes
  ping-pong between the outputs and a scratch copy, arranged so the last lands in the
  outputs.
* ``topk`` is a sort in the wanted direction that writes only the first ``k`` positions
  (for long rows the runs live in scratch and the last pass writes the first ``k``).
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.standard import _indicator, xor_sum

from genesis_storage import contiguous_strides

from . import runtime as rt
from .buffer import INT32_LIMIT, MAX_RANK, BufferLike, collapse, dtype_info, extent, numel, pad_dims
from .runtime import Kernel, cdiv, next_pow2, ptr_type
from .strided import offset_of, stride_types

MAX_BLOCK = 2048  # longest row sorted in registers in one piece


@triton.jit
def sort_key(v, DESC: tl.constexpr):
    """An int64 whose signed order is torch's sort order of ``v`` (NaN largest; -0.0 == 0.0)."""
    if v.dtype == tl.float64:
        f = tl.where(v == 0, 0.0, v).to(tl.float64)
        b = f.to(tl.int64, bitcast=True)
        k = b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF)
        k = tl.where(f != f, 0x7FFFFFFFFFFFFFFF, k)
    elif v.dtype.is_floating():
        f = tl.where(v == 0, 0.0, v.to(tl.float32)).to(tl.float32)
        b = f.to(tl.int32, bitcast=True)
        k = (b ^ ((b >> 31) & 0x7FFFFFFF)).to(tl.int64)
        k = tl.where(f != f, 0x7FFFFFFFFFFFFFFF, k)
    else:
        k = v.to(tl.int64)
    if DESC:
        k = ~k
    return k


@triton.jit
def _compare_and_swap(k, p, flip, i: tl.constexpr, N_DIMS: tl.constexpr):
    # Partner along the i-th innermost hypercube dim (the XOR trick of triton.language.standard).
    pk = k ^ xor_sum(k, N_DIMS - 1 - i, True)
    pp = p ^ xor_sum(p, N_DIMS - 1 - i, True)
    is_right = _indicator(N_DIMS, i)
    greater = (k > pk) | ((k == pk) & (p > pp))
    swap = greater != (flip ^ is_right)
    return tl.where(swap, pk, k), tl.where(swap, pp, p)


@triton.jit
def _bitonic_merge(k, p, stage: tl.constexpr, order: tl.constexpr, N_DIMS: tl.constexpr):
    if order == 2:
        flip = _indicator(N_DIMS, stage)
    else:
        flip = order
    for i in tl.static_range(stage):
        k, p = _compare_and_swap(k, p, flip, stage - 1 - i, N_DIMS)
    return k, p


@triton.jit
def sort_pairs(k, p, LOG_N: tl.constexpr, N_DIMS: tl.constexpr):
    """Sort each row (last dim, ``2**LOG_N`` long) of ``(k, p)`` ascending by ``k`` then ``p``."""
    shape: tl.constexpr = k.shape
    hk = tl.reshape(k, [2] * N_DIMS)
    hp = tl.reshape(p, [2] * N_DIMS)
    for i in tl.static_range(1, LOG_N + 1):
        hk, hp = _bitonic_merge(hk, hp, i, 2 if i < LOG_N else 0, N_DIMS)
    return tl.reshape(hk, shape), tl.reshape(hp, shape)


@triton.jit
def _chunk_sort_kernel(
    x,
    vals,
    idxs,
    M,
    L,
    K,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    x0,
    x1,
    x2,
    x3,
    x4,
    x5,
    x6,
    x7,
    v0,
    v1,
    v2,
    v3,
    v4,
    v5,
    v6,
    v7,
    i0,
    i1,
    i2,
    i3,
    i4,
    i5,
    i6,
    i7,
    x_dim,
    v_dim,
    i_dim,
    DESC: tl.constexpr,
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_L: tl.constexpr,
    LOG_N: tl.constexpr,
    N_DIMS: tl.constexpr,
):
    """Sort chunk ``program_id(1)`` (``BLOCK_L`` long) of ``BLOCK_M`` rows; write sorted positions < ``K``."""
    if INT64:
        m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        start = tl.program_id(1).to(tl.int64) * BLOCK_L
    else:
        m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        start = tl.program_id(1) * BLOCK_L
    local = tl.arange(0, BLOCK_L)
    mask = (m < M)[:, None] & (start + local < L)[None, :]
    xr = offset_of(m, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)[:, None]
    v = tl.load(x + xr + (start + local)[None, :] * x_dim, mask=mask)
    key = tl.where(mask, sort_key(v, DESC), 0x7FFFFFFFFFFFFFFF)  # padding sorts last, after NaN
    pos = tl.broadcast_to(local[None, :], [BLOCK_M, BLOCK_L])
    key, pos = sort_pairs(key, pos, LOG_N, N_DIMS)
    src = start + pos
    keep = (m < M)[:, None] & (start + local < L)[None, :] & (start + local < K)[None, :]
    v = tl.load(x + xr + src * x_dim, mask=keep)
    vr = offset_of(m, S1, S2, S3, S4, S5, S6, S7, v0, v1, v2, v3, v4, v5, v6, v7, RANK)[:, None]
    ir = offset_of(m, S1, S2, S3, S4, S5, S6, S7, i0, i1, i2, i3, i4, i5, i6, i7, RANK)[:, None]
    dst = (start + local)[None, :]
    tl.store(vals + vr + dst * v_dim, v, mask=keep)
    tl.store(idxs + ir + dst * i_dim, src.to(tl.int64), mask=keep)


@triton.jit
def _merge_kernel(
    sv,
    si,
    dv,
    di,
    L,
    K,
    R,
    steps,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    a0,
    a1,
    a2,
    a3,
    a4,
    a5,
    a6,
    a7,
    b0,
    b1,
    b2,
    b3,
    b4,
    b5,
    b6,
    b7,
    c0,
    c1,
    c2,
    c3,
    c4,
    c5,
    c6,
    c7,
    e0,
    e1,
    e2,
    e3,
    e4,
    e5,
    e6,
    e7,
    sv_dim,
    si_dim,
    dv_dim,
    di_dim,
    DESC: tl.constexpr,
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Merge sorted runs of length ``R`` pairwise (row ``program_id(0)``); write merged positions < ``K``."""
    row = tl.program_id(0)
    if INT64:
        row = row.to(tl.int64)
        p = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        p = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = p < L
    svr = offset_of(row, S1, S2, S3, S4, S5, S6, S7, a0, a1, a2, a3, a4, a5, a6, a7, RANK)
    sir = offset_of(row, S1, S2, S3, S4, S5, S6, S7, b0, b1, b2, b3, b4, b5, b6, b7, RANK)
    dvr = offset_of(row, S1, S2, S3, S4, S5, S6, S7, c0, c1, c2, c3, c4, c5, c6, c7, RANK)
    dir_ = offset_of(row, S1, S2, S3, S4, S5, S6, S7, e0, e1, e2, e3, e4, e5, e6, e7, RANK)
    v = tl.load(sv + svr + p * sv_dim, mask=valid)
    ix = tl.load(si + sir + p * si_dim, mask=valid)
    key = sort_key(v, DESC)
    run = p // R
    base = (run // 2) * (2 * R)
    is_left = (run % 2) == 0
    own = tl.where(is_left, base, base + R)
    other = tl.where(is_left, base + R, base)
    other_len = tl.where(is_left, tl.minimum(base + 2 * R, L) - (base + R), R)
    other_len = tl.maximum(other_len, 0)
    # Count the partner run's elements that go before this one: strictly smaller keys for the
    # left run, smaller or equal for the right run (equal keys keep their original order).
    lo = tl.zeros_like(p)
    hi = other_len
    for _ in range(steps):
        active = valid & (lo < hi)
        mid = (lo + hi) // 2
        kv = sort_key(tl.load(sv + svr + (other + mid) * sv_dim, mask=active), DESC)
        before = tl.where(is_left, kv < key, kv <= key)
        lo = tl.where(active & before, mid + 1, lo)
        hi = tl.where(active & ~before, mid, hi)
    dst = base + (p - own) + lo
    keep = valid & (dst < K)
    tl.store(dv + dvr + dst * dv_dim, v, mask=keep)
    tl.store(di + dir_ + dst * di_dim, ix, mask=keep)


_CHUNK = Kernel(_chunk_sort_kernel)
_MERGE = Kernel(_merge_kernel)


def _sizes(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[1:]) + (1,) * (MAX_RANK - len(shape))


class _Side:
    """Where a pass reads or writes: value and index pointers, kept-dim strides, dim strides."""

    def __init__(self, vptr: int, iptr: int, vk: tuple[int, ...], ik: tuple[int, ...], vd: int, id_: int) -> None:
        self.vptr, self.iptr, self.vk, self.ik, self.vd, self.id = vptr, iptr, vk, ik, vd, id_


def _chunk_sort(
    x: BufferLike,
    xk: tuple[int, ...],
    xd: int,
    dst: _Side,
    kshape: tuple[int, ...],
    M: int,
    L: int,
    K: int,
    desc: bool,
    block_l: int,
    big: bool,
    stream: int,
) -> None:
    block_m = max(1, min(next_pow2(M), 2048 // block_l))
    log_n = block_l.bit_length() - 1
    n_dims = (block_m * block_l).bit_length() - 1
    key = (x.dtype, desc, len(kshape), big, block_m, block_l)
    fn = _CHUNK.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(x.dtype),
            "vals": ptr_type(x.dtype),
            "idxs": "*i64",
            "M": it,
            "L": it,
            "K": it,
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("x", it),
            **stride_types("v", it),
            **stride_types("i", it),
            "x_dim": it,
            "v_dim": it,
            "i_dim": it,
        }
        consts = dict(
            DESC=desc, RANK=len(kshape), INT64=big, BLOCK_M=block_m, BLOCK_L=block_l, LOG_N=log_n, N_DIMS=n_dims
        )
        fn = _CHUNK.build(key, types, consts, (), num_warps=8 if block_m * block_l >= 1024 else 4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (cdiv(M, block_m), cdiv(L, block_l), 1),
        stream,
        (
            x.ptr,
            dst.vptr,
            dst.iptr,
            M,
            L,
            K,
            *_sizes(kshape),
            *pad_dims(xk, 0),
            *pad_dims(dst.vk, 0),
            *pad_dims(dst.ik, 0),
            xd,
            dst.vd,
            dst.id,
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def _merge(
    dtype: str,
    src: _Side,
    dst: _Side,
    kshape: tuple[int, ...],
    M: int,
    L: int,
    K: int,
    R: int,
    desc: bool,
    big: bool,
    stream: int,
) -> None:
    block = 1024
    key = (dtype, desc, len(kshape), big)
    fn = _MERGE.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "sv": ptr_type(dtype),
            "si": "*i64",
            "dv": ptr_type(dtype),
            "di": "*i64",
            "L": it,
            "K": it,
            "R": it,
            "steps": "i32",
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("a", it),
            **stride_types("b", it),
            **stride_types("c", it),
            **stride_types("e", it),
            "sv_dim": it,
            "si_dim": it,
            "dv_dim": it,
            "di_dim": it,
        }
        consts = dict(DESC=desc, RANK=len(kshape), INT64=big, BLOCK=block)
        fn = _MERGE.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    steps = R.bit_length() + 1 if R < L else 0
    fn(
        (M, cdiv(L, block), 1),
        stream,
        (
            src.vptr,
            src.iptr,
            dst.vptr,
            dst.iptr,
            L,
            K,
            R,
            steps,
            *_sizes(kshape),
            *pad_dims(src.vk, 0),
            *pad_dims(src.ik, 0),
            *pad_dims(dst.vk, 0),
            *pad_dims(dst.ik, 0),
            src.vd,
            src.id,
            dst.vd,
            dst.id,
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def _sort(x: BufferLike, values: BufferLike, indices: BufferLike, dim: int, k: int, desc: bool, stream: int) -> None:
    rank = len(x.shape)
    r = max(rank, 1)
    if not -r <= dim < r:
        raise IndexError(f"dim {dim} out of range for rank {rank}")
    dim %= r
    xs, xst = (tuple(x.shape), tuple(x.strides)) if rank else ((1,), (1,))
    want = xs[:dim] + (k,) + xs[dim + 1 :]
    vs, vst = (tuple(values.shape), tuple(values.strides)) if rank else ((1,), (1,))
    is_, ist = (tuple(indices.shape), tuple(indices.strides)) if rank else ((1,), (1,))
    if vs != want or is_ != want:
        raise ValueError(f"values/indices shapes {tuple(values.shape)}/{tuple(indices.shape)} != {want}")
    if values.dtype != x.dtype:
        raise TypeError(f"values dtype {values.dtype} != x dtype {x.dtype}")
    if indices.dtype != "int64":
        raise TypeError("indices must be int64")
    L = xs[dim]
    kept = [d for d in range(len(xs)) if d != dim]
    kshape_full = tuple(xs[d] for d in kept)
    M = numel(kshape_full)
    if M == 0 or k == 0:
        return
    long_row = L > MAX_BLOCK
    # Scratch rows (for long rows): contiguous (M, L) values, then (M, L) int64 positions; twice for topk.
    isz = dtype_info(x.dtype).itemsize
    sk = tuple(s * L for s in contiguous_strides(kshape_full))
    strides = [tuple(xst[d] for d in kept), tuple(vst[d] for d in kept), tuple(ist[d] for d in kept), sk]
    kshape, (xk, vk, ik, skc) = collapse(kshape_full, strides)
    if not kshape:
        kshape, xk, vk, ik, skc = (1,), (0,), (0,), (0,), (0,)
    big = (
        max(M * L, extent(tuple(xs), tuple(xst)), extent(tuple(vs), tuple(vst)), extent(tuple(is_), tuple(ist)))
        >= INT32_LIMIT - 65536
    )
    out_side = _Side(values.ptr, indices.ptr, vk, ik, vst[dim], ist[dim])
    if not long_row:
        _chunk_sort(x, xk, xst[dim], out_side, kshape, M, L, k, desc, max(2, next_pow2(L)), big, stream)
        return
    n = M * L
    vbytes = (n * isz + 255) // 256 * 256
    pair = vbytes + 8 * n
    topk = k < L
    base = rt.scratch(pair * (2 if topk else 1), stream)

    def scratch_side(at: int) -> _Side:
        return _Side(at, at + vbytes, skc, skc, 1, 1)

    chunks = cdiv(L, MAX_BLOCK)
    passes = (chunks - 1).bit_length()
    if topk:
        sides = [scratch_side(base), scratch_side(base + pair)]
        first = 0
    else:
        sides = [out_side, scratch_side(base)]
        first = passes % 2  # so that the last pass writes the outputs
    _chunk_sort(x, xk, xst[dim], sides[first], kshape, M, L, L, desc, MAX_BLOCK, big, stream)
    cur = first
    R = MAX_BLOCK
    for _ in range(passes):
        _merge(x.dtype, sides[cur], sides[1 - cur], kshape, M, L, L, R, desc, big, stream)
        cur = 1 - cur
        R *= 2
    if topk:  # the first k positions of the sorted rows: a pass with nothing left to merge
        _merge(x.dtype, sides[cur], out_side, kshape, M, L, k, max(R, L), desc, big, stream)


def sort(
    x: BufferLike, values: BufferLike, indices: BufferLike, dim: int = -1, *, descending: bool = False, stream: int = 0
) -> None:
    """Stable sort of ``x`` along ``dim``: sorted ``values`` (x's dtype) and int64 ``indices`` (x's shape).

    NaN sorts as the largest value (last ascending, first descending); -0.0 and 0.0 are equal. ``values`` may
    be ``x`` itself.
    """
    L = x.shape[dim] if x.shape else 1
    _sort(x, values, indices, dim, L, descending, stream)


def argsort(
    x: BufferLike,
    indices: BufferLike,
    values_scratch: BufferLike,
    dim: int = -1,
    *,
    descending: bool = False,
    stream: int = 0,
) -> None:
    """``indices`` of the stable sort of ``x`` along ``dim``; the sorted values land in ``values_scratch``
    (x's shape and dtype; the caller's temporary)."""
    sort(x, values_scratch, indices, dim, descending=descending, stream=stream)


def topk(
    x: BufferLike,
    k: int,
    values: BufferLike,
    indices: BufferLike,
    dim: int = -1,
    *,
    largest: bool = True,
    stream: int = 0,
) -> None:
    """The ``k`` largest (or smallest) elements along ``dim``, sorted, with their int64 indices; ``values`` and
    ``indices`` have x's shape with ``dim`` of size ``k``. NaN counts as the largest, as torch."""
    L = x.shape[dim] if x.shape else 1
    if not 0 <= k <= L:
        raise ValueError(f"topk: k = {k} out of range for a dim of size {L}")
    _sort(x, values, indices, dim, k, largest, stream)


__all__ = ["argsort", "sort", "topk"]
