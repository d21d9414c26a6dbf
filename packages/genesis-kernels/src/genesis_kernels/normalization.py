"""LayerNorm and RMSNorm over the last dim, forward and backward, fused.

Rows are everything but the last dim; the leading dims must collapse to one row stride
(the ndarray layer makes a copy when they do not), the last dim may have any stride,
and stride 1 is a constexpr so rows load as vectors. Accumulation is fp32 (fp64 for
float64 inputs); the weight and bias may have another floating dtype than ``x``.

Forward (``norm_forward``) reads a row once and writes ``y`` once, plus one mean (LayerNorm)
and one rstd per row in the accumulation dtype; backward needs those, not ``y``. Rows up to
``_ONE_PASS_MAX`` stay in registers, ``BLOCK_R`` short rows per program; longer rows stream
in chunks (statistics by Chan's pairwise combination of chunk means and squared deviations,
then one read + write).

Backward (``norm_backward``) runs a fixed number of programs, each over a contiguous range of
rows: dx for each row in one go (``dx = rstd * (w*dy - xhat * mean(xhat*w*dy) - mean(w*dy))``,
the last term LayerNorm only) while the program keeps its share of ``dweight = sum(dy*xhat)``
and ``dbias = sum(dy)`` in registers. Each program writes its partial sums to one row of a
(programs, N) scratch; a second small kernel adds the rows up. No atomics, so no contention
and a deterministic result.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from genesis_storage import contiguous_strides

from .buffer import (
    INT32_LIMIT,
    BufferLike,
    accumulate_dtype,
    by_layout,
    collapse,
    dtype_info,
    extent,
    numel,
    tl_dtype,
)
from .elementwise import cast_to
from .mathlib import lib
from .runtime import Kernel, PlanTable, cdiv, next_pow2, ptr_type, scratch, sm_count

_ONE_PASS_MAX = 8192  # longest row held in registers whole
_CHUNK = 4096  # chunk of a longer row


@triton.jit
def _normalize_rows(v, mask, N, eps, RMS: tl.constexpr):
    """One tile of whole rows (zeros outside ``mask``) normalised: (xhat, mean, rstd); mean is unused for
    RMSNorm. The row math of every one-pass forward (this module's and add_norm's)."""
    if RMS:
        rs = lib.rsqrt(tl.sum(v * v, axis=1) / N + eps)
        return v * rs[:, None], rs, rs
    mu = tl.sum(v, axis=1) / N
    d = tl.where(mask, v - mu[:, None], 0.0)
    rs = lib.rsqrt(tl.sum(d * d, axis=1) / N + eps)
    return d * rs[:, None], mu, rs


@triton.jit
def _row_offsets(p, row_off, cols, ACC: tl.constexpr):
    """``row_off[:, None] + cols[None, :]``: a contiguous (rows, cols) tile of ``p`` in ``ACC`` math.

    Where ``p`` is narrower than ``ACC`` (a 16-bit tile in float32 math), the tile is marked as runs of as
    many elements as 16 bytes of ``ACC`` hold, the float32 tiles' vectors. Left to itself, Triton gives a
    16-bit tile 8 elements per thread where the float32 math around it has 4, another layout, and converts
    between the two through shared memory on every use: the bf16 backward of a norm at 8192 x 768 had 17
    barriers and 41 shared stores in its sm_90 code, against 6 and 6 for float32, and with the hint it has
    the float32 kernel's (tests/kernels/test_kernels_compile.py checks it). The one case it does not help,
    by these counts, is an all-bf16 norm over rows of 2,048 (one row per program): its forward goes from 5 to
    9 barriers and its backward from 10 to 7. On an H200, GPT-2's 24 mixed-width add + LayerNorm backwards
    went from 1.29 to 0.65 ms a step with it (benchmarks/profile_gpt_kernels.py)."""
    offsets = row_off[:, None] + cols[None, :]
    if p.dtype.element_ty.primitive_bitwidth < ACC.primitive_bitwidth:
        offsets = tl.max_contiguous(offsets, [1, 128 // ACC.primitive_bitwidth])
    return offsets


@triton.jit
def _affine(xhat, w, b, cols, c_mask, HAS_W: tl.constexpr, HAS_B: tl.constexpr, ACC: tl.constexpr):
    """``xhat * weight + bias`` (either absent) over columns ``cols``."""
    if HAS_W:
        xhat = xhat * cast_to(tl.load(w + cols, mask=c_mask, other=0), ACC)[None, :]
    if HAS_B:
        xhat = xhat + cast_to(tl.load(b + cols, mask=c_mask, other=0), ACC)[None, :]
    return xhat


@triton.jit
def _row_input_grad(v, g, wv, rs, mean, rows, r_mask, mask, N, RMS: tl.constexpr, HAS_W: tl.constexpr):
    """One tile of whole rows of the norm's backward: (xhat, the input's gradient) from the input ``v``, the
    output's gradient ``g``, the weight row ``wv`` (with HAS_W) and the saved rstd ``rs`` ((rows, 1)) and
    ``mean``. The row math of every one-pass backward (this module's and add_norm's)."""
    if RMS:
        xhat = v * rs
    else:
        mu = tl.load(mean + rows, mask=r_mask, other=0)[:, None]
        xhat = tl.where(mask, (v - mu) * rs, 0.0)
    if HAS_W:
        wdy = g * wv
    else:
        wdy = g
    c1 = (tl.sum(xhat * wdy, axis=1) / N)[:, None]
    if RMS:
        res = (wdy - xhat * c1) * rs
    else:
        res = (wdy - (xhat * c1 + (tl.sum(wdy, axis=1) / N)[:, None])) * rs
    return xhat, res


@triton.jit
def _norm_fwd_kernel(
    x,
    w,
    b,
    y,
    mean,
    rstd,
    R,
    N,
    xr,
    xc,
    yr,
    yc,
    eps,
    RMS: tl.constexpr,
    HAS_W: tl.constexpr,
    HAS_B: tl.constexpr,
    ACC: tl.constexpr,
    CONTIG: tl.constexpr,
    ONE_PASS: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        rows = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    else:
        rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = rows < R
    xrow = rows * xr
    yrow = rows * yr
    cols = tl.arange(0, BLOCK_N)
    if ONE_PASS:
        c_mask = cols < N
        mask = r_mask[:, None] & c_mask[None, :]
        if CONTIG:
            v = cast_to(tl.load(x + _row_offsets(x, xrow, cols, ACC), mask=mask, other=0), ACC)
        else:
            v = cast_to(tl.load(x + xrow[:, None] + cols[None, :] * xc, mask=mask, other=0), ACC)
        xhat, mu, rs = _normalize_rows(v, mask, N, eps, RMS)
        xhat = _affine(xhat, w, b, cols, c_mask, HAS_W, HAS_B, ACC)
        if CONTIG:
            tl.store(y + _row_offsets(y, yrow, cols, ACC), cast_to(xhat, y.dtype.element_ty), mask=mask)
        else:
            tl.store(y + yrow[:, None] + cols[None, :] * yc, cast_to(xhat, y.dtype.element_ty), mask=mask)
    else:
        if RMS:
            sq = tl.zeros([BLOCK_R, BLOCK_N], ACC)
            for start in range(0, N, BLOCK_N):
                c = start + cols
                mask = r_mask[:, None] & (c < N)[None, :]
                if CONTIG:
                    v = cast_to(tl.load(x + xrow[:, None] + c[None, :], mask=mask, other=0), ACC)
                else:
                    v = cast_to(tl.load(x + xrow[:, None] + c[None, :] * xc, mask=mask, other=0), ACC)
                sq += v * v
            rs = lib.rsqrt(tl.sum(sq, axis=1) / N + eps)
            mu = tl.zeros([BLOCK_R], ACC)
        else:
            # Chan et al.: fold each chunk's mean and sum of squared deviations into the running
            # ones, so the statistics take one read and no cancellation of large sums.
            mu = tl.zeros([BLOCK_R], ACC)
            m2 = tl.zeros([BLOCK_R], ACC)
            seen = tl.zeros([BLOCK_R], ACC)
            for start in range(0, N, BLOCK_N):
                c = start + cols
                mask = r_mask[:, None] & (c < N)[None, :]
                if CONTIG:
                    v = cast_to(tl.load(x + xrow[:, None] + c[None, :], mask=mask, other=0), ACC)
                else:
                    v = cast_to(tl.load(x + xrow[:, None] + c[None, :] * xc, mask=mask, other=0), ACC)
                cnt = tl.sum(tl.where(mask, 1.0, 0.0).to(ACC), axis=1)
                safe_cnt = tl.maximum(cnt, 1.0)
                cmu = tl.sum(v, axis=1) / safe_cnt
                d = tl.where(mask, v - cmu[:, None], 0.0)
                total = tl.maximum(seen + cnt, 1.0)
                delta = cmu - mu
                mu += delta * (cnt / total)
                m2 += tl.sum(d * d, axis=1) + delta * delta * (seen * cnt / total)
                seen += cnt
            rs = lib.rsqrt(m2 / N + eps)
        for start in range(0, N, BLOCK_N):
            c = start + cols
            c_mask = c < N
            mask = r_mask[:, None] & c_mask[None, :]
            if CONTIG:
                v = cast_to(tl.load(x + xrow[:, None] + c[None, :], mask=mask, other=0), ACC)
            else:
                v = cast_to(tl.load(x + xrow[:, None] + c[None, :] * xc, mask=mask, other=0), ACC)
            xhat = (v - mu[:, None]) * rs[:, None]
            if HAS_W:
                xhat = xhat * cast_to(tl.load(w + c, mask=c_mask, other=0), ACC)[None, :]
            if HAS_B:
                xhat = xhat + cast_to(tl.load(b + c, mask=c_mask, other=0), ACC)[None, :]
            if CONTIG:
                tl.store(y + yrow[:, None] + c[None, :], cast_to(xhat, y.dtype.element_ty), mask=mask)
            else:
                tl.store(y + yrow[:, None] + c[None, :] * yc, cast_to(xhat, y.dtype.element_ty), mask=mask)
    if not RMS:
        tl.store(mean + rows, mu, mask=r_mask)
    tl.store(rstd + rows, rs, mask=r_mask)


@triton.jit
def _norm_bwd_kernel(
    x,
    dy,
    w,
    mean,
    rstd,
    dx,
    pw,
    pb,
    R,
    N,
    RPP,
    xr,
    xc,
    gr,
    gc,
    dr,
    dc,
    RMS: tl.constexpr,
    HAS_W: tl.constexpr,
    W_GRAD: tl.constexpr,
    B_GRAD: tl.constexpr,
    ACC: tl.constexpr,
    CONTIG: tl.constexpr,
    ONE_PASS: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # Program ``pid`` owns rows [pid * RPP, (pid + 1) * RPP) and row ``pid`` of the partials pw / pb.
    pid = tl.program_id(0)
    if INT64:
        row0 = pid.to(tl.int64) * RPP
        prow = pid.to(tl.int64) * N
    else:
        row0 = pid * RPP
        prow = pid * N
    row_end = tl.minimum(row0 + RPP, R)
    cols = tl.arange(0, BLOCK_N)
    if ONE_PASS:
        c_mask = cols < N
        if HAS_W:
            wv = cast_to(tl.load(w + cols, mask=c_mask, other=0), ACC)[None, :]
        else:
            wv = 1.0  # (unread: _row_input_grad takes the gradient as it is)
        dw_acc = tl.zeros([BLOCK_R, BLOCK_N], ACC)
        db_acc = tl.zeros([BLOCK_R, BLOCK_N], ACC)
        for r0 in range(row0, row_end, BLOCK_R):
            rows = r0 + tl.arange(0, BLOCK_R)
            r_mask = rows < row_end
            mask = r_mask[:, None] & c_mask[None, :]
            if CONTIG:
                v = cast_to(tl.load(x + _row_offsets(x, rows * xr, cols, ACC), mask=mask, other=0), ACC)
                g = cast_to(tl.load(dy + _row_offsets(dy, rows * gr, cols, ACC), mask=mask, other=0), ACC)
            else:
                v = cast_to(tl.load(x + (rows * xr)[:, None] + cols[None, :] * xc, mask=mask, other=0), ACC)
                g = cast_to(tl.load(dy + (rows * gr)[:, None] + cols[None, :] * gc, mask=mask, other=0), ACC)
            rs = tl.load(rstd + rows, mask=r_mask, other=0)[:, None]
            xhat, res = _row_input_grad(v, g, wv, rs, mean, rows, r_mask, mask, N, RMS, HAS_W)
            if CONTIG:
                tl.store(dx + _row_offsets(dx, rows * dr, cols, ACC), cast_to(res, dx.dtype.element_ty), mask=mask)
            else:
                tl.store(dx + (rows * dr)[:, None] + cols[None, :] * dc, cast_to(res, dx.dtype.element_ty), mask=mask)
            if W_GRAD:
                dw_acc += g * xhat
            if B_GRAD:
                db_acc += g
        if W_GRAD:
            tl.store(pw + prow + cols, tl.sum(dw_acc, axis=0), mask=c_mask)
        if B_GRAD:
            tl.store(pb + prow + cols, tl.sum(db_acc, axis=0), mask=c_mask)
    else:
        # Long rows: two passes per row tile (the two row sums, then dx); the program's partial
        # sums live in its own scratch row, read and written back chunk by chunk.
        for start in range(0, N, BLOCK_N):
            c = start + cols
            if W_GRAD:
                tl.store(pw + prow + c, tl.zeros([BLOCK_N], ACC), mask=c < N)
            if B_GRAD:
                tl.store(pb + prow + c, tl.zeros([BLOCK_N], ACC), mask=c < N)
        for r0 in range(row0, row_end, BLOCK_R):
            rows = r0 + tl.arange(0, BLOCK_R)
            r_mask = rows < row_end
            rs = tl.load(rstd + rows, mask=r_mask, other=0)[:, None]
            if RMS:
                mu = tl.zeros([BLOCK_R, 1], ACC)
            else:
                mu = tl.load(mean + rows, mask=r_mask, other=0)[:, None]
            s1 = tl.zeros([BLOCK_R, BLOCK_N], ACC)
            s2 = tl.zeros([BLOCK_R, BLOCK_N], ACC)
            for start in range(0, N, BLOCK_N):
                c = start + cols
                c_mask = c < N
                mask = r_mask[:, None] & c_mask[None, :]
                if CONTIG:
                    v = cast_to(tl.load(x + (rows * xr)[:, None] + c[None, :], mask=mask, other=0), ACC)
                    g = cast_to(tl.load(dy + (rows * gr)[:, None] + c[None, :], mask=mask, other=0), ACC)
                else:
                    v = cast_to(tl.load(x + (rows * xr)[:, None] + c[None, :] * xc, mask=mask, other=0), ACC)
                    g = cast_to(tl.load(dy + (rows * gr)[:, None] + c[None, :] * gc, mask=mask, other=0), ACC)
                xhat = tl.where(mask, (v - mu) * rs, 0.0)
                if HAS_W:
                    g = g * cast_to(tl.load(w + c, mask=c_mask, other=0), ACC)[None, :]
                s1 += xhat * g
                s2 += g
            c1 = (tl.sum(s1, axis=1) / N)[:, None]
            c2 = (tl.sum(s2, axis=1) / N)[:, None]
            for start in range(0, N, BLOCK_N):
                c = start + cols
                c_mask = c < N
                mask = r_mask[:, None] & c_mask[None, :]
                if CONTIG:
                    v = cast_to(tl.load(x + (rows * xr)[:, None] + c[None, :], mask=mask, other=0), ACC)
                    g = cast_to(tl.load(dy + (rows * gr)[:, None] + c[None, :], mask=mask, other=0), ACC)
                else:
                    v = cast_to(tl.load(x + (rows * xr)[:, None] + c[None, :] * xc, mask=mask, other=0), ACC)
                    g = cast_to(tl.load(dy + (rows * gr)[:, None] + c[None, :] * gc, mask=mask, other=0), ACC)
                xhat = tl.where(mask, (v - mu) * rs, 0.0)
                if HAS_W:
                    wdy = g * cast_to(tl.load(w + c, mask=c_mask, other=0), ACC)[None, :]
                else:
                    wdy = g
                if RMS:
                    res = (wdy - xhat * c1) * rs
                else:
                    res = (wdy - (xhat * c1 + c2)) * rs
                if CONTIG:
                    tl.store(dx + (rows * dr)[:, None] + c[None, :], cast_to(res, dx.dtype.element_ty), mask=mask)
                else:
                    tl.store(dx + (rows * dr)[:, None] + c[None, :] * dc, cast_to(res, dx.dtype.element_ty), mask=mask)
                if W_GRAD:
                    part = tl.load(pw + prow + c, mask=c_mask, other=0)
                    tl.store(pw + prow + c, part + tl.sum(g * xhat, axis=0), mask=c_mask)
                if B_GRAD:
                    part = tl.load(pb + prow + c, mask=c_mask, other=0)
                    tl.store(pb + prow + c, part + tl.sum(g, axis=0), mask=c_mask)


@triton.jit
def _column_sum_kernel(
    p, out, out2, P, N, os, os2, ACC: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr
):  # fmt: skip
    """out[c] = sum over the P rows of the (P, N) partials ``p``; zeros when P == 0. Programs of grid
    axis 1 = 1 (a launch over both of LayerNorm's parameter gradients) sum the (P, N) partials that
    follow into ``out2``, of the same dtype."""
    if tl.program_id(1) == 1:
        p += P * N
        out = out2
        os = os2
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_mask = cols < N
    acc = tl.zeros([BLOCK_P, BLOCK_C], ACC)
    for p0 in range(0, P, BLOCK_P):
        prows = p0 + tl.arange(0, BLOCK_P)
        mask = (prows < P)[:, None] & c_mask[None, :]
        acc += tl.load(p + prows[:, None] * N + cols[None, :], mask=mask, other=0)
    tl.store(out + cols * os, cast_to(tl.sum(acc, axis=0), out.dtype.element_ty), mask=c_mask)


_FWD = Kernel(_norm_fwd_kernel)
_BWD = Kernel(_norm_bwd_kernel)
_COLSUM = Kernel(_column_sum_kernel)


RowLayout = tuple[int, int, tuple[tuple[int, int], ...], bool]


@by_layout
def _as_rows(bufs: list[BufferLike], what: str) -> RowLayout:
    """(rows, N, ((row stride, column stride) per buffer), needs int64) of same-shape buffers over the last dim."""
    shape = tuple(bufs[0].shape)
    for buf in bufs:
        if tuple(buf.shape) != shape:
            raise ValueError(f"{what}: shape mismatch: {tuple(buf.shape)} vs {shape}")
    if not shape:
        raise ValueError(f"{what}: expected at least one dim, got a 0-dim buffer")
    n = shape[-1]
    rshape, rstrides = collapse(shape[:-1], [tuple(buf.strides[:-1]) for buf in bufs], reorder=False)
    if len(rshape) > 1:
        raise ValueError(f"{what}: the leading dims of shape {shape} do not collapse to one row stride")
    rows = rshape[0] if rshape else (0 if 0 in shape[:-1] else 1)
    layout = tuple([(rs[0] if rshape else 0, buf.strides[-1]) for buf, rs in zip(bufs, rstrides)])
    big = max([rows * n] + [extent(tuple(b.shape), tuple(b.strides)) for b in bufs]) >= INT32_LIMIT - 65536
    return rows, n, layout, big


def _check_vector(buf: BufferLike | None, n: int, name: str, strided: bool = False) -> None:
    """``buf`` is None or of shape (N,); contiguous unless ``strided`` (outputs are written by stride)."""
    if buf is None:
        return
    if tuple(buf.shape) != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {tuple(buf.shape)}")
    if not strided and n > 1 and buf.strides[0] != 1:
        raise ValueError(f"{name}: expected a contiguous vector, got stride {buf.strides[0]}")


def _aligned(ptrs: dict[str, int], ints: dict[str, int]) -> tuple[str, ...]:
    """The pointer and integer arguments divisible by 16 (bytes / elements): loads vectorise."""
    return tuple([k for k, p in ptrs.items() if p % 16 == 0] + [k for k, v in ints.items() if v % 16 == 0])


def _warps(block: int) -> int:
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def norm_forward(
    x: BufferLike,
    weight: BufferLike | None,
    bias: BufferLike | None,
    out: BufferLike,
    mean: BufferLike | None,
    rstd: BufferLike,
    *,
    eps: float,
    rms: bool = False,
    stream: int = 0,
) -> None:
    """LayerNorm (``rms=False``) or RMSNorm of ``x`` over its last dim into ``out``.

    ``mean`` (LayerNorm only) and ``rstd`` receive one value per row, contiguous, in the
    accumulation dtype (float32; float64 for float64 ``x``). ``weight`` / ``bias`` (shape (N,),
    any floating dtype) are optional; RMSNorm takes no bias.
    """
    # Every norm layer's host path: the launch depends only on the layouts, dtypes, alignment, eps and
    # the flavour, so it is worked out once per such signature (_plan_forward) and a call passes its
    # addresses (an absent weight, bias or mean reads as rstd's, never dereferenced).
    r = rstd.ptr
    sig = (
        tuple(x.shape), tuple(x.strides), x.dtype, tuple(out.shape), tuple(out.strides), out.dtype,
        _vector_sig(weight), _vector_sig(bias), _vector_sig(mean), _vector_sig(rstd), eps, rms,
        x.ptr % 16, out.ptr % 16, (r if weight is None else weight.ptr) % 16, (r if bias is None else bias.ptr) % 16,
    )  # fmt: skip
    plan = _FWD_PLANS.get(sig)
    if plan is None:
        plan = _FWD_PLANS.put(sig, _plan_forward(x, weight, bias, out, mean, rstd, eps, rms))
    if plan is _NOTHING:
        return
    fn, grid, tail = plan
    w = r if weight is None else weight.ptr
    b = r if bias is None else bias.ptr
    fn(grid, stream, (x.ptr, w, b, out.ptr, r if mean is None else mean.ptr, r, *tail))


def _vector_sig(t: BufferLike | None) -> tuple | None:
    return None if t is None else (tuple(t.shape), tuple(t.strides), t.dtype)


_FWD_PLANS = PlanTable()
_NOTHING = ()  # the plan of a call with nothing to compute


def _plan_forward(
    x: BufferLike,
    weight: BufferLike | None,
    bias: BufferLike | None,
    out: BufferLike,
    mean: BufferLike | None,
    rstd: BufferLike,
    eps: float,
    rms: bool,
) -> tuple:
    """norm_forward's checks and its kernel, grid and arguments after the six addresses, for one
    signature (_NOTHING where there is nothing to compute)."""
    rows, n, ((xr, xc), (yr, yc)), big = _as_rows([x, out], "norm_forward")
    _check_vector(weight, n, "weight")
    _check_vector(bias, n, "bias")
    if rms and bias is not None:
        raise ValueError("norm_forward: rms_norm takes no bias")
    if rows == 0 or n == 0:
        return _NOTHING
    acc = accumulate_dtype(x.dtype)
    for name, stat in (("mean", mean), ("rstd", rstd)):
        if stat is not None and (
            stat.dtype != acc or numel(stat.shape) != rows or tuple(stat.strides) != contiguous_strides(stat.shape)
        ):
            raise ValueError(f"norm_forward: {name} must be a contiguous {acc} buffer of {rows} elements")
    if not rms and mean is None:
        raise ValueError("norm_forward: layer norm needs a mean buffer")
    contig = xc == 1 and yc == 1
    one_pass = n <= _ONE_PASS_MAX
    block_n = next_pow2(n) if one_pass else _CHUNK
    block_r = max(1, min(next_pow2(rows), 2048 // block_n))
    w_ptr = weight.ptr if weight is not None else rstd.ptr  # never read without HAS_W
    b_ptr = bias.ptr if bias is not None else rstd.ptr
    aligned = _aligned({"x": x.ptr, "y": out.ptr, "w": w_ptr, "b": b_ptr}, {"N": n, "xr": xr, "yr": yr})
    wdt = weight.dtype if weight is not None else acc
    bdt = bias.dtype if bias is not None else acc
    key: tuple[object, ...] = (x.dtype, out.dtype, wdt, bdt, rms, weight is None, bias is None, contig, one_pass)
    key += (big, block_r, block_n, aligned)
    fn = _FWD.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(x.dtype),
            "w": ptr_type(wdt),
            "b": ptr_type(bdt),
            "y": ptr_type(out.dtype),
            "mean": ptr_type(acc),
            "rstd": ptr_type(acc),
            **dict.fromkeys(("R", "N", "xr", "xc", "yr", "yc"), it),
            "eps": dtype_info(acc).triton,
        }
        consts = dict(
            RMS=rms,
            HAS_W=weight is not None,
            HAS_B=bias is not None,
            ACC=tl_dtype(acc),
            CONTIG=contig,
            ONE_PASS=one_pass,
            INT64=big,
            BLOCK_R=block_r,
            BLOCK_N=block_n,
        )
        fn = _FWD.build(key, types, consts, aligned, num_warps=_warps(block_r * block_n))
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    return fn, (cdiv(rows, block_r), 1, 1), (rows, n, xr, xc, yr, yc, float(eps), *fn._consts)  # type: ignore[attr-defined]


def _programs(rows: int, block_r: int, block_n: int) -> int:
    """Backward programs: enough to fill the GPU a few times over, each over a run of rows."""
    # About as many as fit at once (the registers of the dweight / dbias accumulators bound it).
    per_sm = 8 if block_n <= 1024 else 4 if block_n <= 2048 else 2 if block_n <= 4096 else 1
    return max(1, min(cdiv(rows, block_r), sm_count() * per_sm))


def norm_backward(
    x: BufferLike,
    dy: BufferLike,
    weight: BufferLike | None,
    mean: BufferLike | None,
    rstd: BufferLike,
    dx: BufferLike,
    dweight: BufferLike | None = None,
    dbias: BufferLike | None = None,
    *,
    rms: bool = False,
    stream: int = 0,
) -> None:
    """Gradients of :func:`norm_forward` from ``x``, ``dy`` and the saved ``mean`` / ``rstd``.

    Writes ``dx`` (shape of ``x``), and ``dweight`` / ``dbias`` (shape (N,), any floating dtype)
    when given: per-program partial sums in a (programs, N) scratch, then one column-sum launch.
    """
    # As the forward: the launches (the row kernel, then the column sums of its partials) are worked out
    # once per signature (_plan_backward) and a call passes its addresses and the partials' scratch.
    r = rstd.ptr
    sig = (
        tuple(x.shape), tuple(x.strides), x.dtype, tuple(dy.shape), tuple(dy.strides), dy.dtype,
        tuple(dx.shape), tuple(dx.strides), dx.dtype, _vector_sig(weight), _vector_sig(mean), _vector_sig(rstd),
        _vector_sig(dweight), _vector_sig(dbias), rms, x.ptr % 16, dy.ptr % 16, dx.ptr % 16,
        (r if weight is None else weight.ptr) % 16, None if dweight is None else dweight.ptr % 16,
        None if dbias is None else dbias.ptr % 16, r % 16,  # (rstd's: the partials' place without a scratch)
    )  # fmt: skip
    plan = _BWD_PLANS.get(sig)
    if plan is None:
        plan = _BWD_PLANS.put(sig, _plan_backward(x, dy, weight, mean, rstd, dx, dweight, dbias, rms))
    if plan is _NOTHING:
        return
    scratch_bytes, pb_offset, main, sums = plan
    pw = scratch(scratch_bytes, stream) if scratch_bytes else r  # (256-byte aligned: the plan relies on it)
    pb = pw + pb_offset
    if main is not None:
        fn, grid, tail = main
        w = r if weight is None else weight.ptr
        fn(grid, stream, (x.ptr, dy.ptr, w, r if mean is None else mean.ptr, r, dx.ptr, pw, pb, *tail))
    for fn, grid, from_pb, both, tail in sums:
        out = dweight if dweight is not None and not from_pb else dbias
        second = dbias if both else out
        fn(grid, stream, (pb if from_pb else pw, out.ptr, second.ptr, *tail))  # type: ignore[union-attr]


_BWD_PLANS = PlanTable()


def _plan_backward(
    x: BufferLike,
    dy: BufferLike,
    weight: BufferLike | None,
    mean: BufferLike | None,
    rstd: BufferLike,
    dx: BufferLike,
    dweight: BufferLike | None,
    dbias: BufferLike | None,
    rms: bool,
) -> tuple:
    """norm_backward's checks and launches for one signature: (partials' scratch bytes, dbias partials'
    offset past dweight's, the row kernel's (kernel, grid, arguments after its eight addresses) or None,
    the column sums as (kernel, grid, from the dbias partials, both outputs in one launch, arguments after
    the three addresses)); _NOTHING where there is nothing to compute."""
    rows, n, ((xr, xc), (gr, gc), (dr, dc)), big = _as_rows([x, dy, dx], "norm_backward")
    _check_vector(weight, n, "weight")
    _check_vector(dweight, n, "dweight", strided=True)
    _check_vector(dbias, n, "dbias", strided=True)
    if rms and dbias is not None:
        raise ValueError("norm_backward: rms_norm has no bias")
    if not rms and mean is None:
        raise ValueError("norm_backward: layer norm needs the saved mean")
    if n == 0:
        return _NOTHING
    acc = accumulate_dtype(x.dtype)
    one_pass = n <= _ONE_PASS_MAX
    block_n = next_pow2(n) if one_pass else _CHUNK
    block_r = max(1, min(next_pow2(max(rows, 1)), 2048 // block_n))
    programs = _programs(rows, block_r, block_n) if rows else 0
    rpp = cdiv(rows, programs) if programs else 0
    programs = cdiv(rows, rpp) if rpp else 0
    item = dtype_info(acc).itemsize
    n_parts = (dweight is not None) + (dbias is not None)
    scratch_bytes = max(1, n_parts * programs * n * item) if n_parts else 0
    pb_offset = programs * n * item if dweight is not None else 0
    pw = 0 if n_parts else rstd.ptr  # (the scratch is 256-byte aligned: its place is enough to plan with)
    pb = pw + pb_offset
    main = None
    big = big or programs * n >= INT32_LIMIT - 65536
    if programs:
        contig = xc == 1 and gc == 1 and dc == 1
        w_ptr = weight.ptr if weight is not None else rstd.ptr
        aligned = _aligned(
            {"x": x.ptr, "dy": dy.ptr, "dx": dx.ptr, "w": w_ptr, "pw": pw, "pb": pb},
            {"N": n, "xr": xr, "gr": gr, "dr": dr},
        )
        wdt = weight.dtype if weight is not None else acc
        flags = (weight is None, dweight is not None, dbias is not None)
        key = (x.dtype, dy.dtype, dx.dtype, wdt, rms, flags, contig, one_pass, big, block_r, block_n, aligned)
        fn = _BWD.cache.get(key)
        if fn is None:
            it = "i64" if big else "i32"
            types = {
                "x": ptr_type(x.dtype),
                "dy": ptr_type(dy.dtype),
                "w": ptr_type(wdt),
                "mean": ptr_type(acc),
                "rstd": ptr_type(acc),
                "dx": ptr_type(dx.dtype),
                "pw": ptr_type(acc),
                "pb": ptr_type(acc),
                **dict.fromkeys(("R", "N", "RPP", "xr", "xc", "gr", "gc", "dr", "dc"), it),
            }
            consts = dict(
                RMS=rms,
                HAS_W=weight is not None,
                W_GRAD=dweight is not None,
                B_GRAD=dbias is not None,
                ACC=tl_dtype(acc),
                CONTIG=contig,
                ONE_PASS=one_pass,
                INT64=big,
                BLOCK_R=block_r,
                BLOCK_N=block_n,
            )
            fn = _BWD.build(key, types, consts, aligned, num_warps=_warps(block_r * block_n))
            fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
        main = (fn, (programs, 1, 1), (rows, n, rpp, xr, xc, gr, gc, dr, dc, *fn._consts))  # type: ignore[attr-defined]
    sums = []
    if dweight is not None and dbias is not None and dweight.dtype == dbias.dtype:
        # one launch for both (pb follows pw)
        fn, grid, tail = _column_sum_launch(True, programs, n, dweight, acc, dbias)
        sums.append((fn, grid, False, True, tail))
    else:
        for target, from_pb, p in ((dweight, False, pw), (dbias, True, pb)):
            if target is not None:
                fn, grid, tail = _column_sum_launch(p % 16 == 0, programs, n, target, acc, None)
                sums.append((fn, grid, from_pb, False, tail))
    return scratch_bytes, pb_offset, main, tuple(sums)


def _column_sum(
    ptr: int, programs: int, n: int, out: BufferLike, acc: str, stream: int, out2: BufferLike | None = None
) -> None:
    """``out`` = the column sums of the (programs, n) partials at ``ptr``; with ``out2`` (``out``'s dtype)
    also ``out2`` = those of the partials right after them, in the same launch."""
    fn, grid, tail = _column_sum_launch(ptr % 16 == 0, programs, n, out, acc, out2)
    fn(grid, stream, (ptr, out.ptr, (out if out2 is None else out2).ptr, *tail))


def _column_sum_launch(
    p_aligned: bool, programs: int, n: int, out: BufferLike, acc: str, out2: BufferLike | None
) -> tuple[Any, tuple[int, int, int], tuple]:
    """_column_sum's kernel, grid and arguments after its three addresses (partials, out, out2)."""
    block_p, block_c = 32, 64
    parts = 1 if out2 is None else 2
    it = "i64" if parts * programs * n >= INT32_LIMIT - 65536 else "i32"
    second = out if out2 is None else out2
    key = (out.dtype, acc, it, p_aligned, out.ptr % 16 == 0, second.ptr % 16 == 0)
    fn = _COLSUM.cache.get(key)
    if fn is None:
        types = {
            "p": ptr_type(acc), "out": ptr_type(out.dtype), "out2": ptr_type(out.dtype), "P": it, "N": it,
            "os": it, "os2": it,
        }  # fmt: skip
        consts = dict(ACC=tl_dtype(acc), BLOCK_P=block_p, BLOCK_C=block_c)
        aligned = [name for name, a in (("p", p_aligned), ("out", out.ptr % 16 == 0), ("out2", second.ptr % 16 == 0))
                   if a]  # fmt: skip
        fn = _COLSUM.build(key, types, consts, aligned, num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    return fn, (cdiv(n, block_c), parts, 1), (programs, n, out.strides[0], second.strides[0], *fn._consts)  # type: ignore[attr-defined]
