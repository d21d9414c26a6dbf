"""Fused activations: the backward of GELU / SiLU in one pass, and gated units (SwiGLU, GeGLU, GLU).

``activation_backward``  dx = dy * act'(x)                               (one read of dy and x, one write)
                         and, given ``y``, y = act(x) too, the forward's values (a recompute in backward)
``gated_forward``        out = act(gate) * up                            (one read of each, one write)
``gated_backward``       dgate = dy * up * act'(gate), dup = dy * act(gate)   (three reads, two writes)

Operands are read in place through their own strides: the launcher collapses the shared iteration
space (``buffer.collapse``) and takes its innermost dim as the columns of a 2-D tile, the other dims
as rows addressed through ``offset_of``. So a dense tensor is one long row, and ``gate`` / ``up`` as
the two halves of one tensor split along its last dim (F.glu's layout) are rows of stride ``2N``
read without a copy. With unit column strides (a constexpr) and 16-aligned pointers, row strides
and N, loads are 16-byte vectors. Math in float32 (float64 when an operand is float64).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import triton
import triton.language as tl

from .buffer import (
    INT32_LIMIT,
    MAX_RANK,
    BufferLike,
    by_layout,
    collapse,
    dtype_info,
    extent,
    numel,
    pad_dims,
    tl_dtype,
)
from .elementwise import cast_to, div_rn
from .elementwise_ops import unary_op
from .mathlib import lib
from .runtime import Kernel, cdiv, next_pow2, ptr_type
from .strided import offset_of, stride_types

# Activation kinds: "sigmoid" is torch's GLU gate (glu(a, b) = a * sigmoid(b), i.e. act(b) * a).
KINDS = ("gelu", "gelu_tanh", "silu", "sigmoid")

_INV_SQRT2 = tl.constexpr(0.7071067811865476)
_INV_SQRT_2PI = tl.constexpr(0.3989422804014327)
_SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
_GELU_TANH_C = tl.constexpr(0.044715)


@triton.jit
def act_and_grad(x, KIND: tl.constexpr):
    """(act(x), act'(x)) in x's (float) dtype; the unused half is removed by the compiler."""
    if KIND == "gelu":
        # (constants on the right: the interpreter's constexpr * tensor is not a tensor)
        cdf = (lib.erf(x * _INV_SQRT2) + 1.0) * 0.5
        pdf = lib.exp(x * x * -0.5) * _INV_SQRT_2PI
        return x * cdf, cdf + x * pdf
    elif KIND == "gelu_tanh":
        x2 = x * x
        t = lib.tanh((x + x2 * x * _GELU_TANH_C) * _SQRT_2_OVER_PI)
        half = (t + 1.0) * 0.5
        slope = half + x * (1.0 - t * t) * (x2 * (3.0 * _GELU_TANH_C) + 1.0) * (0.5 * _SQRT_2_OVER_PI)
        return x * half, slope
    elif KIND == "silu":
        s = div_rn(1.0, 1.0 + lib.exp(-x))
        return x * s, s * (1.0 + x * (1.0 - s))
    elif KIND == "sigmoid":
        s = div_rn(1.0, 1.0 + lib.exp(-x))
        return s, s * (1.0 - s)
    else:
        tl.static_assert(False, "unknown activation kind")


@triton.jit
def _tile(R, N, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    """This program's rows and columns (programs walk the columns of a row block first) and whether
    the tile lies wholly inside (R, N), so that its loads need no mask."""
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    col_blocks = tl.cdiv(N, BLOCK_N)
    r0 = (pid // col_blocks) * BLOCK_R
    c0 = (pid % col_blocks) * BLOCK_N
    r = r0 + tl.arange(0, BLOCK_R)
    c = c0 + tl.arange(0, BLOCK_N)
    full = (r0 + BLOCK_R <= R) & (c0 + BLOCK_N <= N)
    return r, c, full


@triton.jit
def _addr(row_off, c, inner, CONTIG: tl.constexpr):
    if CONTIG:
        return row_off[:, None] + c[None, :]
    else:
        return row_off[:, None] + c[None, :] * inner


@triton.jit
def _backward_body(x, dy, dx, ox, og, od, mask, KIND: tl.constexpr, CDT: tl.constexpr):
    xv = cast_to(tl.load(x + ox, mask=mask), CDT)
    gv = cast_to(tl.load(dy + og, mask=mask), CDT)
    _, slope = act_and_grad(xv, KIND)
    tl.store(dx + od, cast_to(gv * slope, dx.dtype.element_ty), mask=mask)


@triton.jit
def _backward_kernel(
    x, dy, dx, R, N, xn, gn, dn,
    S1, S2, S3, S4, S5, S6, S7,
    x0, x1, x2, x3, x4, x5, x6, x7,
    g0, g1, g2, g3, g4, g5, g6, g7,
    d0, d1, d2, d3, d4, d5, d6, d7,
    KIND: tl.constexpr, CDT: tl.constexpr, ROW_RANK: tl.constexpr, CONTIG: tl.constexpr,
    INT64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    r, c, full = _tile(R, N, BLOCK_R, BLOCK_N, INT64)
    ox = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, ROW_RANK), c, xn, CONTIG)
    og = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, g0, g1, g2, g3, g4, g5, g6, g7, ROW_RANK), c, gn, CONTIG)
    od = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, d0, d1, d2, d3, d4, d5, d6, d7, ROW_RANK), c, dn, CONTIG)
    if full:
        _backward_body(x, dy, dx, ox, og, od, None, KIND, CDT)
    else:
        _backward_body(x, dy, dx, ox, og, od, (r < R)[:, None] & (c < N)[None, :], KIND, CDT)


@triton.jit
def _backward_forward_body(x, dy, dx, y, ox, og, od, oy, mask, KIND: tl.constexpr, CDT: tl.constexpr):
    xv = cast_to(tl.load(x + ox, mask=mask), CDT)
    gv = cast_to(tl.load(dy + og, mask=mask), CDT)
    _, slope = act_and_grad(xv, KIND)
    tl.store(dx + od, cast_to(gv * slope, dx.dtype.element_ty), mask=mask)
    # the activation as the forward's elementwise op computes it, so the recomputed values are its own
    tl.store(y + oy, cast_to(unary_op(xv, KIND), y.dtype.element_ty), mask=mask)


@triton.jit
def _backward_forward_kernel(
    x, dy, dx, y, R, N, xn, gn, dn, yn,
    S1, S2, S3, S4, S5, S6, S7,
    x0, x1, x2, x3, x4, x5, x6, x7,
    g0, g1, g2, g3, g4, g5, g6, g7,
    d0, d1, d2, d3, d4, d5, d6, d7,
    y0, y1, y2, y3, y4, y5, y6, y7,
    KIND: tl.constexpr, CDT: tl.constexpr, ROW_RANK: tl.constexpr, CONTIG: tl.constexpr,
    INT64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    r, c, full = _tile(R, N, BLOCK_R, BLOCK_N, INT64)
    ox = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, ROW_RANK), c, xn, CONTIG)
    og = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, g0, g1, g2, g3, g4, g5, g6, g7, ROW_RANK), c, gn, CONTIG)
    od = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, d0, d1, d2, d3, d4, d5, d6, d7, ROW_RANK), c, dn, CONTIG)
    oy = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, y0, y1, y2, y3, y4, y5, y6, y7, ROW_RANK), c, yn, CONTIG)
    if full:
        _backward_forward_body(x, dy, dx, y, ox, og, od, oy, None, KIND, CDT)
    else:
        _backward_forward_body(x, dy, dx, y, ox, og, od, oy, (r < R)[:, None] & (c < N)[None, :], KIND, CDT)


@triton.jit
def _gated_forward_body(gate, up, out, oa, ob, oo, mask, KIND: tl.constexpr, CDT: tl.constexpr):
    a = cast_to(tl.load(gate + oa, mask=mask), CDT)
    b = cast_to(tl.load(up + ob, mask=mask), CDT)
    act, _ = act_and_grad(a, KIND)
    tl.store(out + oo, cast_to(act * b, out.dtype.element_ty), mask=mask)


@triton.jit
def _gated_forward_kernel(
    gate, up, out, R, N, an, bn, on,
    S1, S2, S3, S4, S5, S6, S7,
    a0, a1, a2, a3, a4, a5, a6, a7,
    b0, b1, b2, b3, b4, b5, b6, b7,
    o0, o1, o2, o3, o4, o5, o6, o7,
    KIND: tl.constexpr, CDT: tl.constexpr, ROW_RANK: tl.constexpr, CONTIG: tl.constexpr,
    INT64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    r, c, full = _tile(R, N, BLOCK_R, BLOCK_N, INT64)
    oa = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, a0, a1, a2, a3, a4, a5, a6, a7, ROW_RANK), c, an, CONTIG)
    ob = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, b0, b1, b2, b3, b4, b5, b6, b7, ROW_RANK), c, bn, CONTIG)
    oo = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, ROW_RANK), c, on, CONTIG)
    if full:
        _gated_forward_body(gate, up, out, oa, ob, oo, None, KIND, CDT)
    else:
        _gated_forward_body(gate, up, out, oa, ob, oo, (r < R)[:, None] & (c < N)[None, :], KIND, CDT)


@triton.jit
def _gated_backward_body(
    dy, gate, up, dgate, dup, og, oa, ob, oda, odb, mask, KIND: tl.constexpr, CDT: tl.constexpr
):  # fmt: skip
    g = cast_to(tl.load(dy + og, mask=mask), CDT)
    a = cast_to(tl.load(gate + oa, mask=mask), CDT)
    b = cast_to(tl.load(up + ob, mask=mask), CDT)
    act, slope = act_and_grad(a, KIND)
    tl.store(dgate + oda, cast_to(g * b * slope, dgate.dtype.element_ty), mask=mask)
    tl.store(dup + odb, cast_to(g * act, dup.dtype.element_ty), mask=mask)


@triton.jit
def _gated_backward_kernel(
    dy, gate, up, dgate, dup, R, N, gn, an, bn, dan, dbn,
    S1, S2, S3, S4, S5, S6, S7,
    g0, g1, g2, g3, g4, g5, g6, g7,
    a0, a1, a2, a3, a4, a5, a6, a7,
    b0, b1, b2, b3, b4, b5, b6, b7,
    p0, p1, p2, p3, p4, p5, p6, p7,
    q0, q1, q2, q3, q4, q5, q6, q7,
    KIND: tl.constexpr, CDT: tl.constexpr, ROW_RANK: tl.constexpr, CONTIG: tl.constexpr,
    INT64: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    r, c, full = _tile(R, N, BLOCK_R, BLOCK_N, INT64)
    og = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, g0, g1, g2, g3, g4, g5, g6, g7, ROW_RANK), c, gn, CONTIG)
    oa = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, a0, a1, a2, a3, a4, a5, a6, a7, ROW_RANK), c, an, CONTIG)
    ob = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, b0, b1, b2, b3, b4, b5, b6, b7, ROW_RANK), c, bn, CONTIG)
    oda = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, p0, p1, p2, p3, p4, p5, p6, p7, ROW_RANK), c, dan, CONTIG)
    odb = _addr(offset_of(r, S1, S2, S3, S4, S5, S6, S7, q0, q1, q2, q3, q4, q5, q6, q7, ROW_RANK), c, dbn, CONTIG)
    if full:
        _gated_backward_body(dy, gate, up, dgate, dup, og, oa, ob, oda, odb, None, KIND, CDT)
    else:
        mask = (r < R)[:, None] & (c < N)[None, :]
        _gated_backward_body(dy, gate, up, dgate, dup, og, oa, ob, oda, odb, mask, KIND, CDT)


_BACKWARD = Kernel(_backward_kernel)
_BACKWARD_FORWARD = Kernel(_backward_forward_kernel)
_GATED_FORWARD = Kernel(_gated_forward_kernel)
_GATED_BACKWARD = Kernel(_gated_backward_kernel)


class _Plan:
    """The shared 2-D iteration space of several same-shape operands (operand 0 is an output).

    Made by :func:`_plan_of`, once per layout: it depends on the operands' shapes, strides and
    dtypes, never on their addresses (whose alignment each launch reads for itself)."""

    __slots__ = (
        "_args",
        "_grid",
        "aligned",
        "big",
        "block_n",
        "block_r",
        "contig",
        "inner",
        "n",
        "rank",
        "rows",
        "sizes",
        "strides",
    )  # fmt: skip

    def __init__(self, bufs: Sequence[BufferLike], prefixes: str) -> None:
        shape = tuple(bufs[0].shape)
        for b in bufs:
            if tuple(b.shape) != shape:
                raise ValueError(f"shape mismatch: {tuple(b.shape)} vs {shape}")
        cshape, cstrides = collapse(shape, [tuple(b.strides) for b in bufs])
        if not cshape:  # one element
            cshape, cstrides = (1,), [(1,) for _ in bufs]
        self.n = cshape[-1]
        self.inner = tuple([st[-1] for st in cstrides])
        rshape, rstrides = cshape[:-1], [st[:-1] for st in cstrides]
        if not rshape:
            rshape, rstrides = (1,), [(0,) for _ in bufs]
        if len(rshape) > MAX_RANK:
            raise ValueError("rank after collapsing exceeds 8")
        self.rows, self.rank = numel(rshape), len(rshape)
        self.sizes = pad_dims(tuple(rshape[1:]), 1, 7)
        self.strides = tuple([pad_dims(tuple(st), 0) for st in rstrides])
        self.contig = all(s == 1 for s in self.inner)
        total = numel(shape)
        self.big = max([total] + [extent(tuple(b.shape), tuple(b.strides)) for b in bufs]) >= INT32_LIMIT - 65536
        # Elements per program: 32 bytes per thread of the widest operand over 4 warps, as elementwise.
        itemsize = max(dtype_info(b.dtype).itemsize for b in bufs)
        block = max(512, min(4096, 4096 // itemsize))
        self.block_n = min(next_pow2(self.n), block)
        self.block_r = max(1, min(next_pow2(self.rows), block // self.block_n))
        # The integer arguments divisible by 16: with the pointers' (see _launch) the compiler can
        # prove 16-byte vectors.
        self.aligned = tuple(
            ["N"] * (self.n % 16 == 0)
            + [f"{p}{d}" for p, st in zip(prefixes, self.strides) for d in range(MAX_RANK) if st[d] % 16 == 0]
        )
        # What every launch of this layout passes: worked out once (a launch adds only its pointers).
        self._grid = (cdiv(self.rows, self.block_r) * cdiv(self.n, self.block_n), 1, 1)
        flat = [s for st in self.strides for s in st]
        self._args = (self.rows, self.n, *self.inner, *self.sizes, *flat)

    def grid(self) -> tuple[int, int, int]:
        return self._grid

    def key(self, *extra: Any) -> tuple:
        return (*extra, self.rank, self.contig, self.big, self.block_r, self.block_n)

    def consts(self, kind: str, cdt: str) -> dict[str, Any]:
        return dict(
            KIND=kind,
            CDT=tl_dtype(cdt),
            ROW_RANK=self.rank,
            CONTIG=self.contig,
            INT64=self.big,
            BLOCK_R=self.block_r,
            BLOCK_N=self.block_n,
        )

    def types(self, ptrs: dict[str, str], inner_names: str, prefixes: str) -> dict[str, str]:
        it = "i64" if self.big else "i32"
        return {
            **{name: ptr_type(dt) for name, dt in ptrs.items()},
            "R": it,
            "N": it,
            **{name: it for name in inner_names.split()},
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **{k: v for p in prefixes for k, v in stride_types(p, it).items()},
        }

    def args(self) -> tuple:
        return self._args


_PTR_NAMES = {
    "xgd": ("x", "dy", "dx"),
    "xgdy": ("x", "dy", "dx", "y"),
    "abo": ("gate", "up", "out"),
    "gabpq": ("dy", "gate", "up", "dgate", "dup"),
}


def _check(kind: str, bufs: list[BufferLike]) -> str:
    """The compute dtype; raises for an unknown kind or a non-float operand."""
    if kind not in KINDS:
        raise ValueError(f"unknown activation kind {kind!r}; expected one of {KINDS}")
    cdt = "float32"
    for b in bufs:  # (a loop, not any() over a generator: once per activation launch)
        dtype = b.dtype
        if dtype not in _FLOATS:
            if not dtype_info(dtype).is_float:
                raise TypeError(f"activation kernels take float buffers, got {dtype}")
        elif dtype == "float64":
            cdt = dtype
    return cdt


_FLOATS = ("float32", "bfloat16", "float16", "float64")


@by_layout
def _plan_of(bufs: Sequence[BufferLike], prefixes: str) -> _Plan:
    """``_Plan(bufs, prefixes)``, made once per layout."""
    return _Plan(bufs, prefixes)


def _launch(kernel: Kernel, plan: _Plan, ptrs: dict[str, BufferLike], inner: str, kind: str, cdt: str, stream: int):
    # Runs for every activation op: plain loops, no generators (each would be a frame per launch).
    addrs, dtypes, aligned_ptrs = [], [], []
    for name, b in ptrs.items():
        ptr = b.ptr
        addrs.append(ptr)
        dtypes.append(b.dtype)
        if ptr % 16 == 0:
            aligned_ptrs.append(name)
    aligned = (*aligned_ptrs, *plan.aligned)
    key = plan.key(kind, cdt, *dtypes, aligned)
    fn = kernel.cache.get(key)
    if fn is None:
        prefixes = next(p for p, names in _PTR_NAMES.items() if names == tuple(ptrs))
        consts = plan.consts(kind, cdt)
        types = plan.types({k: b.dtype for k, b in ptrs.items()}, inner, prefixes)
        fn = kernel.build(key, types, consts, aligned, num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(plan._grid, stream, (*addrs, *plan._args, *fn._consts))  # type: ignore[attr-defined]


def activation_backward(
    dy: BufferLike, x: BufferLike, dx: BufferLike, kind: str, *, y: BufferLike | None = None, stream: int = 0
) -> None:
    """``dx = dy * act'(x)`` for ``kind`` in gelu / gelu_tanh / silu / sigmoid; all the same shape. Given
    ``y``, also ``y = act(x)`` in the same pass, with the forward's values (what elementwise's unary op of
    that name writes): a backward that recomputes the activation for another op reads ``x`` once."""
    if y is not None:
        cdt = _check(kind, [dy, x, dx, y])
        plan = _plan_of([x, dy, dx, y], "xgdy")
        if plan.rows * plan.n:
            _launch(_BACKWARD_FORWARD, plan, {"x": x, "dy": dy, "dx": dx, "y": y}, "xn gn dn yn", kind, cdt, stream)
        return
    cdt = _check(kind, [dy, x, dx])
    plan = _plan_of([x, dy, dx], "xgd")
    if plan.rows * plan.n == 0:
        return
    _launch(_BACKWARD, plan, {"x": x, "dy": dy, "dx": dx}, "xn gn dn", kind, cdt, stream)


def gated_forward(gate: BufferLike, up: BufferLike, out: BufferLike, kind: str, *, stream: int = 0) -> None:
    """``out = act(gate) * up``: SwiGLU (silu), GeGLU (gelu / gelu_tanh), torch's GLU (sigmoid)."""
    cdt = _check(kind, [gate, up, out])
    plan = _plan_of([gate, up, out], "abo")
    if plan.rows * plan.n == 0:
        return
    _launch(_GATED_FORWARD, plan, {"gate": gate, "up": up, "out": out}, "an bn on", kind, cdt, stream)


def gated_backward(
    dy: BufferLike,
    gate: BufferLike,
    up: BufferLike,
    dgate: BufferLike,
    dup: BufferLike,
    kind: str,
    *,
    stream: int = 0,
) -> None:
    """One pass: ``dgate = dy * up * act'(gate)`` and ``dup = dy * act(gate)``."""
    cdt = _check(kind, [dy, gate, up, dgate, dup])
    plan = _plan_of([dy, gate, up, dgate, dup], "gabpq")
    if plan.rows * plan.n == 0:
        return
    ptrs = {"dy": dy, "gate": gate, "up": up, "dgate": dgate, "dup": dup}
    _launch(_GATED_BACKWARD, plan, ptrs, "gn an bn dan dbn", kind, cdt, stream)
