"""Softmax and log-softmax over the last dim, forward and backward, any strides.

Every dim but the last is a row (collapsed, addressed through ``offset_of``); the
last dim may have any stride, and stride 1 is a constexpr so rows load as vectors.
Rows up to ``_ONE_PASS_MAX`` elements are held in registers, ``BLOCK_R`` rows per program:
one read, one write. Longer rows stream in chunks with the online max/sum rescaling
(one read for the statistics, one read + write for the result). fp32 accumulation.

The limit and the warps per tile come from benchmarks/sweep_softmax.py on an H100: the two-pass
kernel reads a row twice and pays two exponentials per element in its first pass, which put it at
0.71-1.0x torch for rows of 8,192-16,384 elements, where the one-pass tile reached 1.0-1.3x
(fp32) and 2.2x (bf16); a 32,768-element bf16 row, 0.73x two-pass, 0.88x in one pass with 32 warps.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import INT32_LIMIT, MAX_RANK, BufferLike, by_layout, collapse, extent, numel, pad_dims, tl_dtype
from .elementwise import cast_to, div_rn
from .mathlib import lib
from .runtime import Kernel, cdiv, next_pow2, ptr_type
from .strided import offset_of, stride_types

_ONE_PASS_MAX = 32768


def _warps(tile: int) -> int:
    """Warps for a one-pass tile of ``tile`` elements (rows x padded row): at most 32 elements per
    thread from 8,192 on, where more would crowd the registers (sweep: 16 and 32 warps won there)."""
    if tile <= 1024:
        return 4
    if tile <= 4096:
        return 8
    return max(16, tile // 1024)


@triton.jit
def _softmax_kernel(
    x,
    out,
    R,
    N,
    xn,
    on,
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
    LOG: tl.constexpr,
    ACC: tl.constexpr,
    ROW_RANK: tl.constexpr,
    N_CONTIG: tl.constexpr,
    ONE_PASS: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        r = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    else:
        r = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = r < R
    xr = offset_of(r, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, ROW_RANK)
    orow = offset_of(r, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, ROW_RANK)
    cols = tl.arange(0, BLOCK_N)
    if ONE_PASS:
        mask = r_mask[:, None] & (cols < N)[None, :]
        if N_CONTIG:
            xo = xr[:, None] + cols[None, :]
            oo = orow[:, None] + cols[None, :]
        else:
            xo = xr[:, None] + cols[None, :] * xn
            oo = orow[:, None] + cols[None, :] * on
        v = cast_to(tl.load(x + xo, mask=mask, other=float("-inf")), ACC)
        m = tl.max(v, axis=1)
        e = lib.exp(v - m[:, None])
        s = tl.sum(e, axis=1)
        if LOG:
            res = v - m[:, None] - lib.log(s)[:, None]
        else:
            res = div_rn(e, s[:, None])
        tl.store(out + oo, cast_to(res, out.dtype.element_ty), mask=mask)
    else:
        # One row per program (BLOCK_R == 1): running max and rescaled sum per lane, then folded.
        mx = tl.full([BLOCK_R, BLOCK_N], float("-inf"), ACC)
        sm = tl.zeros([BLOCK_R, BLOCK_N], ACC)
        for start in range(0, N, BLOCK_N):
            c = start + cols
            mask = r_mask[:, None] & (c < N)[None, :]
            if N_CONTIG:
                xo = xr[:, None] + c[None, :]
            else:
                xo = xr[:, None] + c[None, :] * xn
            v = cast_to(tl.load(x + xo, mask=mask, other=float("-inf")), ACC)
            new = tl.maximum(mx, v)
            safe = tl.where(new == float("-inf"), 0.0, new)
            sm = sm * lib.exp(mx - safe) + lib.exp(v - safe)
            mx = new
        m = tl.max(mx, axis=1)
        safe_m = tl.where(m == float("-inf"), 0.0, m)
        s = tl.sum(sm * lib.exp(mx - safe_m[:, None]), axis=1)
        log_s = lib.log(s)
        for start in range(0, N, BLOCK_N):
            c = start + cols
            mask = r_mask[:, None] & (c < N)[None, :]
            if N_CONTIG:
                xo = xr[:, None] + c[None, :]
                oo = orow[:, None] + c[None, :]
            else:
                xo = xr[:, None] + c[None, :] * xn
                oo = orow[:, None] + c[None, :] * on
            v = cast_to(tl.load(x + xo, mask=mask, other=float("-inf")), ACC)
            if LOG:
                res = v - m[:, None] - log_s[:, None]
            else:
                res = div_rn(lib.exp(v - m[:, None]), s[:, None])
            tl.store(out + oo, cast_to(res, out.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_bwd_kernel(
    y,
    dy,
    dx,
    R,
    N,
    yn,
    gn,
    dn,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    y0,
    y1,
    y2,
    y3,
    y4,
    y5,
    y6,
    y7,
    g0,
    g1,
    g2,
    g3,
    g4,
    g5,
    g6,
    g7,
    d0,
    d1,
    d2,
    d3,
    d4,
    d5,
    d6,
    d7,
    LOG: tl.constexpr,
    ACC: tl.constexpr,
    ROW_RANK: tl.constexpr,
    N_CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # softmax:     dx = y * (dy - sum(dy * y))
    # log_softmax: dx = dy - exp(y) * sum(dy)
    pid = tl.program_id(0)
    if INT64:
        r = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    else:
        r = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = r < R
    yr = offset_of(r, S1, S2, S3, S4, S5, S6, S7, y0, y1, y2, y3, y4, y5, y6, y7, ROW_RANK)
    gr = offset_of(r, S1, S2, S3, S4, S5, S6, S7, g0, g1, g2, g3, g4, g5, g6, g7, ROW_RANK)
    dr = offset_of(r, S1, S2, S3, S4, S5, S6, S7, d0, d1, d2, d3, d4, d5, d6, d7, ROW_RANK)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_R, BLOCK_N], ACC)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        mask = r_mask[:, None] & (c < N)[None, :]
        if N_CONTIG:
            g = cast_to(tl.load(dy + gr[:, None] + c[None, :], mask=mask, other=0), ACC)
        else:
            g = cast_to(tl.load(dy + gr[:, None] + c[None, :] * gn, mask=mask, other=0), ACC)
        if LOG:
            acc += g
        else:
            if N_CONTIG:
                yv = cast_to(tl.load(y + yr[:, None] + c[None, :], mask=mask, other=0), ACC)
            else:
                yv = cast_to(tl.load(y + yr[:, None] + c[None, :] * yn, mask=mask, other=0), ACC)
            acc += g * yv
    total = tl.sum(acc, axis=1)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        mask = r_mask[:, None] & (c < N)[None, :]
        if N_CONTIG:
            g = cast_to(tl.load(dy + gr[:, None] + c[None, :], mask=mask, other=0), ACC)
            yv = cast_to(tl.load(y + yr[:, None] + c[None, :], mask=mask, other=0), ACC)
            do = dr[:, None] + c[None, :]
        else:
            g = cast_to(tl.load(dy + gr[:, None] + c[None, :] * gn, mask=mask, other=0), ACC)
            yv = cast_to(tl.load(y + yr[:, None] + c[None, :] * yn, mask=mask, other=0), ACC)
            do = dr[:, None] + c[None, :] * dn
        if LOG:
            res = g - lib.exp(yv) * total[:, None]
        else:
            res = yv * (g - total[:, None])
        tl.store(dx + do, cast_to(res, dx.dtype.element_ty), mask=mask)


_SOFTMAX = Kernel(_softmax_kernel)
_SOFTMAX_BWD = Kernel(_softmax_bwd_kernel)


@by_layout
def _rows(bufs: list[BufferLike]) -> tuple[int, int, tuple[int, ...], tuple[tuple[int, ...], ...], bool]:
    """Collapse the row dims (all but the last) of several same-shape buffers."""
    shape = tuple(bufs[0].shape)
    for b in bufs:
        if tuple(b.shape) != shape:
            raise ValueError(f"shape mismatch: {tuple(b.shape)} vs {shape}")
    shape_rows: tuple[int, ...]
    strides: list[tuple[int, ...]]
    if not shape:
        shape_rows, n = (), 1
        strides = [() for _ in bufs]
    else:
        shape_rows, n = shape[:-1], shape[-1]
        strides = [tuple(b.strides[:-1]) for b in bufs]
    rshape, rstrides = collapse(shape_rows, strides)
    if not rshape:
        rshape, rstrides = (1,), [(0,) for _ in bufs]
    if len(rshape) > MAX_RANK:
        raise ValueError("rank after collapsing exceeds 8")
    rows = numel(shape_rows)
    big = max([rows * n] + [extent(tuple(b.shape), tuple(b.strides)) for b in bufs]) >= INT32_LIMIT - 65536
    return rows, n, rshape, tuple(rstrides), big


def _inner_stride(b: BufferLike) -> int:
    return b.strides[-1] if b.shape else 1


def softmax(x: BufferLike, out: BufferLike, *, log: bool = False, stream: int = 0) -> None:
    """(Log-)softmax of ``x`` over its last dim into ``out``; fp32 (fp64 for float64) accumulation."""
    rows, n, rshape, (xs, os_), big = _rows([x, out])
    if rows * n == 0:
        return
    acc = "float64" if x.dtype == "float64" else "float32"
    xn, on = _inner_stride(x), _inner_stride(out)
    contig = xn == 1 and on == 1
    one_pass = n <= _ONE_PASS_MAX
    block_n = next_pow2(n) if one_pass else 2048
    block_r = max(1, min(next_pow2(rows), 2048 // block_n)) if one_pass else 1
    xs_p, os_p = pad_dims(xs, 0), pad_dims(os_, 0)
    # With N divisible by 16 the edge mask is uniform over 16 elements, so loads vectorise.
    aligned = tuple(
        [n for n, p in (("x", x.ptr), ("out", out.ptr)) if p % 16 == 0]
        + ["N"] * (n % 16 == 0)
        + [f"x{d}" for d in range(MAX_RANK) if xs_p[d] % 16 == 0]
        + [f"o{d}" for d in range(MAX_RANK) if os_p[d] % 16 == 0]
    )
    key = (x.dtype, out.dtype, log, len(rshape), contig, one_pass, big, block_r, block_n, aligned)
    fn = _SOFTMAX.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(x.dtype),
            "out": ptr_type(out.dtype),
            "R": it,
            "N": it,
            "xn": it,
            "on": it,
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("x", it),
            **stride_types("o", it),
        }
        consts = dict(
            LOG=log,
            ACC=tl_dtype(acc),
            ROW_RANK=len(rshape),
            N_CONTIG=contig,
            ONE_PASS=one_pass,
            INT64=big,
            BLOCK_R=block_r,
            BLOCK_N=block_n,
        )
        warps = _warps(block_r * block_n) if one_pass else 8
        fn = _SOFTMAX.build(key, types, consts, aligned, num_warps=warps)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (cdiv(rows, block_r), 1, 1),
        stream,
        (x.ptr, out.ptr, rows, n, xn, on, *pad_dims(rshape[1:], 1, 7), *xs_p, *os_p, *fn._consts),  # type: ignore[attr-defined]
    )


def softmax_backward(y: BufferLike, dy: BufferLike, dx: BufferLike, *, log: bool = False, stream: int = 0) -> None:
    """Gradient of (log-)softmax over the last dim, given its output ``y`` and ``dy``."""
    rows, n, rshape, (ys, gs, ds), big = _rows([y, dy, dx])
    if rows * n == 0:
        return
    acc = "float64" if y.dtype == "float64" else "float32"
    yn, gn, dn = _inner_stride(y), _inner_stride(dy), _inner_stride(dx)
    contig = yn == 1 and gn == 1 and dn == 1
    block_n = min(next_pow2(n), 2048)
    block_r = max(1, min(next_pow2(rows), 2048 // block_n))
    padded = (pad_dims(ys, 0), pad_dims(gs, 0), pad_dims(ds, 0))
    aligned = tuple(
        [n for n, p in (("y", y.ptr), ("dy", dy.ptr), ("dx", dx.ptr)) if p % 16 == 0]
        + ["N"] * (n % 16 == 0)
        + [f"{c}{d}" for c, st in zip("ygd", padded) for d in range(MAX_RANK) if st[d] % 16 == 0]
    )
    key = (y.dtype, dy.dtype, dx.dtype, log, len(rshape), contig, big, block_r, block_n, aligned)
    fn = _SOFTMAX_BWD.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "y": ptr_type(y.dtype),
            "dy": ptr_type(dy.dtype),
            "dx": ptr_type(dx.dtype),
            "R": it,
            "N": it,
            "yn": it,
            "gn": it,
            "dn": it,
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("y", it),
            **stride_types("g", it),
            **stride_types("d", it),
        }
        consts = dict(
            LOG=log,
            ACC=tl_dtype(acc),
            ROW_RANK=len(rshape),
            N_CONTIG=contig,
            INT64=big,
            BLOCK_R=block_r,
            BLOCK_N=block_n,
        )
        fn = _SOFTMAX_BWD.build(key, types, consts, aligned, num_warps=4 if block_r * block_n <= 1024 else 8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (cdiv(rows, block_r), 1, 1),
        stream,
        (
            y.ptr,
            dy.ptr,
            dx.ptr,
            rows,
            n,
            yn,
            gn,
            dn,
            *pad_dims(rshape[1:], 1, 7),
            *pad_dims(ys, 0),
            *pad_dims(gs, 0),
            *pad_dims(ds, 0),
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )
