"""Multi-tensor optimizer kernels: SGD, Adam / AdamW, total norm and clip scale, one launch each.

A launch covers many tensors of mixed sizes. The launcher packs a small int64 table:
one row per tensor (its element count, then its pointers) followed by one row per
program ``(tensor index, first element)``; each program streams one CHUNK of one tensor.
The table goes to the device through the caller's ``upload`` (which may cache it while
the pointers stay the same), so this layer allocates nothing.

Inside a program the full chunks run without a mask (a mask ``offs < n`` with an
unknown ``n`` would split the 16-byte vector loads); only each tensor's last chunk runs
masked. fp32 arithmetic (fp64 for float64 tensors); per-tensor bias corrections in fp64.

Grad scaling follows torch's fused optimizers: with ``grad_scale`` the gradient is
divided by it (and stored back unscaled); with ``found_inf`` non-zero nothing moves,
not even the step counters.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np
import triton
import triton.language as tl

from . import runtime
from .buffer import BufferLike, accumulate_dtype, is_dense, tl_dtype
from .elementwise import cast_to, div_rn
from .mathlib import lib
from .runtime import Kernel, cdiv, ptr_type

# (host int64 table, a hashable key equal for equal tables) -> device address (kept alive by the caller)
Upload = Callable[[np.ndarray, Hashable], int]

BLOCK = 2048  # elements per inner step: 8 per thread at 8 warps, two 16-byte vectors of fp32
CHUNK = 8 * BLOCK  # elements per program: one tensor's chunk
_ADAM_ROW = 8  # numel, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, master, step
_SGD_ROW = 6  # numel, param, grad, momentum_buffer, master, first step (0/1)
_ONE_ROW = 2  # numel, tensor (norm and scale)
_NORM_CODES = {2.0: 2, 1.0: 1, math.inf: 0}  # anything else (p > 0): 3, sum |x|^p


# ------------------------------------------------------------------------------------------ helpers
@triton.jit
def _ptr(row, k, DT: tl.constexpr, ALIGNED: tl.constexpr):
    """Field ``k`` of a table row read as a pointer to ``DT`` (16-byte aligned when ALIGNED)."""
    p = tl.load(row + k).to(tl.pointer_type(DT))
    if ALIGNED:
        p = tl.multiple_of(p, 16)
    return p


@triton.jit
def _locate(table, chunk_base, ROW: tl.constexpr):
    """This program's tensor row, first element and the tensor's element count."""
    pid = tl.program_id(0)
    t = tl.load(table + chunk_base + 2 * pid)
    start = tl.multiple_of(tl.load(table + chunk_base + 2 * pid + 1), 1024)
    row = table + t * ROW
    return row, start, tl.load(row)


@triton.jit
def _ld(p, offs, mask, MASKED: tl.constexpr, ACC: tl.constexpr):
    if MASKED:
        return cast_to(tl.load(p + offs, mask=mask, other=0), ACC)
    else:
        return cast_to(tl.load(p + offs), ACC)


@triton.jit
def _st(p, offs, v, mask, MASKED: tl.constexpr):
    if MASKED:
        tl.store(p + offs, cast_to(v, p.dtype.element_ty), mask=mask)
    else:
        tl.store(p + offs, cast_to(v, p.dtype.element_ty))


# ------------------------------------------------------------------------------------------ Adam
@triton.jit
def _adam_block(
    p_ptr, g_ptr, m_ptr, v_ptr, vmax_ptr, w_ptr, offs, mask, inv_scale,
    lr_bc1, inv_bc2_sqrt, b1, omb1, b2, omb2, eps, wd, decay,
    MASKED: tl.constexpr, ACC: tl.constexpr, MASTER: tl.constexpr, AMSGRAD: tl.constexpr,
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, DECOUPLED: tl.constexpr, SCALE: tl.constexpr,
):  # fmt: skip
    if MASTER:
        p = _ld(w_ptr, offs, mask, MASKED, ACC)
    else:
        p = _ld(p_ptr, offs, mask, MASKED, ACC)
    g = _ld(g_ptr, offs, mask, MASKED, ACC)
    if SCALE:
        g = g * inv_scale
        _st(g_ptr, offs, g, mask, MASKED)
    if MAXIMIZE:
        g = -g
    if WD:
        if DECOUPLED:
            p = p * decay
        else:
            g = g + wd * p
    m = _ld(m_ptr, offs, mask, MASKED, ACC)
    v = _ld(v_ptr, offs, mask, MASKED, ACC)
    m = b1 * m + omb1 * g
    v = b2 * v + omb2 * g * g
    _st(m_ptr, offs, m, mask, MASKED)
    _st(v_ptr, offs, v, mask, MASKED)
    if AMSGRAD:
        v = tl.maximum(_ld(vmax_ptr, offs, mask, MASKED, ACC), v)
        _st(vmax_ptr, offs, v, mask, MASKED)
    denom = lib.sqrt(v) * inv_bc2_sqrt + eps
    p = p - div_rn(lr_bc1 * m, denom)
    if MASTER:
        _st(w_ptr, offs, p, mask, MASKED)
    _st(p_ptr, offs, p, mask, MASKED)


@triton.jit
def _adam_kernel(
    table, chunk_base, step_host, lr, beta1, beta2, b1, omb1, b2, omb2, eps, wd, decay, grad_scale, found_inf,
    P: tl.constexpr, S: tl.constexpr, ACC: tl.constexpr, MASTER: tl.constexpr, AMSGRAD: tl.constexpr,
    MAXIMIZE: tl.constexpr, WD: tl.constexpr, DECOUPLED: tl.constexpr, SCALE: tl.constexpr,
    FOUND_INF: tl.constexpr, STEP_PTR: tl.constexpr, ALIGNED: tl.constexpr,
    BLOCK: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    row, start, n = _locate(table, chunk_base, 8)
    if FOUND_INF:  # a skipped step: every program sees an empty tensor
        n = tl.where(tl.load(found_inf) != 0, 0, n)
    p_ptr = _ptr(row, 1, P, ALIGNED)
    g_ptr = _ptr(row, 2, P, ALIGNED)
    m_ptr = _ptr(row, 3, S, ALIGNED)
    v_ptr = _ptr(row, 4, S, ALIGNED)
    vmax_ptr = _ptr(row, 5, S, ALIGNED)
    w_ptr = _ptr(row, 6, tl.float32, ALIGNED)
    # Bias corrections of this tensor's step, in fp64 (torch's fused kernel does the same).
    if STEP_PTR:
        step = tl.load(_ptr(row, 7, tl.float32, False)).to(tl.float64)
    else:
        step = step_host
    step = tl.maximum(step, 1.0)  # 0 only on a skipped (found_inf) step, where nothing is written
    bc1 = 1 - lib.pow(beta1, step)
    bc2 = 1 - lib.pow(beta2, step)
    lr_bc1 = (lr / bc1).to(ACC)
    inv_bc2_sqrt = (1 / lib.sqrt(bc2)).to(ACC)
    inv_scale = 1.0
    if SCALE:
        inv_scale = 1 / tl.load(grad_scale).to(ACC)
    cols = tl.arange(0, BLOCK)
    if start + CHUNK <= n:
        for off in range(0, CHUNK, BLOCK):
            offs = start + off + cols
            _adam_block(
                p_ptr, g_ptr, m_ptr, v_ptr, vmax_ptr, w_ptr, offs, None, inv_scale,
                lr_bc1, inv_bc2_sqrt, b1, omb1, b2, omb2, eps, wd, decay,
                False, ACC, MASTER, AMSGRAD, MAXIMIZE, WD, DECOUPLED, SCALE,
            )  # fmt: skip
    else:
        for off in range(0, CHUNK, BLOCK):
            offs = start + off + cols
            _adam_block(
                p_ptr, g_ptr, m_ptr, v_ptr, vmax_ptr, w_ptr, offs, offs < n, inv_scale,
                lr_bc1, inv_bc2_sqrt, b1, omb1, b2, omb2, eps, wd, decay,
                True, ACC, MASTER, AMSGRAD, MAXIMIZE, WD, DECOUPLED, SCALE,
            )  # fmt: skip


@triton.jit
def _bump_steps_kernel(table, count, found_inf, ROW: tl.constexpr, FOUND_INF: tl.constexpr, BLOCK: tl.constexpr):
    """step += 1 for every tensor's device step counter (field 7); skipped when found_inf != 0."""
    if FOUND_INF:
        count = tl.where(tl.load(found_inf) != 0, 0, count)
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < count
    ptrs = tl.load(table + t * ROW + 7, mask=mask, other=0).to(tl.pointer_type(tl.float32))
    tl.store(ptrs, tl.load(ptrs, mask=mask) + 1, mask=mask)


# ------------------------------------------------------------------------------------------ SGD
@triton.jit
def _sgd_block(
    p_ptr, g_ptr, b_ptr, w_ptr, offs, mask, first, inv_scale, lr, momentum, dampening, wd,
    MASKED: tl.constexpr, ACC: tl.constexpr, MASTER: tl.constexpr, MOMENTUM: tl.constexpr,
    NESTEROV: tl.constexpr, MAXIMIZE: tl.constexpr, WD: tl.constexpr, SCALE: tl.constexpr,
):  # fmt: skip
    if MASTER:
        p = _ld(w_ptr, offs, mask, MASKED, ACC)
    else:
        p = _ld(p_ptr, offs, mask, MASKED, ACC)
    g = _ld(g_ptr, offs, mask, MASKED, ACC)
    if SCALE:
        g = g * inv_scale
        _st(g_ptr, offs, g, mask, MASKED)
    if MAXIMIZE:
        g = -g
    if WD:
        g = g + wd * p
    if MOMENTUM:
        if first != 0:  # a new buffer starts as the gradient itself (torch clones it)
            b = g
        else:
            b = momentum * _ld(b_ptr, offs, mask, MASKED, ACC) + (1 - dampening) * g
        _st(b_ptr, offs, b, mask, MASKED)
        if NESTEROV:
            g = g + momentum * b
        else:
            g = b
    p = p - lr * g
    if MASTER:
        _st(w_ptr, offs, p, mask, MASKED)
    _st(p_ptr, offs, p, mask, MASKED)


@triton.jit
def _sgd_kernel(
    table, chunk_base, lr, momentum, dampening, wd, grad_scale, found_inf,
    P: tl.constexpr, S: tl.constexpr, ACC: tl.constexpr, MASTER: tl.constexpr, MOMENTUM: tl.constexpr,
    NESTEROV: tl.constexpr, MAXIMIZE: tl.constexpr, WD: tl.constexpr, SCALE: tl.constexpr,
    FOUND_INF: tl.constexpr, ALIGNED: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    row, start, n = _locate(table, chunk_base, 6)
    if FOUND_INF:
        n = tl.where(tl.load(found_inf) != 0, 0, n)
    p_ptr = _ptr(row, 1, P, ALIGNED)
    g_ptr = _ptr(row, 2, P, ALIGNED)
    b_ptr = _ptr(row, 3, S, ALIGNED)
    w_ptr = _ptr(row, 4, tl.float32, ALIGNED)
    first = tl.load(row + 5)
    inv_scale = 1.0
    if SCALE:
        inv_scale = 1 / tl.load(grad_scale).to(ACC)
    cols = tl.arange(0, BLOCK)
    if start + CHUNK <= n:
        for off in range(0, CHUNK, BLOCK):
            _sgd_block(
                p_ptr, g_ptr, b_ptr, w_ptr, start + off + cols, None, first, inv_scale, lr, momentum, dampening, wd,
                False, ACC, MASTER, MOMENTUM, NESTEROV, MAXIMIZE, WD, SCALE,
            )  # fmt: skip
    else:
        for off in range(0, CHUNK, BLOCK):
            offs = start + off + cols
            _sgd_block(
                p_ptr, g_ptr, b_ptr, w_ptr, offs, offs < n, first, inv_scale, lr, momentum, dampening, wd,
                True, ACC, MASTER, MOMENTUM, NESTEROV, MAXIMIZE, WD, SCALE,
            )  # fmt: skip


# ------------------------------------------------------------------------------------------ norm, clip
@triton.jit
def _norm_term(x, p, NORM: tl.constexpr):
    a = tl.abs(x)
    if NORM == 2:
        return a * a
    elif NORM == 3:
        return tl.where(a == 0, 0.0, lib.pow(a, p))
    else:
        return a


@triton.jit
def _norm_partial_kernel(
    table, chunk_base, partials, p,
    X: tl.constexpr, ACC: tl.constexpr, NORM: tl.constexpr, ALIGNED: tl.constexpr,
    BLOCK: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    """partials[pid] = sum (max for inf) of |x|^p over this program's chunk."""
    row, start, n = _locate(table, chunk_base, 2)
    x_ptr = _ptr(row, 1, X, ALIGNED)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], ACC)
    if start + CHUNK <= n:
        for off in range(0, CHUNK, BLOCK):
            t = _norm_term(_ld(x_ptr, start + off + cols, None, False, ACC), p, NORM)
            acc = tl.maximum(acc, t) if NORM == 0 else acc + t
    else:
        for off in range(0, CHUNK, BLOCK):
            offs = start + off + cols
            t = _norm_term(_ld(x_ptr, offs, offs < n, True, ACC), p, NORM)
            acc = tl.maximum(acc, t) if NORM == 0 else acc + t
    total = tl.max(acc, axis=0) if NORM == 0 else tl.sum(acc, axis=0)
    tl.store(partials + tl.program_id(0), total.to(tl.float64))


@triton.jit
def _norm_finish_kernel(partials, count, out, p, NORM: tl.constexpr, BLOCK: tl.constexpr):
    """out = the p-th root of the sum of the partials (their max for inf), cast to out's dtype."""
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float64)
    for start in range(0, count, BLOCK):
        v = tl.load(partials + start + cols, mask=start + cols < count, other=0)
        acc = tl.maximum(acc, v) if NORM == 0 else acc + v
    total = tl.max(acc, axis=0) if NORM == 0 else tl.sum(acc, axis=0)
    if NORM == 2:
        total = lib.sqrt(total)
    elif NORM == 3:
        total = lib.pow(total, 1 / p)
    tl.store(out, cast_to(total, out.dtype.element_ty))


@triton.jit
def _clip_kernel(
    table, chunk_base, total_norm, max_norm,
    X: tl.constexpr, N: tl.constexpr, ACC: tl.constexpr, ALIGNED: tl.constexpr,
    BLOCK: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    """x *= min(1, max_norm / (total_norm + 1e-6)), each step rounded to the norm's dtype N as torch does."""
    total = tl.load(total_norm)
    shifted = cast_to(cast_to(total, ACC) + 1e-6, N)
    coef = cast_to(div_rn(cast_to(cast_to(max_norm, N), ACC), cast_to(shifted, ACC)), N)
    coef = tl.minimum(cast_to(coef, ACC), 1.0)
    row, start, n = _locate(table, chunk_base, 2)
    x_ptr = _ptr(row, 1, X, ALIGNED)
    cols = tl.arange(0, BLOCK)
    if start + CHUNK <= n:
        for off in range(0, CHUNK, BLOCK):
            offs = start + off + cols
            _st(x_ptr, offs, _ld(x_ptr, offs, None, False, ACC) * coef, None, False)
    else:
        for off in range(0, CHUNK, BLOCK):
            offs = start + off + cols
            mask = offs < n
            _st(x_ptr, offs, _ld(x_ptr, offs, mask, True, ACC) * coef, mask, True)


_ADAM = Kernel(_adam_kernel)
_BUMP = Kernel(_bump_steps_kernel)
_SGD = Kernel(_sgd_kernel)
_NORM_PARTIAL = Kernel(_norm_partial_kernel)
_NORM_FINISH = Kernel(_norm_finish_kernel)
_CLIP = Kernel(_clip_kernel)


# ------------------------------------------------------------------------------------------ launchers
class NotDense(ValueError):
    """A tensor the multi-tensor kernels cannot stream because it is not contiguous: the caller may run
    the launch again on contiguous copies (and copy the results back)."""


def pack(flat: list[int], width: int, chunk: int = CHUNK) -> tuple[np.ndarray, int, int, tuple]:
    """The int64 table of a launch: the tensor rows, given as one flat list of ``width`` fields each
    (field 0 = element count), then one ``(tensor, first element)`` row per program. Returns (table,
    offset of the program rows, programs, upload key): the tensor rows and the chunk determine the
    program rows, so the key need not hash them."""
    head = np.array(flat, dtype=np.int64)
    progs = _program_rows(tuple(flat[::width]), chunk)
    return np.concatenate([head, progs]), head.size, len(progs) // 2, (chunk, width, head.tobytes())


@functools.lru_cache(maxsize=64)
def _program_rows(numels: tuple[int, ...], chunk: int) -> np.ndarray:
    """The flat ``(tensor, first element)`` rows for tensors of these sizes: the same every step of a
    training loop, so built once (read-only: callers concatenate it into a new table)."""
    per = -(-np.asarray(numels, dtype=np.int64) // chunk)  # chunks per tensor; empty tensors get none
    tensor_of = np.repeat(np.arange(len(numels), dtype=np.int64), per)
    first = np.arange(len(tensor_of), dtype=np.int64) - np.repeat(np.cumsum(per) - per, per)
    progs = np.stack([tensor_of, first * chunk], axis=1).reshape(-1)
    progs.flags.writeable = False
    return progs


Column = tuple[str, Sequence[BufferLike] | None, str | None]  # (name, buffers or None, required dtype or None)


def _rows(
    params: Sequence[BufferLike], columns: Sequence[Column], extra: Sequence[Sequence[int]] | None = None
) -> tuple[list[int], bool]:
    """The tensor rows of a launch as one flat list, checked in the same pass (it runs over every tensor
    of a model every step, so it is the launch's host cost): per tensor its element count, the pointer of
    its buffer in each column (0 where the column is None), then ``extra[i]``. Every buffer must have its
    parameter's shape and its column's dtype (ValueError / TypeError) and be contiguous (NotDense).
    Returns the rows and whether every pointer is 16-byte aligned."""
    flat: list[int] = []
    bits = 0
    for i, p in enumerate(params):
        shape = p.shape if p.shape.__class__ is tuple else tuple(p.shape)
        numel, dense = _layout(shape)
        flat.append(numel)
        for name, bufs, dtype in columns:
            if bufs is None:
                flat.append(0)
                continue
            b = bufs[i]
            # (tuple() only where the plain comparison fails: a buffer may hold its shape as a list)
            if b is not p and b.shape != shape and tuple(b.shape) != shape:
                raise ValueError(f"{name}: shape {tuple(b.shape)} does not match its parameter's {shape}")
            if dtype is not None and b.dtype != dtype:
                raise TypeError(f"{name}: expected every tensor in {dtype}, got {b.dtype}")
            if b.strides != dense and tuple(b.strides) != dense and not is_dense(b):
                raise NotDense(f"{name}: tensors must be contiguous (shape {shape}, strides {tuple(b.strides)})")
            ptr = b.ptr
            bits |= ptr
            flat.append(ptr)
        if extra is not None:
            flat.extend(extra[i])
    return flat, bits % 16 == 0


@functools.lru_cache(maxsize=256)
def _layout(shape: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """(element count, row-major strides) of ``shape``: a model has few distinct parameter shapes."""
    strides, expect = [], 1
    for size in reversed(shape):
        strides.append(expect)
        expect *= size
    return expect, tuple(reversed(strides))


def _scalar(dtype: str) -> str:
    return "fp64" if dtype == "float64" else "fp32"


def _opt_ptr(b: BufferLike | None) -> int:
    return 0 if b is None else b.ptr


def _grid(programs: int) -> tuple[int, int, int]:
    return (programs, 1, 1)


def adam(
    params: Sequence[BufferLike],
    grads: Sequence[BufferLike],
    exp_avgs: Sequence[BufferLike],
    exp_avg_sqs: Sequence[BufferLike],
    max_exp_avg_sqs: Sequence[BufferLike] | None,
    *,
    steps: Sequence[BufferLike] | None = None,
    step: float | None = None,
    masters: Sequence[BufferLike] | None = None,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    maximize: bool = False,
    grad_scale: BufferLike | None = None,
    found_inf: BufferLike | None = None,
    upload: Upload,
    stream: int = 0,
) -> None:
    """One Adam / AdamW step over every tensor, in place, in one launch (plus one tiny launch that adds 1
    to the device ``steps``, float32 0-d counters, one per tensor). Without ``steps`` the bias corrections
    use ``step`` (the host count, already advanced). ``masters``: fp32 copies of bf16/fp16 ``params``
    that are updated and cast back into ``params``. ``max_exp_avg_sqs`` given means amsgrad."""
    count = len(params)
    if count == 0:
        return
    pdt = params[0].dtype
    sdt = exp_avgs[0].dtype
    amsgrad = max_exp_avg_sqs is not None
    if (steps is None) == (step is None):
        raise ValueError("adam: give either device `steps` or a host `step`")
    acc = "float64" if pdt == "float64" or sdt == "float64" else "float32"
    columns: list[Column] = [
        ("params", params, pdt),
        ("grads", grads, pdt),
        ("exp_avgs", exp_avgs, sdt),
        ("exp_avg_sqs", exp_avg_sqs, sdt),
        ("max_exp_avg_sqs", max_exp_avg_sqs, sdt),
        ("masters", masters, "float32"),
    ]
    # The step counters (fp32 scalars, 4-byte aligned) stay out of the alignment test.
    counters = [(s.ptr,) for s in steps] if steps is not None else [(0,)] * count
    flat, aligned = _rows(params, columns, counters)
    table, base, programs, table_key = pack(flat, _ADAM_ROW)
    addr = upload(table, table_key)
    if steps is not None:
        key: tuple[object, ...] = (found_inf is not None,)
        fn = _BUMP.cache.get(key)
        if fn is None:
            fn = _BUMP.build(
                key,
                {"table": "*i64", "count": "i32", "found_inf": "*fp32"},
                dict(ROW=_ADAM_ROW, FOUND_INF=found_inf is not None, BLOCK=128),
            )
        fn((cdiv(count, 128), 1, 1), stream, (addr, count, _opt_ptr(found_inf), _ADAM_ROW, found_inf is not None, 128))
    if programs == 0:
        return
    flags = dict(
        MASTER=masters is not None,
        AMSGRAD=amsgrad,
        MAXIMIZE=maximize,
        WD=weight_decay != 0,
        DECOUPLED=decoupled,
        SCALE=grad_scale is not None,
        FOUND_INF=found_inf is not None,
        STEP_PTR=steps is not None,
        ALIGNED=aligned,
    )
    key = (pdt, sdt, acc, *flags.values())
    fn = _ADAM.cache.get(key)
    if fn is None:
        sc = _scalar(acc)
        types = {
            "table": "*i64",
            "chunk_base": "i64",
            **{n: "fp64" for n in ("step_host", "lr", "beta1", "beta2")},
            **{n: sc for n in ("b1", "omb1", "b2", "omb2", "eps", "wd", "decay")},
            "grad_scale": "*fp32",
            "found_inf": "*fp32",
        }
        consts = dict(P=tl_dtype(pdt), S=tl_dtype(sdt), ACC=tl_dtype(acc), **flags, BLOCK=BLOCK, CHUNK=CHUNK)
        fn = _ADAM.build(key, types, consts, num_warps=8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        _grid(programs),
        stream,
        (
            addr,
            base,
            float(step or 0.0),
            lr,
            beta1,
            beta2,
            beta1,
            1 - beta1,
            beta2,
            1 - beta2,
            eps,
            weight_decay,
            1 - lr * weight_decay,
            _opt_ptr(grad_scale),
            _opt_ptr(found_inf),
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def sgd(
    params: Sequence[BufferLike],
    grads: Sequence[BufferLike],
    momentum_buffers: Sequence[BufferLike] | None,
    *,
    first_step: Sequence[bool] | None = None,
    masters: Sequence[BufferLike] | None = None,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    maximize: bool = False,
    grad_scale: BufferLike | None = None,
    found_inf: BufferLike | None = None,
    upload: Upload,
    stream: int = 0,
) -> None:
    """One SGD step over every tensor, in place, in one launch. With momentum, ``momentum_buffers``
    are updated; a tensor whose ``first_step`` is True has its buffer set to the gradient (torch's
    clone on the first step), so it may be uninitialised memory."""
    count = len(params)
    if count == 0:
        return
    pdt = params[0].dtype
    with_momentum = momentum != 0
    sdt = pdt
    if with_momentum:
        if momentum_buffers is None:
            raise ValueError("sgd: momentum needs momentum_buffers")
        sdt = momentum_buffers[0].dtype
    acc = "float64" if pdt == "float64" or sdt == "float64" else "float32"
    columns: list[Column] = [
        ("params", params, pdt),
        ("grads", grads, pdt),
        ("momentum_buffers", momentum_buffers if with_momentum else None, sdt),
        ("masters", masters, "float32"),
    ]
    firsts = [(int(bool(f)),) for f in first_step] if first_step is not None else [(0,)] * count
    flat, aligned = _rows(params, columns, firsts)
    table, base, programs, table_key = pack(flat, _SGD_ROW)
    if programs == 0:
        return
    flags = dict(
        MASTER=masters is not None,
        MOMENTUM=with_momentum,
        NESTEROV=nesterov,
        MAXIMIZE=maximize,
        WD=weight_decay != 0,
        SCALE=grad_scale is not None,
        FOUND_INF=found_inf is not None,
        ALIGNED=aligned,
    )
    key = (pdt, sdt, acc, *flags.values())
    fn = _SGD.cache.get(key)
    if fn is None:
        sc = _scalar(acc)
        types = {
            "table": "*i64",
            "chunk_base": "i64",
            **{n: sc for n in ("lr", "momentum", "dampening", "wd")},
            "grad_scale": "*fp32",
            "found_inf": "*fp32",
        }
        consts = dict(P=tl_dtype(pdt), S=tl_dtype(sdt), ACC=tl_dtype(acc), **flags, BLOCK=BLOCK, CHUNK=CHUNK)
        fn = _SGD.build(key, types, consts, num_warps=8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        _grid(programs),
        stream,
        (
            upload(table, table_key),
            base,
            lr,
            momentum,
            dampening,
            weight_decay,
            _opt_ptr(grad_scale),
            _opt_ptr(found_inf),
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def norm_code(norm_type: float) -> int | None:
    """The kernels' code for a p-norm, or None where they have none (p <= 0, -inf, nan)."""
    p = float(norm_type)
    if p in _NORM_CODES:
        return _NORM_CODES[p]
    return 3 if 0 < p < math.inf else None


def total_norm(
    groups: Sequence[Sequence[BufferLike]], out: BufferLike, *, norm_type: float = 2.0, upload: Upload, stream: int = 0
) -> None:
    """The p-norm of all tensors together (as one vector) into the 0-d ``out``: one launch per group (a
    group holds tensors of one dtype) writing per-program partial results (fp64), then one finish launch."""
    code = norm_code(norm_type)
    if code is None:
        raise ValueError(f"total_norm: unsupported norm_type {norm_type}")
    plans = []
    total_programs = 0
    for tensors in groups:
        if not tensors:
            continue
        xdt = tensors[0].dtype
        flat, aligned = _rows(tensors, [("tensors", tensors, xdt)])
        table, base, programs, table_key = pack(flat, _ONE_ROW)
        plans.append((xdt, aligned, table, table_key, base, programs, total_programs))
        total_programs += programs
    partials = runtime.scratch(8 * max(total_programs, 1), stream)
    p = float(norm_type)
    for xdt, aligned, table, table_key, base, programs, first in plans:
        if programs == 0:
            continue
        acc = accumulate_dtype(xdt)
        key: tuple[object, ...] = (xdt, code, aligned)
        fn = _NORM_PARTIAL.cache.get(key)
        if fn is None:
            types = {"table": "*i64", "chunk_base": "i64", "partials": "*fp64", "p": _scalar(acc)}
            consts = dict(X=tl_dtype(xdt), ACC=tl_dtype(acc), NORM=code, ALIGNED=key[2], BLOCK=BLOCK, CHUNK=CHUNK)
            fn = _NORM_PARTIAL.build(key, types, consts, num_warps=8)
            fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
        fn(_grid(programs), stream, (upload(table, table_key), base, partials + 8 * first, p, *fn._consts))  # type: ignore[attr-defined]
    key = (out.dtype, code, False)
    fn = _NORM_FINISH.cache.get(key)
    if fn is None:
        types = {"partials": "*fp64", "count": "i32", "out": ptr_type(out.dtype), "p": "fp64"}
        fn = _NORM_FINISH.build(key, types, dict(NORM=code, BLOCK=1024), num_warps=4)
    fn((1, 1, 1), stream, (partials, total_programs, out.ptr, p, code, 1024))


def clip_by_total_norm(
    tensors: Sequence[BufferLike], total_norm: BufferLike, *, max_norm: float, upload: Upload, stream: int = 0
) -> None:
    """Every tensor (one dtype) *= min(1, max_norm / (total_norm + 1e-6)), read from the 0-d device
    ``total_norm``: no host synchronisation, one launch."""
    if not tensors:
        return
    xdt = tensors[0].dtype
    flat, aligned = _rows(tensors, [("tensors", tensors, xdt)])
    table, base, programs, table_key = pack(flat, _ONE_ROW)
    if programs == 0:
        return
    acc = "float64" if xdt == "float64" or total_norm.dtype == "float64" else "float32"
    key = (xdt, total_norm.dtype, acc, aligned)
    fn = _CLIP.cache.get(key)
    if fn is None:
        types = {"table": "*i64", "chunk_base": "i64", "total_norm": ptr_type(total_norm.dtype), "max_norm": "fp64"}
        consts = dict(
            X=tl_dtype(xdt), N=tl_dtype(total_norm.dtype), ACC=tl_dtype(acc), ALIGNED=key[3], BLOCK=BLOCK, CHUNK=CHUNK
        )
        fn = _CLIP.build(key, types, consts, num_warps=8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(_grid(programs), stream, (upload(table, table_key), base, total_norm.ptr, float(max_norm), *fn._consts))  # type: ignore[attr-defined]
