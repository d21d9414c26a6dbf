"""Scans along a dim: cumsum and cumprod.

The input is viewed as ``M`` rows (the other dims, collapsed, any strides) of ``L``
elements (the scanned dim, any stride). A program owns ``BLOCK_M`` rows and walks the
row in ``BLOCK_L`` chunks: ``tl.associative_scan`` inside the chunk, combined with the
carry of the chunks before it. The tile is long along whichever side is contiguous in
memory. Accumulation is float32 for float16/bfloat16 (and float32), float64 for
float64, int64 for integers and bool, as torch; the result is cast to ``out.dtype``.

When there are too few rows to fill the GPU and rows are long (``cumsum`` of one long
vector), the row is split into segments over programs: one launch writes each
segment's total to scratch, a second scans those totals in place, and a third scans
every segment again starting from the total of the segments before it.
"""

from __future__ import annotations

import triton
import triton.language as tl

from . import runtime as rt
from .buffer import INT32_LIMIT, MAX_RANK, BufferLike, accumulate_dtype, collapse, dtype_info, extent, numel, pad_dims
from .elementwise import cast_to
from .runtime import Kernel, cdiv, next_pow2, ptr_type
from .strided import offset_of, stride_types

SPLIT_SEGMENT = 4096  # rows at least 4x this long, and too few of them, are split over programs


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _scan_kernel(
    x,
    out,
    aux,
    M,
    L,
    K_PER,
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
    o0,
    o1,
    o2,
    o3,
    o4,
    o5,
    o6,
    o7,
    x_dim,
    o_dim,
    OP: tl.constexpr,
    ACC: tl.constexpr,
    PHASE: tl.constexpr,
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    """PHASE 0: scan rows. 1: write each segment's total to ``aux[seg, m]``. 2: scan segments, each starting
    from ``aux[seg - 1, m]`` (the inclusive scan of the totals)."""
    if INT64:
        m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        seg = tl.program_id(1).to(tl.int64)
    else:
        m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        seg = tl.program_id(1)
    m_mask = m < M
    xr = offset_of(m, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)
    orow = offset_of(m, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, RANK)
    if OP == "cumprod":
        ident = 1
    else:
        ident = 0
    carry = tl.full([BLOCK_M], ident, ACC)
    if PHASE == 2:
        prev = tl.load(aux + (seg - 1) * M + m, mask=m_mask & (seg > 0), other=ident)
        carry = prev.to(ACC)
    start = seg * K_PER
    end = tl.minimum(start + K_PER, L)
    cols = tl.arange(0, BLOCK_L)
    for l0 in range(0, K_PER, BLOCK_L):
        l = start + l0 + cols
        mask = m_mask[:, None] & (l < end)[None, :]
        v = tl.load(x + xr[:, None] + l[None, :] * x_dim, mask=mask)
        v = tl.where(mask, cast_to(v, ACC), ident)
        if OP == "cumprod":
            s = tl.associative_scan(v, 1, _mul) * carry[:, None]
        else:
            s = tl.associative_scan(v, 1, _add) + carry[:, None]
        if PHASE != 1:
            tl.store(out + orow[:, None] + l[None, :] * o_dim, cast_to(s, out.dtype.element_ty), mask=mask)
        # Masked lanes hold the identity, so the last column is the running total.
        carry = tl.sum(tl.where(cols[None, :] == BLOCK_L - 1, s, 0), 1)
    if PHASE == 1:
        tl.store(aux + seg * M + m, carry, mask=m_mask)


_SCAN = Kernel(_scan_kernel)


def _sizes(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(shape[1:]) + (1,) * (MAX_RANK - len(shape))


def _launch(
    op: str,
    xptr: int,
    xdt: str,
    optr: int,
    odt: str,
    aux: int,
    acc: str,
    kshape: tuple[int, ...],
    xk: tuple[int, ...],
    ok: tuple[int, ...],
    xd: int,
    od: int,
    M: int,
    L: int,
    k_per: int,
    split: int,
    phase: int,
    big: bool,
    stream: int,
) -> None:
    if xd == 1 or od == 1:
        block_l = min(next_pow2(L), 1024)
        block_m = max(1, min(next_pow2(M), 2048 // block_l))
    else:
        block_m = min(next_pow2(M), 64)
        block_l = max(1, min(next_pow2(L), 2048 // block_m, 64))
    block_l = max(block_l, 2)
    key = (op, xdt, odt, acc, phase, len(kshape), big, block_m, block_l)
    fn = _SCAN.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(xdt),
            "out": ptr_type(odt),
            "aux": ptr_type(acc),
            "M": it,
            "L": it,
            "K_PER": it,
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("x", it),
            **stride_types("o", it),
            "x_dim": it,
            "o_dim": it,
        }
        consts = dict(
            OP=op, ACC=dtype_info(acc).tl, PHASE=phase, RANK=len(kshape), INT64=big, BLOCK_M=block_m, BLOCK_L=block_l
        )
        fn = _SCAN.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (cdiv(M, block_m), split, 1),
        stream,
        (xptr, optr, aux, M, L, k_per, *_sizes(kshape), *pad_dims(xk, 0), *pad_dims(ok, 0), xd, od, *fn._consts),  # type: ignore[attr-defined]
    )


def _scan(op: str, x: BufferLike, out: BufferLike, dim: int, stream: int) -> None:
    rank = len(x.shape)
    r = max(rank, 1)
    if not -r <= dim < r:
        raise IndexError(f"dim {dim} out of range for rank {rank}")
    dim %= r
    if tuple(out.shape) != tuple(x.shape):
        raise ValueError(f"out.shape {tuple(out.shape)} != x.shape {tuple(x.shape)}")
    xs, xst, ost = (tuple(x.shape), tuple(x.strides), tuple(out.strides)) if rank else ((1,), (0,), (0,))
    L = xs[dim]
    kept = [d for d in range(len(xs)) if d != dim]
    kfull = tuple(xs[d] for d in kept)
    M = numel(kfull)
    if M == 0 or L == 0:
        return
    kshape, (ok, xk) = collapse(kfull, [tuple(ost[d] for d in kept), tuple(xst[d] for d in kept)])
    if not kshape:
        kshape, ok, xk = (1,), (0,), (0,)
    acc = accumulate_dtype(x.dtype)
    big = max(M * L, extent(xs, xst), extent(xs, ost)) >= INT32_LIMIT - 65536
    want = 4 * rt.sm_count()
    seg = SPLIT_SEGMENT
    if M < want and L >= 4 * seg:
        split = min(cdiv(L, seg), 4096)
        k_per = cdiv(L, split)
        split = cdiv(L, k_per)
        aux = rt.scratch(split * M * 8, stream)
        _launch(
            op,
            x.ptr,
            x.dtype,
            out.ptr,
            out.dtype,
            aux,
            acc,
            kshape,
            xk,
            ok,
            xst[dim],
            ost[dim],
            M,
            L,
            k_per,
            split,
            1,
            big,
            stream,
        )
        # Scan the (split, M) totals in place along the split: rows are m (stride 1), the dim has stride M.
        _launch(op, aux, acc, aux, acc, aux, acc, (M,), (1,), (1,), M, M, M, split, split, 1, 0, big, stream)
        _launch(
            op,
            x.ptr,
            x.dtype,
            out.ptr,
            out.dtype,
            aux,
            acc,
            kshape,
            xk,
            ok,
            xst[dim],
            ost[dim],
            M,
            L,
            k_per,
            split,
            2,
            big,
            stream,
        )
        return
    _launch(
        op, x.ptr, x.dtype, out.ptr, out.dtype, 0, acc, kshape, xk, ok, xst[dim], ost[dim], M, L, L, 1, 0, big, stream
    )


def cumsum(x: BufferLike, out: BufferLike, dim: int, *, stream: int = 0) -> None:
    """``out[..., i, ...] = sum(x[..., :i+1, ...])`` along ``dim`` (accumulated in float32 for half types, int64
    for integers and bool; ``out`` may be ``x``)."""
    _scan("cumsum", x, out, dim, stream)


def cumprod(x: BufferLike, out: BufferLike, dim: int, *, stream: int = 0) -> None:
    """``out[..., i, ...] = prod(x[..., :i+1, ...])`` along ``dim`` (same accumulation as ``cumsum``)."""
    _scan("cumprod", x, out, dim, stream)


__all__ = ["cumprod", "cumsum"]
