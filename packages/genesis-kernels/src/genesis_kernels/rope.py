"""Rotary position embeddings (RoPE): one launch rotates every head of every token, forward or backward.

For a token at position ``p`` and a pair ``(x1, x2)`` of its head's first ``rotary_dim`` features:

``out1 = x1 cos(p, i) - x2 sin(p, i)``,  ``out2 = x2 cos(p, i) + x1 sin(p, i)``   (i < rotary_dim / 2)

the pairs being ``(i, i + rotary_dim / 2)`` (half-split: GPT-NeoX, Llama in HF transformers) or
``(2i, 2i + 1)`` (interleaved: GPT-J, Meta's original Llama). Features past ``rotary_dim`` are copied
(partial rotary). The backward is the rotation by ``-theta``: the same kernel with ``sin`` negated.

Operands: ``x`` and ``out`` are 4-D, ``(batch, seq, heads, head_dim)`` or ``(batch, heads, seq, head_dim)``
(``seq_dim`` 1 or 2) with any strides; ``cos`` / ``sin`` are tables ``(max_pos, rotary_dim / 2)``;
``positions`` is an int32 / int64 ``(batch, seq)`` buffer on the device (strides 0 to share one row), read
by the kernel itself, so a captured decode step advances positions without the host. A position outside
``[0, max_pos)`` is clamped into it (the kernel cannot raise; the layers above check where they can).
Math in float32 (float64 for float64 operands); results rounded once to ``out``'s dtype.

q and k in one launch: ``rope(q, ..., k=k, k_out=k_out)`` rotates both (k may have fewer heads, GQA), the
programs of the grid split between them. Each program rotates a block of rows, a row being one (token,
head) vector, tokens-first so that a block covers several tokens when heads are few; the row's position
and its row of ``cos`` / ``sin`` are gathered per row (cached reads). Specialised for head_dim's stride 1
(a constexpr flag) with ``rotary_dim / 2`` a constexpr and the row strides' divisibility by 16 passed to
Triton (divisibility attributes): the half rows load and store as 16-byte vectors. The launch arguments
are worked out once per layout (shapes, strides, dtypes, pointer alignment); a call only reads pointers.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info, tl_dtype
from .elementwise import cast_to
from .runtime import Kernel, PlanTable, cdiv, next_pow2, ptr_type

_TILE = 1024  # pairs per program: rows per block = _TILE / (rotary_dim / 2), rounded to a power of two
_PROGRAMS = 256  # fewer rows per program while there would be fewer programs than this (decode)


@triton.jit
def _rotate_rows(
    x, out, cos, sin, pos, blk, R, S, H, MAX_POS,
    sxb, sxs, sxh, sxd, sob, sos, soh, sod, scp, scd, ssp, ssd, spb, sps,
    HALF: tl.constexpr, NPASS: tl.constexpr, INTERLEAVED: tl.constexpr, BACKWARD: tl.constexpr,
    UNIT_D: tl.constexpr, UNIT_T: tl.constexpr, CDT: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_Q: tl.constexpr,
):  # fmt: skip
    """Rotate rows ``blk * BLOCK_R ..`` of ``R`` (rows = (batch, seq, head) tokens-first) of x into out."""
    r = blk.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    live = r < R
    h = r % H
    tok = r // H
    s = tok % S
    b = tok // S
    p = tl.load(pos + b * spb + s * sps, mask=live, other=0).to(tl.int64)
    p = tl.where(p < 0, 0, tl.where(p >= MAX_POS, MAX_POS - 1, p))  # never read outside the tables
    i = tl.arange(0, BLOCK_P)
    mask = live[:, None] & (i < HALF)[None, :]
    ct = i if UNIT_T else i * scd
    st = i if UNIT_T else i * ssd
    c = cast_to(tl.load(cos + (p * scp)[:, None] + ct[None, :], mask=mask, other=0), CDT)
    sn = cast_to(tl.load(sin + (p * ssp)[:, None] + st[None, :], mask=mask, other=0), CDT)
    if BACKWARD:
        sn = -sn
    if INTERLEAVED:
        d1 = 2 * i
        d2 = d1 + 1
    else:
        d1 = i
        d2 = i + HALF
    hx = (b * sxb + s * sxs + h * sxh)[:, None]
    ho = (b * sob + s * sos + h * soh)[:, None]
    x1d, x2d = (d1, d2) if UNIT_D else (d1 * sxd, d2 * sxd)
    o1d, o2d = (d1, d2) if UNIT_D else (d1 * sod, d2 * sod)
    x1 = cast_to(tl.load(x + hx + x1d[None, :], mask=mask, other=0), CDT)
    x2 = cast_to(tl.load(x + hx + x2d[None, :], mask=mask, other=0), CDT)
    tl.store(out + ho + o1d[None, :], cast_to(x1 * c - x2 * sn, out.dtype.element_ty), mask=mask)
    tl.store(out + ho + o2d[None, :], cast_to(x2 * c + x1 * sn, out.dtype.element_ty), mask=mask)
    if NPASS > 0:  # features past rotary_dim: copied
        q = 2 * HALF + tl.arange(0, BLOCK_Q)
        pmask = live[:, None] & (q < 2 * HALF + NPASS)[None, :]
        xq, oq = (q, q) if UNIT_D else (q * sxd, q * sod)
        v = tl.load(x + hx + xq[None, :], mask=pmask, other=0)
        tl.store(out + ho + oq[None, :], cast_to(v, out.dtype.element_ty), mask=pmask)


@triton.jit
def _rope_kernel(
    x, out, k, kout, cos, sin, pos, NQ, RQ, RK, S, H, HK, MAX_POS,
    sxb, sxs, sxh, sxd, sob, sos, soh, sod, skb, sks, skh, skd, sjb, sjs, sjh, sjd, scp, scd, ssp, ssd, spb, sps,
    HALF: tl.constexpr, NPASS: tl.constexpr, HAS_K: tl.constexpr, INTERLEAVED: tl.constexpr,
    BACKWARD: tl.constexpr, UNIT_D: tl.constexpr, UNIT_T: tl.constexpr, CDT: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_Q: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    if HAS_K:
        if pid < NQ:
            _rotate_rows(x, out, cos, sin, pos, pid, RQ, S, H, MAX_POS, sxb, sxs, sxh, sxd, sob, sos, soh, sod,
                         scp, scd, ssp, ssd, spb, sps, HALF, NPASS, INTERLEAVED, BACKWARD, UNIT_D, UNIT_T, CDT,
                         BLOCK_R, BLOCK_P, BLOCK_Q)  # fmt: skip
        else:
            _rotate_rows(k, kout, cos, sin, pos, pid - NQ, RK, S, HK, MAX_POS, skb, sks, skh, skd, sjb, sjs, sjh,
                         sjd, scp, scd, ssp, ssd, spb, sps, HALF, NPASS, INTERLEAVED, BACKWARD, UNIT_D, UNIT_T, CDT,
                         BLOCK_R, BLOCK_P, BLOCK_Q)  # fmt: skip
    else:
        _rotate_rows(x, out, cos, sin, pos, pid, RQ, S, H, MAX_POS, sxb, sxs, sxh, sxd, sob, sos, soh, sod,
                     scp, scd, ssp, ssd, spb, sps, HALF, NPASS, INTERLEAVED, BACKWARD, UNIT_D, UNIT_T, CDT,
                     BLOCK_R, BLOCK_P, BLOCK_Q)  # fmt: skip


_KERNEL = Kernel(_rope_kernel)
_ROW_STRIDES = ("sxb", "sxs", "sxh", "sob", "sos", "soh", "skb", "sks", "skh", "sjb", "sjs", "sjh", "scp", "ssp")
_ALL_STRIDES = ("sxb", "sxs", "sxh", "sxd", "sob", "sos", "soh", "sod", "skb", "sks", "skh", "skd",
                "sjb", "sjs", "sjh", "sjd", "scp", "scd", "ssp", "ssd", "spb", "sps")  # fmt: skip

# layout -> (launch, grid, arguments after the pointers): checks and planning once per layout (the shapes,
# strides and dtypes of every operand, the flags, whether the pointers are 16-byte aligned).
_PLANS = PlanTable(512)  # a model meets a few layouts per sequence length


def _tokens_first(b: BufferLike, seq_dim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``b``'s (shape, strides) as (batch, seq, heads, head_dim), whichever of dims 1 / 2 holds seq."""
    shape, strides = tuple(b.shape), tuple(b.strides)
    if seq_dim == 2:
        shape = (shape[0], shape[2], shape[1], shape[3])
        strides = (strides[0], strides[2], strides[1], strides[3])
    return shape, strides


def _check(x: BufferLike, cos: BufferLike, sin: BufferLike, positions: BufferLike, out: BufferLike,
           seq_dim: int) -> None:  # fmt: skip
    if seq_dim not in (1, 2):
        raise ValueError(f"rope: seq_dim must be 1 or 2, got {seq_dim}")
    if len(x.shape) != 4 or tuple(out.shape) != tuple(x.shape):
        raise ValueError(f"rope: x and out must be the same 4-D shape, got {tuple(x.shape)} and {tuple(out.shape)}")
    if not dtype_info(x.dtype).is_float or not dtype_info(out.dtype).is_float:
        raise TypeError(f"rope: x and out must be float buffers, got {x.dtype} and {out.dtype}")
    if len(cos.shape) != 2 or tuple(sin.shape) != tuple(cos.shape) or sin.dtype != cos.dtype:
        raise ValueError(f"rope: cos and sin must be (max_pos, rotary_dim / 2) of one dtype, got "
                         f"{tuple(cos.shape)} {cos.dtype} and {tuple(sin.shape)} {sin.dtype}")  # fmt: skip
    if not dtype_info(cos.dtype).is_float:
        raise TypeError(f"rope: cos / sin must be float tables, got {cos.dtype}")
    if 2 * cos.shape[1] > x.shape[3]:
        raise ValueError(f"rope: rotary_dim {2 * cos.shape[1]} exceeds head_dim {x.shape[3]}")
    batch, seq = x.shape[0], x.shape[seq_dim]
    if positions.dtype not in ("int32", "int64") or tuple(positions.shape) != (batch, seq):
        raise ValueError(f"rope: positions must be int32 / int64 ({batch}, {seq}), got "
                         f"{tuple(positions.shape)} {positions.dtype}")  # fmt: skip


def _plan(x: BufferLike, cos: BufferLike, sin: BufferLike, positions: BufferLike, out: BufferLike,
          k: BufferLike | None, k_out: BufferLike | None, seq_dim: int, interleaved: bool, backward: bool,
          aligned: bool) -> tuple:  # fmt: skip
    """(launch, grid, the arguments after the pointers) of one layout, its operands checked."""
    _check(x, cos, sin, positions, out, seq_dim)
    (B, S, H, D), xs = _tokens_first(x, seq_dim)
    _, os_ = _tokens_first(out, seq_dim)
    HK, ks, js = H, xs, os_
    if k is not None:
        if k_out is None:
            raise ValueError("rope: k needs k_out")
        _check(k, cos, sin, positions, k_out, seq_dim)
        (BK, SK, HK, DK), ks = _tokens_first(k, seq_dim)
        _, js = _tokens_first(k_out, seq_dim)
        if (BK, SK, DK) != (B, S, D) or k.dtype != x.dtype or k_out.dtype != out.dtype:
            raise ValueError(f"rope: q {tuple(x.shape)} {x.dtype} and k {tuple(k.shape)} {k.dtype} must agree in "
                             f"batch, seq, head_dim and dtype (outputs too)")  # fmt: skip
    half = cos.shape[1]
    n_pass = D - 2 * half
    rows_q, rows_k = B * S * H, (B * S * HK if k is not None else 0)
    block_p = next_pow2(max(half, 1))
    block_q = next_pow2(max(n_pass, 1))
    most = max(1, _TILE // block_p)
    block_r = min(most, max(1, next_pow2(cdiv(rows_q + rows_k, _PROGRAMS))))
    cdt = "float64" if "float64" in (x.dtype, out.dtype) else "float32"
    d_strides = [xs[3], os_[3]] + ([ks[3], js[3]] if k is not None else [])
    unit_d = D <= 1 or all(st == 1 for st in d_strides)
    unit_t = half <= 1 or (cos.strides[1] == 1 and sin.strides[1] == 1)
    strides = (*xs, *os_, *ks, *js, *cos.strides, *sin.strides, *positions.strides)
    divisible = tuple(n for n, st in zip(_ALL_STRIDES, strides) if n in _ROW_STRIDES and st % 16 == 0)
    ptrs = ("x", "out", "k", "kout", "cos", "sin") if aligned else ()
    consts = {"HALF": half, "NPASS": n_pass, "HAS_K": k is not None, "INTERLEAVED": bool(interleaved),
              "BACKWARD": bool(backward), "UNIT_D": unit_d, "UNIT_T": unit_t, "CDT": tl_dtype(cdt),
              "BLOCK_R": block_r, "BLOCK_P": block_p, "BLOCK_Q": block_q}  # fmt: skip
    kdt, kodt = (k.dtype, k_out.dtype) if k is not None and k_out is not None else (x.dtype, out.dtype)
    key = (x.dtype, out.dtype, kdt, kodt, cos.dtype, positions.dtype, cdt, half, n_pass, k is not None,
           bool(interleaved), bool(backward), unit_d, unit_t, block_r, block_p, block_q, ptrs, divisible)  # fmt: skip
    fn = _KERNEL.cache.get(key)
    if fn is None:
        types = {"x": ptr_type(x.dtype), "out": ptr_type(out.dtype), "k": ptr_type(kdt), "kout": ptr_type(kodt)}
        types.update({"cos": ptr_type(cos.dtype), "sin": ptr_type(sin.dtype), "pos": ptr_type(positions.dtype)})
        types.update({n: "i32" for n in ("NQ", "RQ", "RK", "S", "H", "HK", "MAX_POS")})
        types.update({n: "i64" for n in _ALL_STRIDES})
        fn = _KERNEL.build(key, types, consts, (*ptrs, *divisible), num_warps=4 if block_r * block_p >= 512 else 2)
    nq, nk = cdiv(rows_q, block_r), cdiv(rows_k, block_r)
    tail = tuple(consts[n] for n in _KERNEL.arg_names if n in _KERNEL.constexpr_names)
    programs = nq + nk if D else 0
    return fn, (programs, 1, 1), (nq, rows_q, rows_k, S, H, HK, cos.shape[0], *strides, *tail)


def rope(
    x: BufferLike,
    cos: BufferLike,
    sin: BufferLike,
    positions: BufferLike,
    out: BufferLike,
    *,
    seq_dim: int = 1,
    interleaved: bool = False,
    backward: bool = False,
    k: BufferLike | None = None,
    k_out: BufferLike | None = None,
    stream: int = 0,
) -> None:
    """``out`` = ``x`` with its first ``2 * cos.shape[1]`` features of every head rotated by the angles of
    each token's position (by minus those angles with ``backward``, the gradient's rule); the rest copied.
    With ``k`` (and ``k_out``), ``k`` is rotated the same way into ``k_out`` in the same launch: same batch,
    sequence, head_dim and dtypes as ``x`` / ``out``, any number of heads and strides.

    ``out`` may be ``x`` itself (each element is read before the program writes it), ``k_out`` ``k``."""
    xp, op, cp, sp = x.ptr, out.ptr, cos.ptr, sin.ptr
    kp, kop = (k.ptr, k_out.ptr) if k is not None and k_out is not None else (xp, op)
    aligned = (xp | op | kp | kop | cp | sp) % 16 == 0
    key: tuple = (x.shape, x.strides, x.dtype, out.shape, out.strides, out.dtype, cos.shape, cos.strides, cos.dtype,
           sin.shape, sin.strides, sin.dtype, positions.shape, positions.strides, positions.dtype, seq_dim,
           interleaved, backward, aligned)  # fmt: skip
    if k is not None:
        key += (k.shape, k.strides, k.dtype, None if k_out is None else (k_out.shape, k_out.strides, k_out.dtype))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.put(key, _plan(x, cos, sin, positions, out, k, k_out, seq_dim, interleaved, backward, aligned))
    fn, grid, args = plan
    if grid[0]:
        fn(grid, stream, (xp, op, kp, kop, cp, sp, positions.ptr, *args))
