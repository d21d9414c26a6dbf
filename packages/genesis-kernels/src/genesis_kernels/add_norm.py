"""Residual add + LayerNorm / RMSNorm over the last dim, forward and backward, each one launch.

A pre-norm transformer block does ``s = residual + h; y = norm(s) * weight (+ bias)``, and ``s`` goes
on to the next residual add. Apart, that is an add that writes ``s`` and a norm that reads it back.

Forward (``add_norm_forward``) reads ``h`` and ``residual`` once and writes ``s`` and ``y`` once, plus
the per-row statistics (mean for LayerNorm, rstd) in the accumulation dtype, as ``norm_forward``.
The sum is rounded to ``s``'s dtype before the norm reads it: the norm sees the ``s`` it returns, as
torch's eager ``norm(residual + h)`` does.

Backward (``add_norm_backward``): the gradient of ``s`` is the norm's ``dx`` (from ``dy``) plus the
gradient ``ds`` that ``s``'s other uses sent; one pass writes that sum once, while each program keeps
its share of ``dweight`` / ``dbias`` for the column-sum step of normalization.py.

Rows up to normalization's ``_ONE_PASS_MAX`` elements stay in registers; longer ones take the two-launch
path (an elementwise add, then the norm kernels of normalization.py).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from .buffer import INT32_LIMIT, Buffer, BufferLike, accumulate_dtype, by_layout, dtype_info, numel, tl_dtype
from .elementwise import binary, cast_to, copy
from .normalization import (
    _ONE_PASS_MAX,
    _affine,
    _as_rows,
    _check_vector,
    _column_sum,
    _normalize_rows,
    _programs,
    _row_input_grad,
    _row_offsets,
    _warps,
    norm_backward,
    norm_forward,
)
from .runtime import Kernel, cdiv, next_pow2, ptr_type, scratch


@triton.jit
def _load(p, row_off, cols, cstride, mask, CONTIG: tl.constexpr, ACC: tl.constexpr):
    """A (rows, cols) tile in ``ACC``; zeros outside ``mask``. A 16-bit tile among float32 ones (a bf16 ``x``
    or ``dy`` beside a float32 residual stream under autocast) is read in float32's vector runs
    (normalization.py's _row_offsets): before, the backward with a bf16 ``dy`` had 19 barriers in its sm_90
    code against 6 for float32, and on an H200 at 8192 x 768 took 121.7 us against 101.9
    (benchmarks/bench_add_norm_grad_dtypes.py); now it has the float32 kernel's 6 (GPU time not yet measured).
    """
    if CONTIG:
        return cast_to(tl.load(p + _row_offsets(p, row_off, cols, ACC), mask=mask, other=0), ACC)
    else:
        return cast_to(tl.load(p + row_off[:, None] + cols[None, :] * cstride, mask=mask, other=0), ACC)


@triton.jit
def _store(p, row_off, cols, cstride, v, mask, CONTIG: tl.constexpr, ACC: tl.constexpr):
    """Store ``v`` (computed in ``ACC``, perhaps already rounded) as ``p``'s dtype, in the runs _load reads."""
    if CONTIG:
        tl.store(p + _row_offsets(p, row_off, cols, ACC), cast_to(v, p.dtype.element_ty), mask=mask)
    else:
        tl.store(p + row_off[:, None] + cols[None, :] * cstride, cast_to(v, p.dtype.element_ty), mask=mask)


@triton.jit
def _add_norm_fwd_kernel(
    x, r, w, b, s, y, mean, rstd, R, N, xr, xc, rr, rc, sr, sc, yr, yc, eps,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, ACC: tl.constexpr, CONTIG: tl.constexpr,
    INT64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    if INT64:
        rows = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    else:
        rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    r_mask = rows < R
    cols = tl.arange(0, BLOCK_N)
    c_mask = cols < N
    mask = r_mask[:, None] & c_mask[None, :]
    v = _load(x, rows * xr, cols, xc, mask, CONTIG, ACC) + _load(r, rows * rr, cols, rc, mask, CONTIG, ACC)
    sv = cast_to(v, s.dtype.element_ty)
    _store(s, rows * sr, cols, sc, sv, mask, CONTIG, ACC)
    v = cast_to(sv, ACC)  # the norm reads s as stored (rounded to its dtype), as torch's eager norm does
    xhat, mu, rs = _normalize_rows(v, mask, N, eps, RMS)
    if not RMS:
        tl.store(mean + rows, mu, mask=r_mask)
    xhat = _affine(xhat, w, b, cols, c_mask, HAS_W, HAS_B, ACC)
    _store(y, rows * yr, cols, yc, xhat, mask, CONTIG, ACC)
    tl.store(rstd + rows, rs, mask=r_mask)


@triton.jit
def _add_norm_bwd_kernel(
    s, dy, ds, w, mean, rstd, dx, dl, pw, pb, R, N, RPP, sr, sc, gr, gc, er, ec, dr, dc, lr, lc,
    RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_DS: tl.constexpr, W_GRAD: tl.constexpr, B_GRAD: tl.constexpr,
    HAS_LOW: tl.constexpr, ACC: tl.constexpr, CONTIG: tl.constexpr, INT64: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
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
        v = _load(s, rows * sr, cols, sc, mask, CONTIG, ACC)
        g = _load(dy, rows * gr, cols, gc, mask, CONTIG, ACC)
        rs = tl.load(rstd + rows, mask=r_mask, other=0)[:, None]
        xhat, res = _row_input_grad(v, g, wv, rs, mean, rows, r_mask, mask, N, RMS, HAS_W)
        if HAS_DS:  # the gradient from s's other uses: added here, so the sum is written (and rounded) once
            res += _load(ds, rows * er, cols, ec, mask, CONTIG, ACC)
        _store(dx, rows * dr, cols, dc, res, mask, CONTIG, ACC)
        if HAS_LOW:  # the same sum rounded once to a narrower dtype: the gradient of a 16-bit addend
            _store(dl, rows * lr, cols, lc, res, mask, CONTIG, ACC)
        if W_GRAD:
            dw_acc += g * xhat
        if B_GRAD:
            db_acc += g
    if W_GRAD:
        tl.store(pw + prow + cols, tl.sum(dw_acc, axis=0), mask=c_mask)
    if B_GRAD:
        tl.store(pb + prow + cols, tl.sum(db_acc, axis=0), mask=c_mask)


_FWD = Kernel(_add_norm_fwd_kernel)
_BWD = Kernel(_add_norm_bwd_kernel)


def _blocks(rows: int, n: int) -> tuple[int, int]:
    """(BLOCK_R, BLOCK_N): a whole row per tile, short rows several to a program (normalization.py's choice)."""
    block_n = next_pow2(n)
    return max(1, min(next_pow2(max(rows, 1)), 2048 // block_n)), block_n


class _Plan:
    """What every launch of one layout passes besides its pointers, worked out (and checked) once per layout
    (shapes, strides, dtypes, flags) by the ``by_layout`` functions below; never from addresses, whose
    alignment each launch reads for itself."""

    __slots__ = (
        "acc", "aligned_ints", "args", "block", "consts", "fns", "grid", "key", "n", "names", "rows", "types",
    )  # fmt: skip

    def __init__(
        self, rows: int, n: int, big: bool, layout: tuple, ptr_dtypes: dict[str, str], ints: str, flags: dict
    ) -> None:
        self.rows, self.n = rows, n
        self.acc = accumulate_dtype(ptr_dtypes["s"])
        self.block = block_r, block_n = _blocks(rows, n)
        it = "i64" if big else "i32"
        self.names = tuple(ptr_dtypes)  # the pointer arguments, in the kernel's order
        self.types = {**{k: ptr_type(v) for k, v in ptr_dtypes.items()}, **dict.fromkeys(ints.split(), it)}
        contig = all(c == 1 for _, c in layout)
        self.consts: dict[str, Any] = dict(
            **flags, ACC=tl_dtype(self.acc), CONTIG=contig, INT64=big, BLOCK_R=block_r, BLOCK_N=block_n
        )
        # N and the row strides divisible by 16 (with 16-aligned pointers: vector loads)
        row_names = ints.split()[-len(layout) * 2 :: 2]
        aligned = ["N"] * (n % 16 == 0) + [name for name, (rs, _) in zip(row_names, layout) if rs % 16 == 0]
        self.aligned_ints = tuple(aligned)
        # (plain values: a Triton dtype in a key would hash through Python on every lookup)
        self.key: tuple = (tuple(ptr_dtypes.values()), tuple(flags.values()), self.acc, contig, big, self.block)
        self.fns: dict[tuple[str, ...], Any] = {}  # this layout's launches by aligned pointers
        self.args: tuple = (rows, n, *[st for pair in layout for st in pair])
        self.grid = (cdiv(rows, block_r), 1, 1)


def _check_params(n: int, rows: int, acc: str, weight: BufferLike | None, stats: list[BufferLike], what: str) -> None:
    _check_vector(weight, n, "weight")
    for stat in stats:
        if stat.dtype != acc or numel(tuple(stat.shape)) != rows or (rows > 1 and stat.strides[-1] != 1):
            raise ValueError(f"{what}: mean / rstd must be contiguous {acc} buffers of {rows} elements")


@by_layout
def _forward_plan(bufs: list[BufferLike], rms: bool, has_mean: bool, has_w: bool, has_b: bool) -> _Plan:
    """bufs: x, residual, s, out, rstd, then mean, weight, bias where given."""
    if rms and has_b:
        raise ValueError("add_norm_forward: rms_norm takes no bias")
    if not rms and not has_mean:
        raise ValueError("add_norm_forward: layer norm needs a mean buffer")
    x, r, s, y, rstd = bufs[:5]
    mean = bufs[5] if has_mean else None
    weight = bufs[5 + has_mean] if has_w else None
    bias = bufs[-1] if has_b else None
    rows, n, layout, big = _as_rows([x, r, s, y], "add_norm_forward")
    acc = accumulate_dtype(s.dtype)
    _check_params(n, rows, acc, weight, [rstd] + ([mean] if mean is not None else []), "add_norm_forward")
    _check_vector(bias, n, "bias")
    pdt = {"x": x.dtype, "r": r.dtype, "w": acc if weight is None else weight.dtype}
    pdt.update(b=acc if bias is None else bias.dtype, s=s.dtype, y=y.dtype, mean=acc, rstd=acc)
    flags = dict(RMS=rms, HAS_W=has_w, HAS_B=has_b)
    plan = _Plan(rows, n, big, layout, pdt, "R N xr xc rr rc sr sc yr yc", flags)
    plan.types["eps"] = dtype_info(acc).triton
    return plan


@by_layout
def _backward_plan(bufs: list[BufferLike], rms: bool, flags: tuple[bool, ...]) -> _Plan:
    """bufs: s, dy, dx, rstd, then mean, ds, weight, dweight, dbias, dx_low where given (``flags`` says which)."""
    has_mean, has_ds, has_w, w_grad, b_grad, has_low = flags
    if rms and b_grad:
        raise ValueError("add_norm_backward: rms_norm has no bias")
    if not rms and not has_mean:
        raise ValueError("add_norm_backward: layer norm needs the saved mean")
    s, dy, dx, rstd = bufs[:4]
    rest = iter(bufs[4:])
    mean, ds, weight, dweight, dbias, low = (next(rest) if given else None for given in flags)
    operands = [s, dy, dx if ds is None else ds, dx, dx if low is None else low]
    rows, n, layout, big = _as_rows(operands, "add_norm_backward")
    acc = accumulate_dtype(s.dtype)
    _check_params(n, rows, acc, weight, [rstd] + ([mean] if mean is not None else []), "add_norm_backward")
    _check_vector(dweight, n, "dweight", strided=True)
    _check_vector(dbias, n, "dbias", strided=True)
    programs = _programs(rows, *_blocks(rows, n)) if rows else 0
    rpp = cdiv(rows, programs) if programs else 0
    programs = cdiv(rows, rpp) if rpp else 0
    big = big or programs * n >= INT32_LIMIT - 65536
    pdt = {"s": s.dtype, "dy": dy.dtype, "ds": dx.dtype if ds is None else ds.dtype}
    pdt.update(w=acc if weight is None else weight.dtype, mean=acc, rstd=acc, dx=dx.dtype)
    pdt.update(dl=dx.dtype if low is None else low.dtype, pw=acc, pb=acc)
    consts = dict(RMS=rms, HAS_W=has_w, HAS_DS=has_ds, W_GRAD=w_grad, B_GRAD=b_grad, HAS_LOW=has_low)
    plan = _Plan(rows, n, big, layout, pdt, "R N RPP sr sc gr gc er ec dr dc lr lc", consts)
    plan.args = (rows, n, rpp, *plan.args[2:])
    plan.grid = (programs, 1, 1)
    return plan


def _launch(kernel: Kernel, plan: _Plan, ptrs: tuple[int, ...], ints: tuple, stream: int) -> None:
    # Runs on every call: the alignment of all pointers at once in the common case (all 16-byte aligned).
    mask = 0
    for p in ptrs:
        mask |= p
    aligned = plan.names if mask % 16 == 0 else tuple([k for k, p in zip(plan.names, ptrs) if p % 16 == 0])
    fn: Any = plan.fns.get(aligned)
    if fn is None:
        # The integers' alignment is part of the specialisation: two layouts of one block size may differ in
        # it (rows of 48 and of 33 elements), and a kernel compiled for 16-divisible rows must not read 33.
        key = (plan.key, aligned, plan.aligned_ints)
        fn = kernel.build(
            key, plan.types, plan.consts, aligned + plan.aligned_ints, num_warps=_warps(numel(plan.block))
        )
        fn._consts = tuple([plan.consts[k] for k in kernel.arg_names if k in plan.consts])
        plan.fns[aligned] = fn
    fn(plan.grid, stream, (*ptrs, *ints, *fn._consts))


def add_norm_forward(
    x: BufferLike,
    residual: BufferLike,
    weight: BufferLike | None,
    bias: BufferLike | None,
    s: BufferLike,
    out: BufferLike,
    mean: BufferLike | None,
    rstd: BufferLike | None,
    *,
    eps: float,
    rms: bool = False,
    stream: int = 0,
) -> None:
    """``s = residual + x`` (computed in ``s``'s accumulation dtype, stored in ``s``'s dtype: the caller's
    promotion of the two) and LayerNorm (``rms=False``) or RMSNorm of ``s`` over its last dim into ``out``
    (any floating dtype). All four the same shape; leading dims that collapse to one row stride.

    ``mean`` (LayerNorm only) and ``rstd``: one value per row, contiguous, in ``s``'s accumulation dtype
    (float32; float64 for float64 ``s``). ``weight`` / ``bias``: shape (N,) contiguous, any floating dtype,
    or None; RMSNorm takes no bias. ``rstd`` None (and ``mean`` None): the statistics are not kept (no
    backward will read them: inference), the kernel writes them to this stream's scratch memory.
    """
    if rstd is None:
        if mean is not None:
            raise ValueError("add_norm_forward: mean without rstd; pass both, or neither to drop the statistics")
        rows = numel(tuple(s.shape)[:-1])
        acc = accumulate_dtype(s.dtype)
        item = dtype_info(acc).itemsize
        base = scratch(rows * item * (1 if rms else 2), stream)
        rstd = Buffer(base, (rows,), (1,), acc)
        if not rms:
            mean = Buffer(base + rows * item, (rows,), (1,), acc)
    bufs = [x, residual, s, out, rstd]
    if mean is not None:
        bufs.append(mean)
    if weight is not None:
        bufs.append(weight)
    if bias is not None:
        bufs.append(bias)
    plan = _forward_plan(bufs, rms, mean is not None, weight is not None, bias is not None)
    if plan.rows == 0 or plan.n == 0:
        return
    if plan.n > _ONE_PASS_MAX:  # long rows: the add, then the norm kernels (two launches)
        binary("add", x, residual, s, compute_dtype=plan.acc, stream=stream)
        norm_forward(s, weight, bias, out, mean, rstd, eps=eps, rms=rms, stream=stream)
        return
    spare = rstd.ptr  # stands in for the pointers a flag says are never read
    ptrs = (
        x.ptr,
        residual.ptr,
        spare if weight is None else weight.ptr,
        spare if bias is None else bias.ptr,
        s.ptr,
        out.ptr,
        spare if mean is None else mean.ptr,
        spare,
    )
    _launch(_FWD, plan, ptrs, (*plan.args, float(eps)), stream)


def add_norm_backward(
    s: BufferLike,
    dy: BufferLike,
    ds: BufferLike | None,
    weight: BufferLike | None,
    mean: BufferLike | None,
    rstd: BufferLike,
    dx: BufferLike,
    dweight: BufferLike | None = None,
    dbias: BufferLike | None = None,
    *,
    dx_low: BufferLike | None = None,
    rms: bool = False,
    stream: int = 0,
) -> None:
    """Gradients of :func:`add_norm_forward`: ``dx`` = the norm's input gradient from ``dy`` plus ``ds`` (the
    gradient ``s`` received from its other uses; None for none), which is the gradient of both ``x`` and
    ``residual`` (in ``dx``'s dtype); ``dweight`` / ``dbias`` (shape (N,), any floating dtype) when given,
    through per-program partial sums and normalization.py's column-sum launch. ``dx_low``: the same sum
    written a second time in its (narrower) dtype, rounded once, for an addend of that dtype (a 16-bit
    block output added to a float32 residual stream), instead of a cast of ``dx`` afterwards.
    """
    bufs = [s, dy, dx, rstd]
    for b in (mean, ds, weight, dweight, dbias, dx_low):
        if b is not None:
            bufs.append(b)
    flags = (
        mean is not None, ds is not None, weight is not None, dweight is not None, dbias is not None,
        dx_low is not None,
    )  # fmt: skip
    plan = _backward_plan(bufs, rms, flags)
    n, programs = plan.n, plan.grid[0]
    if n == 0:
        return
    if n > _ONE_PASS_MAX:  # long rows: the norm's backward kernels, then the add
        norm_backward(s, dy, weight, mean, rstd, dx, dweight, dbias, rms=rms, stream=stream)
        if ds is not None:
            binary("add", dx, ds, dx, compute_dtype=plan.acc, stream=stream)
        if dx_low is not None:
            copy(dx, dx_low, stream=stream)
        return
    item = 8 if plan.acc == "float64" else 4
    n_parts = (dweight is not None) + (dbias is not None)
    part = scratch(n_parts * programs * n * item, stream) if n_parts else rstd.ptr
    pw = part
    pb = part + (programs * n * item if dweight is not None else 0)
    if programs:
        spare = rstd.ptr
        ptrs = (
            s.ptr,
            dy.ptr,
            dx.ptr if ds is None else ds.ptr,
            spare if weight is None else weight.ptr,
            spare if mean is None else mean.ptr,
            spare,
            dx.ptr,
            dx.ptr if dx_low is None else dx_low.ptr,
            pw,
            pb,
        )
        _launch(_BWD, plan, ptrs, plan.args, stream)
    if dweight is not None and dbias is not None and dweight.dtype == dbias.dtype:
        _column_sum(pw, programs, n, dweight, plan.acc, stream, dbias)  # one launch for both (pb follows pw)
        return
    for target, ptr in ((dweight, pw), (dbias, pb)):
        if target is not None:
            _column_sum(ptr, programs, n, target, plan.acc, stream)
