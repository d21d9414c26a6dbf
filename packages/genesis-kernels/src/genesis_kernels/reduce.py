"""Reductions over any set of dims: sum, mean, prod, max/min, all/any, norm, argmax/argmin.

The launcher splits the input's dims into *kept* dims (the output's) and *reduced*
dims, collapses each group, and views the input as an ``M x K`` matrix of rows
(kept) by reduced elements, both through arbitrary strides. One program owns
``BLOCK_M`` rows and walks ``K`` in ``BLOCK_K`` chunks, accumulating elementwise in
a register tile (in float32 for half types, int64 for integers) and folding the
tile once at the end. Two ways to address the kept rows:

* *flat*: the program's rows are ``BLOCK_M`` consecutive flat kept indices, unravelled
  through the kept strides. Used when no kept dim is contiguous in the input, e.g.
  ``sum(-1)``, where the tile is wide along the contiguous reduced dim instead;
* *inner*: the innermost kept dim is contiguous in the input (``sum(0)``, or the middle
  dim of a 3-D tensor): a program owns one index of the outer kept dims and ``BLOCK_M``
  consecutive inner elements, so the compiler sees unit-stride rows and loads 16
  bytes per thread along them, every warp reading whole rows of the reduced dim.

When there are too few programs to fill the GPU (``sum()`` of everything, the
8192-column ``sum(0)``), ``K`` is split across programs: partial results go to a
per-stream scratch block and a second launch of the same kernel folds them (no
atomics, so the result does not depend on timing).

``norm`` folds a per-element transform (``x^2``, ``|x|``, ``|x|^p``, ``x != 0``) with a
sum, or ``|x|`` with a max or min, and takes the root in the final pass. ``var`` / ``std``
and ``logsumexp`` keep a two-value summary per lane instead (``reduce_online.py``, on
these rows, tiles and splits), so they too read the input once.

Host time: everything that depends only on shapes, strides, dtypes and the op is
planned once (:class:`_Plan`: compiled launch functions, grids, argument tuples) and
cached, so a repeated reduction costs a dict lookup and one or two launches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import triton
import triton.language as tl

from genesis_storage import contiguous_strides

from .buffer import INT32_LIMIT, MAX_RANK, BufferLike, collapse, dtype_info, extent, numel, pad_dims
from .elementwise import cast_to, div_rn, fill
from .mathlib import lib
from .runtime import Kernel, PlanTable, cdiv, next_pow2, ptr_type, scratch, sm_count
from .strided import offset_of, stride_types

# ----------------------------------------------------------------------------------------------
# Kernel pieces
# ----------------------------------------------------------------------------------------------

_INDEX_NONE = tl.constexpr(9223372036854775807)  # the index of "no element yet": loses every tie


@triton.jit
def _max_nan(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _min_nan(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _identity(OP: tl.constexpr, ACC: tl.constexpr):
    if OP == "prod" or OP == "all":
        return 1
    elif OP == "max":
        if ACC.is_floating():
            return float("-inf")
        else:
            return -9223372036854775807 - 1
    elif OP == "min" or OP == "minabs":
        if ACC.is_floating():
            return float("inf")
        else:
            return 9223372036854775807
    else:
        return 0


@triton.jit
def _combine(acc, v, OP: tl.constexpr):
    if OP == "prod":
        return acc * v
    elif OP == "max" or OP == "any" or OP == "maxabs":
        return _max_nan(acc, v)
    elif OP == "min" or OP == "all" or OP == "minabs":
        return _min_nan(acc, v)
    else:
        return acc + v


@triton.jit
def _fold(acc, OP: tl.constexpr):
    if OP == "prod":
        return tl.reduce(acc, 1, _mul)
    elif OP == "max" or OP == "any" or OP == "maxabs":
        return tl.reduce(acc, 1, _max_nan)
    elif OP == "min" or OP == "all" or OP == "minabs":
        return tl.reduce(acc, 1, _min_nan)
    else:
        return tl.sum(acc, axis=1)


@triton.jit
def _prepare_values(v, p, OP: tl.constexpr, ACC: tl.constexpr):
    """Loaded values -> what the accumulator folds (truth values, squares, absolute values, powers)."""
    if OP == "all" or OP == "any" or OP == "count":
        return (v != 0).to(ACC)
    v = cast_to(v, ACC)
    if OP == "sumsq":
        return v * v
    elif OP == "sumabs" or OP == "maxabs" or OP == "minabs":
        return tl.abs(v)
    elif OP == "sumpow":
        return lib.pow(tl.abs(v), p.to(ACC))
    else:
        return v


@triton.jit
def _kept_rows(M, M_INNER, NB_INNER, INNER: tl.constexpr, INT64: tl.constexpr, BLOCK_M: tl.constexpr):
    """This program's kept rows: (outer index or flat rows, inner rows, flat rows, mask, all rows in range)."""
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    if INNER:
        outer = pid // NB_INNER
        first = (pid - outer * NB_INNER) * BLOCK_M
        m_in = first + tl.arange(0, BLOCK_M)
        return outer, m_in, outer * M_INNER + m_in, m_in < M_INNER, first + BLOCK_M <= M_INNER
    else:
        m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        return m, m, m, m < M, (pid + 1) * BLOCK_M <= M


@triton.jit
def _kept_offset(
    outer, m_in, inner_stride, S1, S2, S3, S4, S5, S6, S7, t0, t1, t2, t3, t4, t5, t6, t7, RANK, INNER: tl.constexpr
):
    """Element offsets of the rows from ``_kept_rows`` for an operand with kept strides ``t0..t7``.

    Inner mode: ``t`` are the strides of the outer kept dims and ``inner_stride`` the innermost's.
    """
    if INNER:
        return offset_of(outer, S1, S2, S3, S4, S5, S6, S7, t0, t1, t2, t3, t4, t5, t6, t7, RANK) + m_in * inner_stride
    else:
        return offset_of(outer, S1, S2, S3, S4, S5, S6, S7, t0, t1, t2, t3, t4, t5, t6, t7, RANK)


# ----------------------------------------------------------------------------------------------
# The reduction kernel
# ----------------------------------------------------------------------------------------------


@triton.jit
def _reduce_kernel(
    x,
    out,
    M,
    K,
    K_PER,
    M_INNER,
    NB_INNER,
    oi,
    divisor,
    KS1,
    KS2,
    KS3,
    KS4,
    KS5,
    KS6,
    KS7,
    xk0,
    xk1,
    xk2,
    xk3,
    xk4,
    xk5,
    xk6,
    xk7,
    ok0,
    ok1,
    ok2,
    ok3,
    ok4,
    ok5,
    ok6,
    ok7,
    RS1,
    RS2,
    RS3,
    RS4,
    RS5,
    RS6,
    RS7,
    xr0,
    xr1,
    xr2,
    xr3,
    xr4,
    xr5,
    xr6,
    xr7,
    OP: tl.constexpr,
    ACC: tl.constexpr,
    FINAL: tl.constexpr,
    FINALIZE: tl.constexpr,
    KEPT_RANK: tl.constexpr,
    RED_RANK: tl.constexpr,
    INNER: tl.constexpr,
    RED_CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    outer, m_in, m, m_mask, full_m = _kept_rows(M, M_INNER, NB_INNER, INNER, INT64, BLOCK_M)
    row = _kept_offset(outer, m_in, 1, KS1, KS2, KS3, KS4, KS5, KS6, KS7, xk0, xk1, xk2, xk3, xk4, xk5, xk6, xk7,
                       KEPT_RANK, INNER)  # fmt: skip
    pid_s = tl.program_id(1)
    if INT64:
        k_start = pid_s.to(tl.int64) * K_PER
    else:
        k_start = pid_s * K_PER
    ident = _identity(OP, ACC)
    acc = tl.full([BLOCK_M, BLOCK_K], ident, ACC)
    k_end = tl.minimum(k_start + K_PER, K)
    # Loop bounds from plain arguments (the interpreter cannot range over program_id-derived values).
    for k0 in range(0, K_PER, BLOCK_K):
        k = k_start + k0 + tl.arange(0, BLOCK_K)
        if RED_CONTIG:
            col = k
        else:
            col = offset_of(k, RS1, RS2, RS3, RS4, RS5, RS6, RS7, xr0, xr1, xr2, xr3, xr4, xr5, xr6, xr7, RED_RANK)
        ptrs = x + (row[:, None] + col[None, :])
        # Whole tiles load without a mask (a mask the compiler cannot prove uniform over 16
        # bytes forces scalar loads); only the ragged edge is masked.
        if full_m & (k_start + k0 + BLOCK_K <= k_end):
            acc = _combine(acc, _prepare_values(tl.load(ptrs), divisor, OP, ACC), OP)
        else:
            mask = m_mask[:, None] & (k < k_end)[None, :]
            v = _prepare_values(tl.load(ptrs, mask=mask), divisor, OP, ACC)
            acc = _combine(acc, tl.where(mask, v, ident), OP)
    r = _fold(acc, OP)
    if FINAL:
        if FINALIZE == "divide":
            r = div_rn(r, divisor.to(ACC))
        elif FINALIZE == "sqrt":
            r = lib.sqrt(r)
        elif FINALIZE == "root":  # divisor holds p
            r = lib.pow(r, 1.0 / divisor.to(ACC))
        o = _kept_offset(outer, m_in, oi, KS1, KS2, KS3, KS4, KS5, KS6, KS7, ok0, ok1, ok2, ok3, ok4, ok5, ok6, ok7,
                         KEPT_RANK, INNER)  # fmt: skip
        tl.store(out + o, cast_to(r, out.dtype.element_ty), mask=m_mask)
    else:
        tl.store(out + pid_s * M + m, r, mask=m_mask)  # partials, row-major (split, row)


_REDUCE = Kernel(_reduce_kernel)


# ----------------------------------------------------------------------------------------------
# max/min with indices (argmax/argmin): the same rows and split, a (value, index) accumulator
# ----------------------------------------------------------------------------------------------


@triton.jit
def _pick_max(a, ia, b, ib):
    # a wins if larger, or NaN (NaN counts as the maximum, as torch), or equal with a smaller index.
    a_nan = a != a
    b_nan = b != b
    win = (a > b) | (a_nan & ~b_nan) | (((a == b) | (a_nan & b_nan)) & (ia < ib))
    return tl.where(win, a, b), tl.where(win, ia, ib)


@triton.jit
def _pick_min(a, ia, b, ib):
    a_nan = a != a
    b_nan = b != b
    win = (a < b) | (a_nan & ~b_nan) | (((a == b) | (a_nan & b_nan)) & (ia < ib))
    return tl.where(win, a, b), tl.where(win, ia, ib)


@triton.jit
def _arg_kernel(
    x,
    xi,
    values,
    indices,
    M,
    K,
    K_PER,
    M_INNER,
    NB_INNER,
    red_stride,
    vi_stride,
    ii_stride,
    KS1,
    KS2,
    KS3,
    KS4,
    KS5,
    KS6,
    KS7,
    xk0,
    xk1,
    xk2,
    xk3,
    xk4,
    xk5,
    xk6,
    xk7,
    v0,
    v1,
    v2,
    v3,
    v4,
    v5,
    v6,
    v7,
    i0,
    i1,
    i2,
    i3,
    i4,
    i5,
    i6,
    i7,
    IS_MAX: tl.constexpr,
    ACC: tl.constexpr,
    FINAL: tl.constexpr,
    IN_INDEX: tl.constexpr,
    KEPT_RANK: tl.constexpr,
    INNER: tl.constexpr,
    RED_CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    # IN_INDEX (the second pass of a split): x holds partial values and xi their indices, (split, M).
    outer, m_in, m, m_mask, full_m = _kept_rows(M, M_INNER, NB_INNER, INNER, INT64, BLOCK_M)
    row = _kept_offset(outer, m_in, 1, KS1, KS2, KS3, KS4, KS5, KS6, KS7, xk0, xk1, xk2, xk3, xk4, xk5, xk6, xk7,
                       KEPT_RANK, INNER)  # fmt: skip
    pid_s = tl.program_id(1)
    if INT64:
        k_start = pid_s.to(tl.int64) * K_PER
    else:
        k_start = pid_s * K_PER
    if IS_MAX:
        ident = _identity("max", ACC)
    else:
        ident = _identity("min", ACC)
    best = tl.full([BLOCK_M, BLOCK_K], ident, ACC)
    if IN_INDEX:
        best_i = tl.full([BLOCK_M, BLOCK_K], _INDEX_NONE, tl.int64)
    elif INT64:
        best_k0 = tl.zeros([BLOCK_M, BLOCK_K], tl.int64)
    else:
        best_k0 = tl.zeros([BLOCK_M, BLOCK_K], tl.int32)
    k_end = tl.minimum(k_start + K_PER, K)
    for k0 in range(0, K_PER, BLOCK_K):
        k = k_start + k0 + tl.arange(0, BLOCK_K)
        if RED_CONTIG:
            col = k
        else:
            col = k * red_stride
        offs = row[:, None] + col[None, :]
        mask = m_mask[:, None] & (k < k_end)[None, :]
        if full_m & (k_start + k0 + BLOCK_K <= k_end):
            v = cast_to(tl.load(x + offs), ACC)
        else:
            v = tl.where(mask, cast_to(tl.load(x + offs, mask=mask), ACC), ident)
        if IN_INDEX:
            vi = tl.load(xi + offs, mask=mask, other=_INDEX_NONE)
            if IS_MAX:
                best, best_i = _pick_max(best, best_i, v, vi)
            else:
                best, best_i = _pick_min(best, best_i, v, vi)
        else:
            # A lane sees its elements in index order, so it keeps only the offset of the chunk that
            # won: a later value wins if strictly better, or if it is the lane's first NaN (NaN is the
            # extreme, as torch). Masked elements hold the identity, which never wins.
            if IS_MAX:
                win = v > best
            else:
                win = v < best
            if ACC.is_floating():
                win = win | ((v != v) & (best == best))
            best = tl.where(win, v, best)
            best_k0 = tl.where(win, k0, best_k0)
    if not IN_INDEX:
        # A lane that never won holds its first element (identity-valued: -inf for max, say). Lanes
        # past the end hold only the identity at indices after every element in range, so they lose
        # the fold's ties and can win nothing.
        best_i = (k_start + best_k0 + tl.arange(0, BLOCK_K)[None, :]).to(tl.int64)
    if IS_MAX:
        val, idx = tl.reduce((best, best_i), 1, _pick_max)
    else:
        val, idx = tl.reduce((best, best_i), 1, _pick_min)
    if FINAL:
        vo = _kept_offset(outer, m_in, vi_stride, KS1, KS2, KS3, KS4, KS5, KS6, KS7, v0, v1, v2, v3, v4, v5, v6, v7,
                          KEPT_RANK, INNER)  # fmt: skip
        io = _kept_offset(outer, m_in, ii_stride, KS1, KS2, KS3, KS4, KS5, KS6, KS7, i0, i1, i2, i3, i4, i5, i6, i7,
                          KEPT_RANK, INNER)  # fmt: skip
        tl.store(values + vo, cast_to(val, values.dtype.element_ty), mask=m_mask)
        tl.store(indices + io, idx, mask=m_mask)
    else:
        tl.store(values + pid_s * M + m, val, mask=m_mask)
        tl.store(indices + pid_s * M + m, idx, mask=m_mask)


_ARG = Kernel(_arg_kernel)

# ----------------------------------------------------------------------------------------------
# Tile choices (plain functions, so that benchmarks/sweep_reduce.py can replace them)
# ----------------------------------------------------------------------------------------------

REDUCE_OPS = frozenset(("sum", "mean", "prod", "max", "min", "amax", "amin", "all", "any"))
# How the partial results of a split reduction fold in its second pass.
_FINAL_OP = {
    "sumsq": "sum",
    "sumabs": "sum",
    "sumpow": "sum",
    "count": "sum",
    "maxabs": "max",
    "minabs": "min",
}
_TILE = 4096  # elements per register tile (32 fp32 values per thread with 4 warps)
_MID_INNER = 1 << 25  # tile_config: column sums up to this many elements take the narrower tile


def _tile(M: int, K: int, red_contig: bool, inner: int, tile: int) -> tuple[int, int, int, int]:
    if inner:  # rows of the contiguous inner dim (sum(0), a middle dim): wide along it, short K chunks
        block_m = min(next_pow2(inner), 512)
        block_k = max(1, min(next_pow2(K), tile // block_m))
        return block_m, block_k, 4 if block_m * block_k <= 2048 else 8, 8
    if red_contig and M == 1:  # everything into one value: wide tiles over the split K
        block_k = min(next_pow2(K), tile)
        return 1, block_k, 8 if block_k >= 4096 else 4, 4
    block_k = min(next_pow2(K), tile // 2 if red_contig else 256)
    block_m = max(1, min(next_pow2(M), tile // block_k))
    return block_m, block_k, 4 if block_m * block_k <= 2048 else 8, 4


def tile_config(M: int, K: int, red_contig: bool, inner: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_K, num_warps, programs per SM wanted before K is split) for an ``M x K`` reduction.

    ``red_contig``: the reduced elements of a row are contiguous (``sum(-1)``); ``inner``: the size of the
    innermost kept dim when it is contiguous in the input (``sum(0)``, a middle dim), else 0. The tile is
    long along whichever side is contiguous in memory.

    Column sums of a mid-size input (a Linear layer's bias gradient: 8,192 rows of 768 to 3,072 bf16
    columns) take 256-column tiles 16 rows deep on 4 warps, four programs per SM: the wide tile left
    32 rows per program (and a quarter of its lanes idle at 768 columns) and ran 1.3-1.6x slower on an
    H200 (benchmarks/sweep_bias_grad.py). Larger inputs keep the wide tile, which the 8192 x 8192
    sweep chose (benchmarks/sweep_reduce.py).
    """
    if inner and M * K <= _MID_INNER:
        return min(next_pow2(inner), 256), min(next_pow2(K), 16), 4, 4
    return _tile(M, K, red_contig, inner, _TILE)


def arg_tile_config(M: int, K: int, red_contig: bool, inner: int) -> tuple[int, int, int, int]:
    """``tile_config`` for argmax / argmin: half the tile, for the chunk offset kept beside every value.

    Everything into one value: the sum's 8 warps and 4 programs per SM over half its chunk. That grid
    is one wave only if 4 programs fit on an SM at once: 16 values per thread (4 warps) with an int64
    index each took 145 registers, 3 programs fitted and a quarter ran as a second wave (0.74x torch);
    8 values per thread and an int32 chunk offset take 32 to 57 registers (fp32 to int64).
    """
    if red_contig and M == 1:
        block_k = min(next_pow2(K), _TILE // 2)
        return 1, block_k, 8 if block_k == _TILE // 2 else 4, 4
    return _tile(M, K, red_contig, inner, _TILE // 2)


def online_tile_config(M: int, K: int, red_contig: bool, inner: int) -> tuple[int, int, int, int]:
    """``tile_config`` for var / std / logsumexp: half the tile over at least as many warps.

    A lane keeps two values (var's mean and M2, logsumexp's max and sum) where the sum keeps one:
    8 elements per thread hold the registers near the sum's 16 (var fp32: 40 to 64 registers), so
    every layout fits as many programs per SM at once as the sum does (16 per thread took 75 to 95,
    and the grid of everything, 4 programs per SM, ran a quarter of them as a second wave).
    """
    block_m, block_k, _, per_sm = _tile(M, K, red_contig, inner, _TILE // 2)
    return block_m, block_k, 8 if block_m * block_k >= _TILE // 2 else 4, per_sm


def _split(programs_m: int, K: int, block_k: int, per_sm: int) -> tuple[int, int]:
    """(programs along K, reduced elements per program): split K when the rows leave SMs idle."""
    split = 1
    want = per_sm * sm_count()  # programs needed to keep every SM busy
    if programs_m < want and K > 8 * block_k:
        split = max(1, min(cdiv(want, programs_m), cdiv(K, 4 * block_k), 1024))
    k_per = cdiv(cdiv(K, split), block_k) * block_k
    return cdiv(K, k_per), k_per


# ----------------------------------------------------------------------------------------------
# Plans: everything but the pointers, decided once per (op, layout, dtypes)
# ----------------------------------------------------------------------------------------------

# Where a pointer argument of a planned launch comes from.
_X, _OUT, _OUT2, _SCRATCH, _NULL = 0, 1, 2, 3, 4
_Src = tuple[int, int]  # (one of the above, byte offset)
_Step = tuple[Callable[..., None], tuple[int, int, int], tuple[_Src, ...], tuple[Any, ...]]


class _Plan:
    """The launches of one reduction: compiled functions, grids and arguments, pointers left as sources.

    Scratch holds the partial results of a split reduction (``partials``) between its two launches.
    """

    __slots__ = ("scratch_bytes", "steps")

    def __init__(self) -> None:
        self.scratch_bytes = 0
        self.steps: list[_Step] = []

    def partials(self, nbytes: int) -> int:
        """Byte offset in scratch of ``nbytes`` for partial results."""
        self.scratch_bytes = max(self.scratch_bytes, nbytes)
        return 0

    def run(self, x: int, out: int, out2: int, stream: int) -> None:
        ptrs = (x, out, out2, scratch(self.scratch_bytes, stream) if self.scratch_bytes else 0, 0)
        for fn, grid, srcs, rest in self.steps:
            fn(grid, stream, (*[ptrs[s] + off for s, off in srcs], *rest))


_PLANS = PlanTable(4096)


def clear_plans() -> None:
    """Forget every cached plan (after replacing ``tile_config``, so the next call plans again)."""
    _PLANS.clear()


def _sizes(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Sizes of dims 1..7 as the kernels take them."""
    return tuple(shape[1:]) + (1,) * (MAX_RANK - len(shape))


_Dims = tuple[int, ...]


def _kept_args(kshape: _Dims, strides: list[_Dims], inner: bool) -> tuple[_Dims, list[_Dims], int, list[int]]:
    """(shape, strides of each operand, inner size, inner stride of each operand) as the kernels take them.

    Inner mode passes the outer kept dims (a size-1 dim when there are none) and the innermost apart.
    """
    if not inner:
        return kshape, strides, 1, [0] * len(strides)
    if len(kshape) == 1:
        return (1,), [(0,)] * len(strides), kshape[0], [st[0] for st in strides]
    return kshape[:-1], [st[:-1] for st in strides], kshape[-1], [st[-1] for st in strides]


def _aligned(names: str, values: _Dims) -> tuple[str, ...]:
    return tuple(f"{names}{d}" for d, v in enumerate(values) if v % 16 == 0)


_Tile = tuple[int, int, int]  # (BLOCK_M, BLOCK_K, num_warps)


class _Rows(NamedTuple):
    """What a launch over kept rows x reduced elements takes, whatever it folds."""

    programs_m: int  # programs along the rows (grid axis 0)
    inner: bool  # the innermost kept dim is contiguous in x (see the module docstring)
    red_contig: bool  # the reduced elements of a row are contiguous
    kept_rank: int  # KEPT_RANK: the kept dims the kernel unravels
    aligned: tuple[str, ...]  # the integer arguments divisible by 16
    lead: tuple[int, ...]  # M, K, K_PER, M_INNER, NB_INNER, oi
    trail: tuple[int, ...]  # KS1.., xk0.., ok0.., RS1.., xr0..


def _rows(kept: tuple[_Dims, _Dims, _Dims], red: tuple[_Dims, _Dims], block_m: int, k_per: int) -> _Rows:
    kshape, kx, ko = kept
    rshape, rx = red
    inner = kx[-1] == 1
    oshape, (okx, oko), m_inner, (_, oi) = _kept_args(kshape, [kx, ko], inner)
    nb = cdiv(m_inner, block_m) if inner else 1
    return _Rows(
        numel(oshape) * nb if inner else cdiv(numel(kshape), block_m),
        inner,
        len(rshape) == 1 and rx[0] == 1,
        len(oshape),
        _aligned("xk", pad_dims(okx, 0)) + _aligned("xr", pad_dims(rx, 0)) + (("K_PER",) if k_per % 16 == 0 else ()),
        (numel(kshape), numel(rshape), k_per, m_inner, nb, oi),
        (*_sizes(oshape), *pad_dims(okx, 0), *pad_dims(oko, 0), *_sizes(rshape), *pad_dims(rx, 0)),
    )


def _rows_types(it: str) -> dict[str, str]:
    """The types of the integer arguments from ``_rows`` (``it``: i32 or i64)."""
    return {
        **{n: it for n in ("M", "K", "K_PER", "M_INNER", "NB_INNER", "oi")},
        **{f"KS{d}": it for d in range(1, MAX_RANK)},
        **stride_types("xk", it),
        **stride_types("ok", it),
        **{f"RS{d}": it for d in range(1, MAX_RANK)},
        **stride_types("xr", it),
    }


def _reduce_launch(
    op: str,
    x: _Src,
    xdt: str,
    x_aligned: bool,
    out: _Src,
    outdt: str,
    acc: str,
    final: bool,
    finalize: str,
    divisor: float,
    kept: tuple[_Dims, _Dims, _Dims],
    red: tuple[_Dims, _Dims],
    cfg: _Tile,
    split: tuple[int, int],
    big: bool,
) -> _Step:
    block_m, block_k, warps = cfg
    rows = _rows(kept, red, block_m, split[1])
    aligned = (("x",) if x_aligned else ()) + rows.aligned
    finalize = finalize if final else "none"
    layout = (rows.kept_rank, len(red[0]), rows.inner, rows.red_contig, big, *cfg, aligned)
    key = (op, xdt, outdt, acc, final, finalize, layout)
    fn = _REDUCE.cache.get(key)
    if fn is None:
        types = {
            "x": ptr_type(xdt),
            "out": ptr_type(outdt),
            "divisor": "fp64",
            **_rows_types("i64" if big else "i32"),
        }
        consts = dict(
            OP=op,
            ACC=dtype_info(acc).tl,
            FINAL=final,
            FINALIZE=finalize,
            KEPT_RANK=rows.kept_rank,
            RED_RANK=len(red[0]),
            INNER=rows.inner,
            RED_CONTIG=rows.red_contig,
            INT64=big,
            BLOCK_M=block_m,
            BLOCK_K=block_k,
        )
        fn = _REDUCE.build(key, types, consts, aligned, num_warps=warps)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    rest = (*rows.lead, float(divisor), *rows.trail, *fn._consts)  # type: ignore[attr-defined]
    return fn, (rows.programs_m, split[0], 1), (x, out), rest


def _programs_m(kshape: _Dims, kx: _Dims, block_m: int) -> int:
    if kx[-1] == 1:
        return numel(kshape) // kshape[-1] * cdiv(kshape[-1], block_m)
    return cdiv(numel(kshape), block_m)


def _big(*extents: int) -> bool:
    return max(extents) >= INT32_LIMIT - 65536


def _first_pass(
    kept: tuple[_Dims, _Dims, _Dims], red: tuple[_Dims, _Dims], online: bool = False
) -> tuple[_Tile, tuple[int, int], bool]:
    """The pass over ``x``: (tile, (programs along K, reduced elements per program), 64-bit offsets).

    ``online``: the tiles of ``reduce_online.py``'s two-value summaries (``online_tile_config``).
    """
    kshape, kx, ko = kept
    rshape, rx = red
    M, K = numel(kshape), numel(rshape)
    inner = kshape[-1] if kx[-1] == 1 else 0
    config = online_tile_config if online else tile_config
    block_m, block_k, warps, per_sm = config(M, K, len(rshape) == 1 and rx[0] == 1, inner)
    split = _split(_programs_m(kshape, kx, block_m), K, block_k, per_sm)
    big = _big(M, K, extent(kshape, kx) + extent(rshape, rx), extent(kshape, ko), split[0] * M)
    return (block_m, block_k, warps), split, big


def _second_pass(
    kept: tuple[_Dims, _Dims, _Dims], nsplit: int, online: bool = False
) -> tuple[tuple[_Dims, _Dims, _Dims], tuple[_Dims, _Dims], _Tile, tuple[int, int]]:
    """The fold of a split's partials, (split, M) row-major: (kept, reduced, tile, split) of its launch.

    Kept = the flat row index (contiguous), reduced = the split index (stride M); one program per rows.
    """
    kshape, _, ko = kept
    M = numel(kshape)
    config = online_tile_config if online else tile_config
    block_m, block_k, warps, _ = config(M, nsplit, False, kshape[-1])
    kept2 = (kshape, contiguous_strides(kshape), ko)
    return kept2, ((nsplit,), (M,)), (block_m, block_k, warps), (1, cdiv(nsplit, block_k) * block_k)


def _reduce_steps(
    plan: _Plan,
    op: str,
    xdt: str,
    x_aligned: bool,
    outdt: str,
    acc: str,
    kept: tuple[_Dims, _Dims, _Dims],
    red: tuple[_Dims, _Dims],
    divisor: float,
    finalize: str,
) -> None:
    """Plan one reduction of an ``M x K`` strided view into ``out``; splits ``K`` over programs when rows are few."""
    cfg, split, big = _first_pass(kept, red)
    out = (_OUT, 0)
    if split[0] == 1:
        plan.steps.append(
            _reduce_launch(
                op, (_X, 0), xdt, x_aligned, out, outdt, acc, True, finalize, divisor, kept, red, cfg, split, big
            )
        )
        return
    # Pass 1: partials of shape (split, M), contiguous, in the accumulation dtype.
    part = (_SCRATCH, plan.partials(split[0] * numel(kept[0]) * dtype_info(acc).itemsize))
    plan.steps.append(
        _reduce_launch(op, (_X, 0), xdt, x_aligned, part, acc, acc, False, "none", divisor, kept, red, cfg, split, big)
    )
    kept2, red2, cfg2, split2 = _second_pass(kept, split[0])
    fold = _FINAL_OP.get(op, op)
    plan.steps.append(
        _reduce_launch(fold, part, acc, True, out, outdt, acc, True, finalize, divisor, kept2, red2, cfg2, split2, big)
    )


def _acc_dtype(op: str, dtype: str) -> str:
    if op in ("all", "any"):
        return "int32"
    if dtype in ("float16", "bfloat16", "float32"):
        return "float32"
    if dtype == "float64":
        return "float64"
    return "int64"


def _normalize_dims(dims: tuple[int, ...] | int | None, rank: int) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(rank))
    if isinstance(dims, int):
        dims = (dims,)
    out = []
    for d in dims:
        if not -max(rank, 1) <= d < max(rank, 1):
            raise IndexError(f"dim {d} out of range for rank {rank}")
        out.append(d % max(rank, 1))
    return tuple(sorted(set(out)))


def _prepare(x: BufferLike, out: BufferLike, dims: _Dims) -> tuple[tuple[_Dims, _Dims, _Dims], tuple[_Dims, _Dims]]:
    """((kept shape, x's kept strides, out's strides), (reduced shape, x's reduced strides)), collapsed.

    Kept dims are ordered by the input's strides, so a kept dim contiguous in the input comes last.
    """
    rank = len(x.shape)
    kept_dims = [d for d in range(rank) if d not in dims]
    kshape_full = tuple(x.shape[d] for d in kept_dims)
    if tuple(out.shape) != kshape_full:
        raise ValueError(
            f"out.shape {tuple(out.shape)} != {kshape_full} (x.shape {tuple(x.shape)} without dims {dims})"
        )
    kshape, (kx, ko) = collapse(kshape_full, [tuple(x.strides[d] for d in kept_dims), tuple(out.strides)])
    if not kshape:
        kshape, ko, kx = (1,), (0,), (0,)
    rshape, (rx,) = collapse(tuple(x.shape[d] for d in dims), [tuple(x.strides[d] for d in dims)])
    if not rshape:
        rshape, rx = (1,), (0,)
    if len(kshape) > MAX_RANK or len(rshape) > MAX_RANK:
        raise ValueError("rank after collapsing exceeds 8")
    return (kshape, kx, ko), (rshape, rx)


def _dims_key(dims: Any) -> Any:
    return tuple(dims) if isinstance(dims, list) else dims


def reduce(
    op: str, x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, *, stream: int = 0
) -> None:
    """Reduce ``x`` over ``dims`` into ``out`` (``x.shape`` without ``dims``; the caller handles keepdim).

    Ops: sum mean prod max min amax amin all any (logsumexp, var and std: reduce_online.py). Half types
    accumulate in float32, integers in int64; max/min propagate NaN as torch. (For max/min with indices
    use ``arg_reduce``.)
    """
    dims = _dims_key(dims)
    key = ("reduce", op, x.dtype, x.shape, x.strides, x.ptr & 15 == 0, out.dtype, out.shape, out.strides, dims)
    plan = _PLANS.get(key)
    if plan is None:
        built = _plan_reduce(op, x, out, dims, stream)
        if built is None:
            return
        plan = _PLANS.put(key, built)
    plan.run(x.ptr, out.ptr, 0, stream)


def _plan_reduce(op: str, x: BufferLike, out: BufferLike, dims: Any, stream: int) -> _Plan | None:
    """The plan of ``reduce``; None (after filling ``out`` where there is something to fill) if nothing to launch."""
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduction {op!r}")
    op = {"amax": "max", "amin": "min"}.get(op, op)
    dims = _normalize_dims(dims, len(x.shape))
    if numel(tuple(out.shape)) == 0:
        return None
    K = numel(tuple(x.shape[d] for d in dims))
    if K == 0:
        if op in ("max", "min"):
            raise ValueError(f"{op} of an empty dimension has no identity")
        fill(out, {"sum": 0, "prod": 1, "all": True, "any": False, "mean": float("nan")}[op], stream=stream)
        return None
    kept, red = _prepare(x, out, dims)
    plan = _Plan()
    aligned = x.ptr % 16 == 0
    if op == "mean":
        acc = "float64" if x.dtype == "float64" else "float32"
        _reduce_steps(plan, "sum", x.dtype, aligned, out.dtype, acc, kept, red, K, "divide")
    else:
        acc = _acc_dtype(op, x.dtype)
        _reduce_steps(plan, op, x.dtype, aligned, out.dtype, acc, kept, red, 1, "none")
    return plan


def norm(
    x: BufferLike, out: BufferLike, p: float = 2.0, dims: tuple[int, ...] | int | None = None, *, stream: int = 0
) -> None:
    """The vector ``p``-norm over ``dims`` (torch.linalg.vector_norm): ``sum(|x|^p)^(1/p)``.

    ``p`` = inf / -inf give the largest / smallest ``|x|``, ``p`` = 0 counts the non-zeros. Floating
    inputs only; half types accumulate in float32. An empty reduction gives 0 (inf and negative
    ``p`` have no identity there and raise ValueError, as torch raises).
    """
    dims = _dims_key(dims)
    p = float(p)
    key = ("norm", p, x.dtype, x.shape, x.strides, x.ptr & 15 == 0, out.dtype, out.shape, out.strides, dims)
    plan = _PLANS.get(key)
    if plan is None:
        built = _plan_norm(x, out, p, dims, stream)
        if built is None:
            return
        plan = _PLANS.put(key, built)
    plan.run(x.ptr, out.ptr, 0, stream)


def _plan_norm(x: BufferLike, out: BufferLike, p: float, dims: Any, stream: int) -> _Plan | None:
    if not dtype_info(x.dtype).is_float:
        raise TypeError(f"norm needs a floating point input, got {x.dtype}")
    dims = _normalize_dims(dims, len(x.shape))
    if numel(tuple(out.shape)) == 0:
        return None
    K = numel(tuple(x.shape[d] for d in dims))
    if K == 0:
        if p < 0 or p == float("inf"):
            raise ValueError(f"norm of order {p} over an empty dimension has no identity")
        fill(out, 0, stream=stream)
        return None
    kept, red = _prepare(x, out, dims)
    acc = "float64" if x.dtype == "float64" else "float32"
    if p == 2:
        op, finalize = "sumsq", "sqrt"
    elif p == 1:
        op, finalize = "sumabs", "none"
    elif p == float("inf"):
        op, finalize = "maxabs", "none"
    elif p == float("-inf"):
        op, finalize = "minabs", "none"
    elif p == 0:
        op, finalize = "count", "none"
    else:
        op, finalize = "sumpow", "root"
    plan = _Plan()
    _reduce_steps(plan, op, x.dtype, x.ptr % 16 == 0, out.dtype, acc, kept, red, p, finalize)
    return plan


# ----------------------------------------------------------------------------------------------
# argmax / argmin
# ----------------------------------------------------------------------------------------------


def arg_reduce(
    op: str, x: BufferLike, out_values: BufferLike, out_indices: BufferLike, dim: int, *, stream: int = 0
) -> None:
    """Max or min along ``dim`` with int64 indices of the first occurrence (NaN counts as extreme, as torch).

    ``op``: "max"/"argmax" or "min"/"argmin". ``out_values``/``out_indices`` have ``x.shape`` without ``dim``.
    """
    key = (
        "arg",
        op,
        dim,
        x.dtype,
        x.shape,
        x.strides,
        x.ptr & 15 == 0,
        out_values.dtype,
        out_values.shape,
        out_values.strides,
        out_indices.dtype,
        out_indices.shape,
        out_indices.strides,
    )
    plan = _PLANS.get(key)
    if plan is None:
        built = _plan_arg(op, x, out_values, out_indices, dim)
        if built is None:
            return
        plan = _PLANS.put(key, built)
    plan.run(x.ptr, out_values.ptr, out_indices.ptr, stream)


def _plan_arg(op: str, x: BufferLike, out_values: BufferLike, out_indices: BufferLike, dim: int) -> _Plan | None:
    if op not in ("max", "min", "argmax", "argmin"):
        raise ValueError(f"unknown arg reduction {op!r}")
    is_max = op in ("max", "argmax")
    rank = len(x.shape)
    (dim,) = _normalize_dims((dim,), rank)
    K = x.shape[dim] if rank else 1
    kept_dims = [d for d in range(rank) if d != dim]
    kshape_full = tuple(x.shape[d] for d in kept_dims)
    for b in (out_values, out_indices):
        if tuple(b.shape) != kshape_full:
            raise ValueError(f"output shape {tuple(b.shape)} != {kshape_full}")
    if out_indices.dtype != "int64":
        raise TypeError("arg_reduce indices must be int64")
    M = numel(kshape_full)
    if M == 0:
        return None
    if K == 0:
        raise IndexError(f"{op}: reduction dim {dim} has size 0")
    kshape, (kx, vs, is_) = collapse(
        kshape_full, [tuple(x.strides[d] for d in kept_dims), tuple(out_values.strides), tuple(out_indices.strides)]
    )
    if not kshape:
        kshape, kx, vs, is_ = (1,), (0,), (0,), (0,)
    xk = x.strides[dim] if rank else 1
    acc = (
        "float32"
        if x.dtype in ("float16", "bfloat16")
        else ("int64" if x.dtype in ("bool", "uint8", "int8", "int16", "int32") else x.dtype)
    )
    inner = kshape[-1] if kx[-1] == 1 else 0
    block_m, block_k, warps, per_sm = arg_tile_config(M, K, xk == 1, inner)
    split = _split(_programs_m(kshape, kx, block_m), K, block_k, per_sm)
    big = _big(M * K, extent(tuple(x.shape), tuple(x.strides)), extent(kshape, vs), extent(kshape, is_), split[0] * M)
    plan = _Plan()
    cfg = (block_m, block_k, warps)
    geom = (kshape, kx, vs, is_)
    if split[0] == 1:
        plan.steps.append(
            _arg_launch(
                is_max,
                (_X, 0),
                (_NULL, 0),
                x.dtype,
                x.ptr % 16 == 0,
                (_OUT, 0),
                (_OUT2, 0),
                out_values.dtype,
                acc,
                True,
                geom,
                K,
                xk,
                cfg,
                split,
                big,
            )
        )
        return plan
    room = split[0] * M * 8
    base = plan.partials(2 * room)
    pv, pi = (_SCRATCH, base), (_SCRATCH, base + room)
    plan.steps.append(
        _arg_launch(
            is_max, (_X, 0), (_NULL, 0), x.dtype, x.ptr % 16 == 0, pv, pi, acc, acc, False, geom, K, xk, cfg, split, big
        )
    )
    flat = contiguous_strides(kshape)
    block_m, block_k, warps, _ = arg_tile_config(M, split[0], False, kshape[-1])
    plan.steps.append(
        _arg_launch(
            is_max,
            pv,
            pi,
            acc,
            True,
            (_OUT, 0),
            (_OUT2, 0),
            out_values.dtype,
            acc,
            True,
            (kshape, flat, vs, is_),
            split[0],
            M,
            (block_m, block_k, warps),
            (1, cdiv(split[0], block_k) * block_k),
            big,
        )
    )
    return plan


def _arg_launch(
    is_max: bool,
    x: _Src,
    xi: _Src,
    xdt: str,
    x_aligned: bool,
    values: _Src,
    indices: _Src,
    vdt: str,
    acc: str,
    final: bool,
    geom: tuple[_Dims, _Dims, _Dims, _Dims],
    K: int,
    red_stride: int,
    cfg: tuple[int, int, int],
    split: tuple[int, int],
    big: bool,
) -> _Step:
    kshape, kx, vs, is_ = geom
    block_m, block_k, warps = cfg
    nsplit, k_per = split
    inner = kx[-1] == 1
    oshape, (okx, ovs, ois), m_inner, (_, vi, ii) = _kept_args(kshape, [kx, vs, is_], inner)
    nb = cdiv(m_inner, block_m) if inner else 1
    programs_m = numel(oshape) * nb if inner else cdiv(numel(kshape), block_m)
    red_contig = red_stride == 1
    in_index = xi[0] != _NULL
    aligned = (
        (("x",) if x_aligned else ())
        + _aligned("xk", pad_dims(okx, 0))
        + (("red_stride",) if red_stride % 16 == 0 else ())
        + (("K_PER",) if k_per % 16 == 0 else ())
    )
    key = (is_max, xdt, vdt, acc, final, in_index, len(oshape), inner, red_contig, big, *cfg, aligned)
    fn = _ARG.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(xdt),
            "xi": ptr_type("int64"),
            "values": ptr_type(vdt),
            "indices": ptr_type("int64"),
            **{n: it for n in ("M", "K", "K_PER", "M_INNER", "NB_INNER", "red_stride", "vi_stride", "ii_stride")},
            **{f"KS{d}": it for d in range(1, MAX_RANK)},
            **stride_types("xk", it),
            **stride_types("v", it),
            **stride_types("i", it),
        }
        consts = dict(
            IS_MAX=is_max,
            ACC=dtype_info(acc).tl,
            FINAL=final,
            IN_INDEX=in_index,
            KEPT_RANK=len(oshape),
            INNER=inner,
            RED_CONTIG=red_contig,
            INT64=big,
            BLOCK_M=block_m,
            BLOCK_K=block_k,
        )
        fn = _ARG.build(key, types, consts, aligned, num_warps=warps)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    M = numel(kshape)
    rest = (
        M,
        K,
        k_per,
        m_inner,
        nb,
        red_stride,
        vi,
        ii,
        *_sizes(oshape),
        *pad_dims(okx, 0),
        *pad_dims(ovs, 0),
        *pad_dims(ois, 0),
        *fn._consts,  # type: ignore[attr-defined]
    )
    return fn, (programs_m, nsplit, 1), (x, xi, values, indices), rest
