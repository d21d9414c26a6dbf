"""2-D tiled elementwise kernels: operands whose unit-stride dims differ (``a + b.t()``, ``x.t().contiguous()``).

The flat-index kernels in elementwise.py walk the output in order; an operand stored
transposed is then read one element per row, 32 rows per warp, and every 4-byte
value costs a 32-byte sector. Here a program owns a ``BLOCK_R x BLOCK_C`` tile of a
rank-2 iteration space (what ``strided.layout`` collapses such an op to) and builds each
operand's pointer grid with its unit-stride dim known to the compiler (``*_UNIT``
constexprs). Triton's coalescing pass then gives every load and the store a layout
that is contiguous along that operand's own unit-stride dim (16 bytes per thread), and
moves the values between layouts through shared memory: every global access is
coalesced, whichever dim each operand is contiguous along.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info
from .elementwise_ops import binary_op, cast_to, unary_op
from .runtime import Kernel, cdiv, ptr_type
from .strided import Layout

_MAX_GRID_Y = 65535


@triton.jit
def _grid_ptrs(base, i, j, s0, s1, UNIT: tl.constexpr):
    """Pointers of a tile at rows ``i`` and columns ``j``; the unit-stride dim (0, 1 or none: -1) is spelled out."""
    if UNIT == 1:
        return base + (i[:, None] * s0 + j[None, :])
    elif UNIT == 0:
        return base + (i[:, None] + j[None, :] * s1)
    else:
        return base + (i[:, None] * s0 + j[None, :] * s1)


@triton.jit
def _tile(R, C, INT64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_r = tl.program_id(1)
    if INT64:
        pid_c = pid_c.to(tl.int64)
        pid_r = pid_r.to(tl.int64)
    i = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    j = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    full = ((pid_r + 1) * BLOCK_R <= R) & ((pid_c + 1) * BLOCK_C <= C)
    return i, j, full, (i < R)[:, None] & (j < C)[None, :]


@triton.jit
def _unary_tiled_kernel(
    x,
    out,
    R,
    C,
    xs0,
    xs1,
    os0,
    os1,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    X_UNIT: tl.constexpr,
    O_UNIT: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    i, j, full, mask = _tile(R, C, INT64, BLOCK_R, BLOCK_C)
    px = _grid_ptrs(x, i, j, xs0, xs1, X_UNIT)
    po = _grid_ptrs(out, i, j, os0, os1, O_UNIT)
    # Whole tiles go unmasked: a mask the compiler cannot prove uniform over 16 bytes forces scalar accesses.
    if full:
        r = unary_op(cast_to(tl.load(px), CDT), OP)
        tl.store(po, cast_to(r, out.dtype.element_ty))
    else:
        r = unary_op(cast_to(tl.load(px, mask=mask), CDT), OP)
        tl.store(po, cast_to(r, out.dtype.element_ty), mask=mask)


@triton.jit
def _binary_tiled_kernel(
    a,
    b,
    out,
    R,
    C,
    as0,
    as1,
    bs0,
    bs1,
    os0,
    os1,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    A_UNIT: tl.constexpr,
    B_UNIT: tl.constexpr,
    O_UNIT: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    i, j, full, mask = _tile(R, C, INT64, BLOCK_R, BLOCK_C)
    pa = _grid_ptrs(a, i, j, as0, as1, A_UNIT)
    pb = _grid_ptrs(b, i, j, bs0, bs1, B_UNIT)
    po = _grid_ptrs(out, i, j, os0, os1, O_UNIT)
    if full:
        r = binary_op(cast_to(tl.load(pa), CDT), cast_to(tl.load(pb), CDT), OP, CDT)
        tl.store(po, cast_to(r, out.dtype.element_ty))
    else:
        av = cast_to(tl.load(pa, mask=mask), CDT)
        bv = cast_to(tl.load(pb, mask=mask), CDT)
        tl.store(po, cast_to(binary_op(av, bv, OP, CDT), out.dtype.element_ty), mask=mask)


_UNARY = Kernel(_unary_tiled_kernel)
_BINARY = Kernel(_binary_tiled_kernel)


def tile_config(itemsize: int) -> tuple[int, int, int]:
    """(BLOCK_R, BLOCK_C, num_warps); a plain function so that benchmarks/sweep_reduce.py can replace it.

    Square tiles, so that each operand reads whole 128-byte lines along its own contiguous dim:
    64 x 64 is 32 values per thread with 4 warps and 16 KB of shared memory per converted fp32 operand.
    """
    return (64, 64, 4) if itemsize >= 4 else (64, 128, 8) if itemsize == 2 else (128, 128, 8)


def _unit(s0: int, s1: int) -> int:
    return 1 if s1 == 1 else 0 if s0 == 1 else -1


def wanted(lay: Layout, operands: int) -> bool:
    """Whether ``lay`` (output first) is a rank-2 space whose operands disagree on the unit-stride dim."""
    if lay.rank != 2:
        return False
    units = {_unit(st[0], st[1]) for st in lay.strides[: operands + 1]}
    return 0 in units and 1 in units and lay.n // lay.sizes[0] <= 32 * _MAX_GRID_Y  # BLOCK_R >= 32


def _launch(
    kernel: Kernel,
    key: tuple,
    types: dict[str, str],
    consts: dict[str, Any],
    lay: Layout,
    ptrs: tuple[int, ...],
    strides: list[tuple[int, ...]],
    aligned: tuple[str, ...],
    stream: int,
) -> None:
    block_r, block_c, warps = consts.pop("_cfg")
    fn = kernel.cache.get(key)
    if fn is None:
        fn = kernel.build(key, types, {**consts, "BLOCK_R": block_r, "BLOCK_C": block_c}, aligned, num_warps=warps)
        fn._consts = (*consts.values(), block_r, block_c)  # type: ignore[attr-defined]
    C = lay.sizes[0]
    R = lay.n // C
    flat = tuple(s for st in strides for s in (st[0], st[1]))
    fn((cdiv(C, block_c), cdiv(R, block_r), 1), stream, (*ptrs, R, C, *flat, *fn._consts))  # type: ignore[attr-defined]


def _aligned(names: tuple[str, ...], ptrs: tuple[int, ...], strides: list[tuple[int, ...]]) -> tuple[str, ...]:
    out: list[str] = [n for n, p in zip(names, ptrs) if p % 16 == 0]
    for n, st in zip(names, strides):
        out += [f"{n[0]}s{d}" for d in (0, 1) if st[d] % 16 == 0]
    return tuple(out)


def unary(op: str, x: BufferLike, out: BufferLike, lay: Layout, cdt: str, *, stream: int = 0) -> None:
    """``out = op(x)`` over a rank-2 ``lay`` (strides: out, x) accepted by ``wanted``."""
    strides = [lay.strides[1], lay.strides[0]]
    ptrs = (x.ptr, out.ptr)
    aligned = _aligned(("x", "out"), ptrs, strides)
    units = tuple(_unit(st[0], st[1]) for st in strides)
    cfg = tile_config(max(dtype_info(x.dtype).itemsize, dtype_info(out.dtype).itemsize))
    key = (op, x.dtype, out.dtype, cdt, units, lay.int64, cfg, aligned)
    it = "i64" if lay.int64 else "i32"
    types = {
        "x": ptr_type(x.dtype),
        "out": ptr_type(out.dtype),
        **{n: it for n in ("R", "C", "xs0", "xs1", "os0", "os1")},
    }
    consts = dict(OP=op, CDT=dtype_info(cdt).tl, X_UNIT=units[0], O_UNIT=units[1], INT64=lay.int64, _cfg=cfg)
    _launch(_UNARY, key, types, consts, lay, ptrs, strides, aligned, stream)


def binary(op: str, a: BufferLike, b: BufferLike, out: BufferLike, lay: Layout, cdt: str, *, stream: int = 0) -> None:
    """``out = op(a, b)`` over a rank-2 ``lay`` (strides: out, a, b) accepted by ``wanted``."""
    strides = [lay.strides[1], lay.strides[2], lay.strides[0]]
    ptrs = (a.ptr, b.ptr, out.ptr)
    aligned = _aligned(("a", "b", "out"), ptrs, strides)
    units = tuple(_unit(st[0], st[1]) for st in strides)
    sizes = [dtype_info(t).itemsize for t in (a.dtype, b.dtype, out.dtype)]
    cfg = tile_config(max(sizes))
    key = (op, a.dtype, b.dtype, out.dtype, cdt, units, lay.int64, cfg, aligned)
    it = "i64" if lay.int64 else "i32"
    names = ("R", "C", "as0", "as1", "bs0", "bs1", "os0", "os1")
    types = {"a": ptr_type(a.dtype), "b": ptr_type(b.dtype), "out": ptr_type(out.dtype), **{n: it for n in names}}
    consts = dict(
        OP=op, CDT=dtype_info(cdt).tl, A_UNIT=units[0], B_UNIT=units[1], O_UNIT=units[2], INT64=lay.int64, _cfg=cfg
    )
    _launch(_BINARY, key, types, consts, lay, ptrs, strides, aligned, stream)
