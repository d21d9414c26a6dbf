"""Fused cross-entropy over logits with class-index targets: forward and backward, any row strides.

Every dim of ``x`` but the last is a row (a sample), the last holds the C classes (any stride;
stride 1 is a constexpr so rows load as vectors). Per row, with ``w`` the class weights (ones
when absent), ``W = sum(w)``, ``e`` the label smoothing and ``y`` the target:

    lse  = logsumexp(x)                                   (online: running max, rescaled sum)
    loss = (1 - e) * w[y] * (lse - x[y]) + e / C * (W * lse - sum_c w[c] * x[c])
    dx   = scale * (softmax(x) * ((1 - e) * w[y] + e * W / C) - (1 - e) * w[y] * [c == y] - e / C * w[c])

(torch's label-smoothing formula). Rows whose target is ``ignore_index`` give loss 0 and a zero
gradient. The forward reads the logits once and writes three per-row values: the loss, ``lse``
(for the backward) and the row's weight ``w[y]`` (0 when ignored; "mean" divides by their sum);
nothing of the logits' size is written. The backward reads the logits once more and writes the
gradient once, in the gradient buffer's own dtype (bf16 logits -> bf16 gradient), recomputing the
softmax from ``lse``. fp32 accumulation (fp64 for float64 logits).

An out-of-range target is never read. Unless ``check=False``, a small kernel first records any in
the per-stream error block of ``indexed`` and the launcher raises torch's IndexError: one stream
synchronisation, taken before the forward is queued so that the GPU does not idle behind it. Targets
whose bounds the host knows (``target_range``: uploaded from host data) need neither.
"""

from __future__ import annotations

import ctypes

import numpy as np
import triton
import triton.language as tl

from . import capture, indexed, sync_debug
from . import runtime as rt
from .buffer import (
    INT32_LIMIT,
    MAX_RANK,
    BufferLike,
    accumulate_dtype,
    by_layout,
    collapse,
    dtype_info,
    extent,
    numel,
    pad_dims,
    tl_dtype,
)
from .elementwise import cast_to
from .mathlib import lib
from .runtime import Kernel, cdiv, next_pow2, ptr_type
from .strided import offset_of, stride_types


@triton.jit
def _exp(v, ACC: tl.constexpr):
    # fp32: one FMA + ex2 per element (the kernels would otherwise be bound by libdevice's expf on
    # the GPU, not by memory); fp64 keeps libdevice's accurate exp.
    if ACC == tl.float64:
        return lib.exp(v)
    else:
        return tl.exp2(v * 1.4426950408889634)


@triton.jit
def _check_targets_kernel(t, err, R, C, ignore_index, BLOCK: tl.constexpr):
    """Record the largest too-large (+1) and the smallest negative target that is not ignored."""
    r = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(t + r, mask=r < R, other=0).to(tl.int64)
    kept = (r < R) & (y != ignore_index)
    hi = kept & (y >= C)
    lo = kept & (y < 0)
    zero = tl.zeros_like(y)
    tl.atomic_max(err + zero, tl.where(hi, y, 0) + 1, mask=hi, sem="relaxed")
    tl.atomic_min(err + 1 + zero, tl.where(lo, y, 0), mask=lo, sem="relaxed")


@triton.jit
def _row_target(t, w, r, r_mask, C, ignore_index, HAS_WEIGHT: tl.constexpr, ACC: tl.constexpr):
    """Per row: (target as int64, kept mask, the target's weight, 0 where not kept). An out-of-range
    target counts as not kept here: it is never read (the launcher's check reports it)."""
    y = tl.load(t + r, mask=r_mask, other=0).to(tl.int64)
    kept = r_mask & (y != ignore_index) & (y >= 0) & (y < C)
    y = tl.where(kept, y, 0)
    if HAS_WEIGHT:
        wy = tl.load(w + y, mask=kept, other=0).to(ACC)
    else:
        wy = tl.where(kept, 1.0, 0.0).to(ACC)
    return y, kept, wy


@triton.jit
def _ce_fwd_kernel(
    x,
    t,
    w,
    wsum,
    loss,
    lse,
    wrow,
    R,
    C,
    xc,
    ignore_index,
    eps,
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
    HAS_WEIGHT: tl.constexpr,
    SMOOTH: tl.constexpr,
    ACC: tl.constexpr,
    ROW_RANK: tl.constexpr,
    C_CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        r = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    else:
        r = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = r < R
    xr = offset_of(r, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, ROW_RANK)
    y, kept, wy = _row_target(t, w, r, r_mask, C, ignore_index, HAS_WEIGHT, ACC)
    cols = tl.arange(0, BLOCK_C)
    # One pass: a running max m and the sum s of exp(x - m), rescaled when m grows (one exp per
    # element, the chunk's max and sum reduced across the block); sum(w * x) for the smoothing term.
    m = tl.full([BLOCK_R], float("-inf"), ACC)
    s = tl.zeros([BLOCK_R], ACC)
    wx = tl.zeros([BLOCK_R, BLOCK_C], ACC)
    for start in range(0, C, BLOCK_C):
        c = start + cols
        mask = r_mask[:, None] & (c < C)[None, :]
        if C_CONTIG:
            v = tl.load(x + xr[:, None] + c[None, :], mask=mask, other=float("-inf")).to(ACC)
        else:
            v = tl.load(x + xr[:, None] + c[None, :] * xc, mask=mask, other=float("-inf")).to(ACC)
        new = tl.maximum(m, tl.max(v, axis=1))
        safe = tl.where(new == float("-inf"), 0.0, new)
        s = s * _exp(m - safe, ACC) + tl.sum(_exp(v - safe[:, None], ACC), axis=1)
        m = new
        if SMOOTH:
            if HAS_WEIGHT:
                wc = tl.load(w + c, mask=c < C, other=0).to(ACC)
                wx += tl.where(mask, v * wc[None, :], 0.0)
            else:
                wx += tl.where(mask, v, 0.0)
    out_lse = m + lib.log(s)
    if C_CONTIG:
        xy = tl.load(x + xr + y, mask=kept, other=0).to(ACC)
    else:
        xy = tl.load(x + xr + y * xc, mask=kept, other=0).to(ACC)
    res = (1.0 - eps) * wy * (out_lse - xy)
    if SMOOTH:
        if HAS_WEIGHT:
            total_w = tl.load(wsum).to(ACC)
        else:
            total_w = C.to(ACC)
        res += eps / C * (total_w * out_lse - tl.sum(wx, axis=1))
    tl.store(loss + r, tl.where(kept, res, 0.0).to(loss.dtype.element_ty), mask=r_mask)
    tl.store(lse + r, out_lse.to(lse.dtype.element_ty), mask=r_mask)
    tl.store(wrow + r, wy.to(wrow.dtype.element_ty), mask=r_mask)


@triton.jit
def _ce_bwd_kernel(
    x,
    t,
    w,
    wsum,
    lse,
    g,
    total,
    dx,
    R,
    C,
    xc,
    dc,
    gs,
    ignore_index,
    eps,
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
    d0,
    d1,
    d2,
    d3,
    d4,
    d5,
    d6,
    d7,
    HAS_WEIGHT: tl.constexpr,
    SMOOTH: tl.constexpr,
    MEAN: tl.constexpr,
    ACC: tl.constexpr,
    ROW_RANK: tl.constexpr,
    C_CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        r = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    else:
        r = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = r < R
    xr = offset_of(r, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, ROW_RANK)
    dr = offset_of(r, S1, S2, S3, S4, S5, S6, S7, d0, d1, d2, d3, d4, d5, d6, d7, ROW_RANK)
    # Targets were checked by the forward; an ignored (or out-of-range) row gets a zero gradient.
    y = tl.load(t + r, mask=r_mask, other=0).to(tl.int64)
    kept = r_mask & (y != ignore_index) & (y >= 0) & (y < C)
    if HAS_WEIGHT:
        wy = tl.load(w + tl.where(kept, y, 0), mask=kept, other=0).to(ACC)
    else:
        wy = tl.full([BLOCK_R], 1.0, ACC)
    scale = tl.load(g + r * gs, mask=r_mask, other=0).to(ACC)
    if MEAN:
        scale = scale / tl.load(total).to(ACC)
    # Ignored rows: exactly 0 (never 0 * inf or 0 * nan from an all-ignored "mean").
    scale = tl.where(kept, scale, 0.0)
    a = (1.0 - eps) * wy * scale  # the target's share
    b = eps / C * scale  # the smoothing share, times w[c]
    if SMOOTH:
        if HAS_WEIGHT:
            coef_p = a + b * tl.load(wsum).to(ACC)
        else:
            coef_p = a + b * C
    else:
        coef_p = a
    row_lse = tl.load(lse + r, mask=r_mask, other=0).to(ACC)
    cols = tl.arange(0, BLOCK_C)
    for start in range(0, C, BLOCK_C):
        c = start + cols
        mask = r_mask[:, None] & (c < C)[None, :]
        if C_CONTIG:
            v = tl.load(x + xr[:, None] + c[None, :], mask=mask, other=0).to(ACC)
        else:
            v = tl.load(x + xr[:, None] + c[None, :] * xc, mask=mask, other=0).to(ACC)
        p = _exp(v - row_lse[:, None], ACC)
        res = p * coef_p[:, None] - tl.where(c[None, :] == y[:, None], a[:, None], 0.0)
        if SMOOTH:
            if HAS_WEIGHT:
                wc = tl.load(w + c, mask=c < C, other=0).to(ACC)
                res -= b[:, None] * wc[None, :]
            else:
                res -= b[:, None]
        res = tl.where(kept[:, None], res, 0.0)
        if C_CONTIG:
            do = dr[:, None] + c[None, :]
        else:
            do = dr[:, None] + c[None, :] * dc
        tl.store(dx + do, cast_to(res, dx.dtype.element_ty), mask=mask)


_CHECK = Kernel(_check_targets_kernel)
_CHECK_BLOCK = 1024
_FWD = Kernel(_ce_fwd_kernel)
_BWD = Kernel(_ce_bwd_kernel)


@by_layout
def _rows(bufs: list[BufferLike]) -> tuple[int, int, tuple[int, ...], tuple[tuple[int, ...], ...], bool]:
    """Collapse the row dims (all but the last) of the logits ``bufs[0]`` and the same-shape rest,
    keeping the logical row order (per-row values are addressed by the flat row index)."""
    shape = tuple(bufs[0].shape)
    if not shape:
        raise ValueError("cross_entropy: logits need a class dim")
    for b in bufs:
        if tuple(b.shape) != shape:
            raise ValueError(f"shape mismatch: {tuple(b.shape)} vs {shape}")
    rows_shape = shape[:-1]
    rshape, rstrides = collapse(rows_shape, [tuple(b.strides[:-1]) for b in bufs], reorder=False)
    if not rshape:
        rshape, rstrides = (1,), [(0,) for _ in bufs]
    if len(rshape) > MAX_RANK:
        raise ValueError("rank after collapsing exceeds 8")
    rows, n = numel(rows_shape), shape[-1]
    big = max([rows * n] + [extent(tuple(b.shape), tuple(b.strides)) for b in bufs]) >= INT32_LIMIT - 65536
    return rows, n, rshape, tuple(rstrides), big


def _check_vector(name: str, b: BufferLike, n: int) -> None:
    if tuple(b.shape) != (n,) or (n > 1 and b.strides[0] != 1):
        raise ValueError(f"cross_entropy: {name} must be contiguous of shape ({n},), got {tuple(b.shape)}")


def _blocks(rows: int, n: int, itemsize: int) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_C, num_warps): 8 KiB of logits per chunk (two 16-byte loads per thread at 8
    warps), several short rows per program."""
    block_c = min(next_pow2(n), 8192 // min(itemsize, 4))
    block_r = max(1, min(next_pow2(rows), 2048 // block_c))
    return block_r, block_c, 4 if block_r * block_c <= 1024 else 8


def cross_entropy(
    x: BufferLike,
    target: BufferLike,
    weight: BufferLike | None,
    weight_sum: BufferLike | None,
    loss: BufferLike,
    lse: BufferLike,
    row_weight: BufferLike,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    check: bool = True,
    target_range: indexed.KnownRange | None = None,
    stream: int = 0,
) -> None:
    """Per-row cross-entropy of logits ``x`` (classes last) against class indices ``target``.

    ``target``, ``loss``, ``lse`` and ``row_weight`` are contiguous, one value per row (``x``'s
    shape without its last dim); ``weight`` (C,) and ``weight_sum`` (a 1-element sum of it,
    needed only with label smoothing) are optional. With ``check`` an out-of-range target raises
    IndexError after the launch (a stream synchronisation), unless ``target_range``, host-known bounds
    of the targets' values (lowest, highest, exact), shows them in range (no check then) or, exact,
    shows a bad one (IndexError now, nothing launched).
    """
    rows, n, rshape, rstrides, big = _rows([x])
    for name, b in (("target", target), ("loss", loss), ("lse", lse), ("row_weight", row_weight)):
        if numel(tuple(b.shape)) != rows or (rows > 1 and extent(tuple(b.shape), tuple(b.strides)) != rows):
            raise ValueError(f"cross_entropy: {name} must be contiguous with {rows} elements, got {tuple(b.shape)}")
    if weight is not None:
        _check_vector("weight", weight, n)
    if rows == 0:
        return
    acc = accumulate_dtype(x.dtype)
    has_weight, smooth = weight is not None, label_smoothing > 0.0
    if has_weight and smooth and weight_sum is None:
        raise ValueError("cross_entropy: label smoothing with class weights needs weight_sum")
    xc = x.strides[-1]
    block_r, block_c, warps = _blocks(rows, n, dtype_info(x.dtype).itemsize)
    xs = pad_dims(rstrides[0], 0)
    wptr = weight.ptr if weight is not None else x.ptr  # never read without HAS_WEIGHT
    sptr = weight_sum.ptr if weight_sum is not None and has_weight and smooth else x.ptr
    aligned = tuple(
        [k for k, p in (("x", x.ptr), ("loss", loss.ptr), ("lse", lse.ptr), ("wrow", row_weight.ptr)) if p % 16 == 0]
        + ["C"] * (n % 16 == 0)
        + [f"x{d}" for d in range(MAX_RANK) if xs[d] % 16 == 0]
    )
    wdt = weight.dtype if weight is not None else "float32"
    sdt = weight_sum.dtype if weight_sum is not None else "float32"
    key: tuple[object, ...] = (x.dtype, target.dtype, wdt, sdt, loss.dtype, lse.dtype, row_weight.dtype)
    key += (has_weight, smooth, len(rshape), xc == 1, big, block_r, block_c, aligned)
    fn = _FWD.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(x.dtype),
            "t": ptr_type(target.dtype),
            "w": ptr_type(wdt),
            "wsum": ptr_type(sdt),
            "loss": ptr_type(loss.dtype),
            "lse": ptr_type(lse.dtype),
            "wrow": ptr_type(row_weight.dtype),
            "R": it,
            "C": it,
            "xc": it,
            "ignore_index": "i64",
            "eps": "fp64" if acc == "float64" else "fp32",
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("x", it),
        }
        consts = dict(
            HAS_WEIGHT=has_weight,
            SMOOTH=smooth,
            ACC=tl_dtype(acc),
            ROW_RANK=len(rshape),
            C_CONTIG=xc == 1,
            INT64=big,
            BLOCK_R=block_r,
            BLOCK_C=block_c,
        )
        fn = _FWD.build(key, types, consts, aligned, num_warps=warps)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    if check and not _targets_known(target_range, n, ignore_index):
        _check_targets(target, rows, n, ignore_index, stream)
    fn(
        (cdiv(rows, block_r), 1, 1),
        stream,
        (
            x.ptr,
            target.ptr,
            wptr,
            sptr,
            loss.ptr,
            lse.ptr,
            row_weight.ptr,
            rows,
            n,
            xc,
            ignore_index,
            label_smoothing,
            *pad_dims(rshape[1:], 1, 7),
            *xs,
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def check_targets(
    target: BufferLike,
    classes: int,
    *,
    ignore_index: int = -100,
    target_range: indexed.KnownRange | None = None,
    stream: int = 0,
) -> None:
    """Raise torch's IndexError unless every target (contiguous) is in ``[0, classes)`` or ``ignore_index``:
    the check :func:`cross_entropy` makes, taken once for a caller that then runs the forward in several
    pieces with ``check=False`` (a chunked loss: one synchronisation, not one per chunk)."""
    rows = numel(tuple(target.shape))
    if rows and not _targets_known(target_range, classes, ignore_index):
        _check_targets(target, rows, classes, ignore_index, stream)


def _targets_known(known: indexed.KnownRange | None, n: int, ignore_index: int) -> bool:
    """True when host-known bounds put every target in [0, n) (or all at ignore_index); raises the
    check kernel's IndexError when exact bounds show a bad target it would report; False: check."""
    if known is None:
        return False
    lo, hi, exact = known
    if (0 <= lo and hi < n) or lo == hi == ignore_index:
        return True
    if exact:
        # The kernel reports the largest too-large target, else the smallest negative one, skipping
        # ignore_index: when a bound is ignore_index the next value is unknown here.
        if hi >= n and hi != ignore_index:
            raise _target_error(np.array([hi + 1, 0]))
        if hi < n and lo < 0 and lo != ignore_index:
            raise _target_error(np.array([0, lo]))
    return False


def _check_targets(target: BufferLike, rows: int, n: int, ignore_index: int, stream: int) -> None:
    """Bounds-check the targets in a small kernel of their own and wait for it, before the forward is
    queued: the wait then costs the GPU no idle time behind the forward (the host launches the rest
    of the step while the forward runs). Under CUDA-graph capture nothing may wait: the check writes a
    flag the graph owns, and the graph's next ``replay()`` raises the IndexError."""
    captured = capture.capturing()
    if captured:
        where = " (in a replay of a CUDA graph that captured cross_entropy)"
        err, host = capture.graph_error_flag(indexed._ERR_SLOTS, lambda raw: _target_error(raw, where)), 0
    else:
        sync_debug.check("cross_entropy (bounds check of targets of unknown range)")
        err, host = indexed._error_block(stream)
    key = (target.dtype,)
    fn = _CHECK.cache.get(key)
    if fn is None:
        types = {"t": ptr_type(target.dtype), "err": "*i64", "R": "i64", "C": "i64", "ignore_index": "i64"}
        fn = _CHECK.build(key, types, {"BLOCK": _CHECK_BLOCK}, num_warps=4)
    fn((cdiv(rows, _CHECK_BLOCK), 1, 1), stream, (target.ptr, err, rows, n, ignore_index, _CHECK_BLOCK))
    if not captured:
        _raise_if_bad_target(host, stream)


def _raise_if_bad_target(host: int, stream: int) -> None:
    """Wait for ``stream`` and raise torch's IndexError if the forward met an out-of-range target."""
    if not rt.INTERPRET:
        rt.cuda().synchronize(stream)
    if not host:
        return
    raw = np.frombuffer(ctypes.string_at(host, 16), dtype=np.int64)
    if not raw.any():
        return
    ctypes.memset(host, 0, 8 * indexed._ERR_SLOTS)  # the stream is idle: nothing writes it now
    raise _target_error(raw)


def _target_error(raw: np.ndarray, where: str = "") -> IndexError:
    """torch's IndexError for the recorded (largest too-large + 1, smallest negative) target."""
    value = int(raw[0]) - 1 if raw[0] else int(raw[1])
    return IndexError(f"Target {value} is out of bounds.{where}")


def cross_entropy_backward(
    x: BufferLike,
    target: BufferLike,
    weight: BufferLike | None,
    weight_sum: BufferLike | None,
    lse: BufferLike,
    grad: BufferLike,
    total: BufferLike | None,
    dx: BufferLike,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    stream: int = 0,
) -> None:
    """Gradient of the per-row losses with respect to the logits ``x``, written into ``dx``.

    ``grad`` holds the loss's incoming gradient: one per row (contiguous), or a single value
    (reduction "sum" / "mean"; ``total``, the summed row weights, divides it for "mean").
    ``dx`` has ``x``'s shape and any strides; it may be ``x`` itself (each element is read
    before it is written, by the same program).
    """
    rows, n, rshape, (xs, ds), big = _rows([x, dx])
    if weight is not None:
        _check_vector("weight", weight, n)
    if rows * n == 0:
        return
    gn = numel(tuple(grad.shape))
    if gn not in (1, rows):
        raise ValueError(f"cross_entropy_backward: grad must have 1 or {rows} elements, got {tuple(grad.shape)}")
    gs = 0 if gn == 1 and rows != 1 else 1
    acc = accumulate_dtype(x.dtype)
    has_weight, smooth, mean = weight is not None, label_smoothing > 0.0, total is not None
    if has_weight and smooth and weight_sum is None:
        raise ValueError("cross_entropy_backward: label smoothing with class weights needs weight_sum")
    xc, dc = x.strides[-1], dx.strides[-1]
    block_r, block_c, warps = _blocks(rows, n, dtype_info(x.dtype).itemsize)
    xs_p, ds_p = pad_dims(xs, 0), pad_dims(ds, 0)
    wptr = weight.ptr if weight is not None else x.ptr
    sptr = weight_sum.ptr if weight_sum is not None and has_weight and smooth else x.ptr
    tptr = total.ptr if total is not None else x.ptr
    aligned = tuple(
        [k for k, p in (("x", x.ptr), ("dx", dx.ptr), ("lse", lse.ptr)) if p % 16 == 0]
        + ["C"] * (n % 16 == 0)
        + [f"x{d}" for d in range(MAX_RANK) if xs_p[d] % 16 == 0]
        + [f"d{d}" for d in range(MAX_RANK) if ds_p[d] % 16 == 0]
    )
    wdt = weight.dtype if weight is not None else "float32"
    sdt = weight_sum.dtype if weight_sum is not None else "float32"
    tdt = total.dtype if total is not None else "float32"
    key: tuple[object, ...] = (x.dtype, target.dtype, wdt, sdt, lse.dtype, grad.dtype, tdt, dx.dtype)
    key += (has_weight, smooth, mean, len(rshape), xc == 1 and dc == 1, big, block_r, block_c, aligned)
    fn = _BWD.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(x.dtype),
            "t": ptr_type(target.dtype),
            "w": ptr_type(wdt),
            "wsum": ptr_type(sdt),
            "lse": ptr_type(lse.dtype),
            "g": ptr_type(grad.dtype),
            "total": ptr_type(tdt),
            "dx": ptr_type(dx.dtype),
            "R": it,
            "C": it,
            "xc": it,
            "dc": it,
            "gs": it,
            "ignore_index": "i64",
            "eps": "fp64" if acc == "float64" else "fp32",
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("x", it),
            **stride_types("d", it),
        }
        consts = dict(
            HAS_WEIGHT=has_weight,
            SMOOTH=smooth,
            MEAN=mean,
            ACC=tl_dtype(acc),
            ROW_RANK=len(rshape),
            C_CONTIG=xc == 1 and dc == 1,
            INT64=big,
            BLOCK_R=block_r,
            BLOCK_C=block_c,
        )
        fn = _BWD.build(key, types, consts, aligned, num_warps=warps)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (cdiv(rows, block_r), 1, 1),
        stream,
        (
            x.ptr,
            target.ptr,
            wptr,
            sptr,
            lse.ptr,
            grad.ptr,
            tptr,
            dx.ptr,
            rows,
            n,
            xc,
            dc,
            gs,
            ignore_index,
            label_smoothing,
            *pad_dims(rshape[1:], 1, 7),
            *xs_p,
            *ds_p,
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )
