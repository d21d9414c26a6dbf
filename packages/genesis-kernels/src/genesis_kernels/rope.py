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

One program per (token, block of heads): it loads the token's position and its row of ``cos`` / ``sin``
once and rotates a ``(BLOCK_H, rotary_dim / 2)`` tile of pairs.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info, tl_dtype
from .elementwise import cast_to
from .runtime import Kernel, next_pow2, ptr_type

_TILE = 2048  # pairs per program: heads per block = _TILE / (rotary_dim / 2), rounded to a power of two


@triton.jit
def _rope_kernel(
    x, cos, sin, pos, out, S, H, HALF, PASS, MAX_POS,
    sxb, sxs, sxh, sxd, sob, sos, soh, sod, scp, scd, ssp, ssd, spb, sps,
    INTERLEAVED: tl.constexpr, BACKWARD: tl.constexpr, HAS_PASS: tl.constexpr, CDT: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_Q: tl.constexpr,
):  # fmt: skip
    tok = tl.program_id(0).to(tl.int64)
    b = tok // S
    s = tok % S
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    i = tl.arange(0, BLOCK_P)
    p = tl.load(pos + b * spb + s * sps).to(tl.int64)
    p = tl.where(p < 0, 0, tl.where(p >= MAX_POS, MAX_POS - 1, p))  # never read outside the tables
    in_half = i < HALF
    c = cast_to(tl.load(cos + p * scp + i * scd, mask=in_half, other=0), CDT)[None, :]
    sn = cast_to(tl.load(sin + p * ssp + i * ssd, mask=in_half, other=0), CDT)[None, :]
    if BACKWARD:
        sn = -sn
    if INTERLEAVED:
        d1 = 2 * i
        d2 = d1 + 1
    else:
        d1 = i
        d2 = i + HALF
    hx = (b * sxb + s * sxs) + h.to(tl.int64)[:, None] * sxh
    ho = (b * sob + s * sos) + h.to(tl.int64)[:, None] * soh
    mask = (h < H)[:, None] & in_half[None, :]
    x1 = cast_to(tl.load(x + hx + d1[None, :] * sxd, mask=mask, other=0), CDT)
    x2 = cast_to(tl.load(x + hx + d2[None, :] * sxd, mask=mask, other=0), CDT)
    tl.store(out + ho + d1[None, :] * sod, cast_to(x1 * c - x2 * sn, out.dtype.element_ty), mask=mask)
    tl.store(out + ho + d2[None, :] * sod, cast_to(x2 * c + x1 * sn, out.dtype.element_ty), mask=mask)
    if HAS_PASS:  # features past rotary_dim: copied
        q = 2 * HALF + tl.arange(0, BLOCK_Q)
        pmask = (h < H)[:, None] & (q < 2 * HALF + PASS)[None, :]
        v = tl.load(x + hx + q[None, :] * sxd, mask=pmask, other=0)
        tl.store(out + ho + q[None, :] * sod, cast_to(v, out.dtype.element_ty), mask=pmask)


_KERNEL = Kernel(_rope_kernel)
_STRIDES = ("sxb", "sxs", "sxh", "sxd", "sob", "sos", "soh", "sod", "scp", "scd", "ssp", "ssd", "spb", "sps")


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
    stream: int = 0,
) -> None:
    """``out`` = ``x`` with its first ``2 * cos.shape[1]`` features of every head rotated by the angles of
    each token's position (by minus those angles with ``backward``, the gradient's rule); the rest copied.

    ``out`` may be ``x`` itself (each element is read before the program writes it)."""
    _check(x, cos, sin, positions, out, seq_dim)
    (B, S, H, D), xs = _tokens_first(x, seq_dim)
    _, os_ = _tokens_first(out, seq_dim)
    half = cos.shape[1]
    n_pass = D - 2 * half
    if B * S * H == 0 or D == 0:
        return
    block_p = next_pow2(max(half, 1))
    block_q = next_pow2(max(n_pass, 1))
    block_h = min(next_pow2(H), max(1, _TILE // block_p))
    cdt = "float64" if "float64" in (x.dtype, out.dtype) else "float32"
    flags = {"INTERLEAVED": bool(interleaved), "BACKWARD": bool(backward), "HAS_PASS": n_pass > 0}
    key = (x.dtype, out.dtype, cos.dtype, positions.dtype, cdt, *flags.values(), block_h, block_p, block_q)
    consts = {**flags, "CDT": tl_dtype(cdt), "BLOCK_H": block_h, "BLOCK_P": block_p, "BLOCK_Q": block_q}
    fn = _KERNEL.cache.get(key)
    if fn is None:
        types = {"x": ptr_type(x.dtype), "out": ptr_type(out.dtype), "cos": ptr_type(cos.dtype)}
        types.update({"sin": ptr_type(sin.dtype), "pos": ptr_type(positions.dtype)})
        types.update({n: "i32" for n in ("S", "H", "HALF", "PASS", "MAX_POS")})
        types.update({n: "i64" for n in _STRIDES})
        fn = _KERNEL.build(key, types, consts, (), num_warps=4)
    strides = (*xs, *os_, *cos.strides, *sin.strides, *positions.strides)
    grid = (B * S, -(-H // block_h), 1)
    tail = [consts[k] for k in _KERNEL.arg_names if k in _KERNEL.constexpr_names]
    sizes = (S, H, half, n_pass, cos.shape[0])
    fn(grid, stream, (x.ptr, cos.ptr, sin.ptr, positions.ptr, out.ptr, *sizes, *strides, *tail))
