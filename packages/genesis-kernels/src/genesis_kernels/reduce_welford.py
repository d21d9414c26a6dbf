"""var and std in one pass over the input: Welford per register lane, Chan's merge across lanes and programs.

The rows, tiles and split of ``reduce.py`` (its module docstring), with a summary per lane instead of
an accumulator: (count, mean, M2 = the sum of squared deviations from the mean). Each chunk updates
every lane with one element (Welford: ``delta = x - mean; mean += delta / n; M2 += delta * (x - mean)``),
and the lanes of a row merge at once, Chan et al.'s merge of k groups::

    n = sum(n_j);  mean = sum(n_j * mean_j) / n;  M2 = sum(M2_j) + sum(n_j * (mean_j - mean)^2)

A split reduction stores each program's (mean, M2) in scratch; a second launch of the same kernel
merges them, lane by lane with the pairwise form (``d = mb - ma; mean = ma + d * nb / n;
M2 = M2a + M2b + d^2 * na * nb / n``), then across lanes as above (no atomics, so the result does not
depend on timing). Counts are never stored: a lane's and a partial's follow from the geometry. The
final pass writes ``M2 / max(K - correction, 0)`` (and its square root for std), so a correction at or
past ``K`` gives torch's inf (nan where all elements are equal).

Why the deviations are taken from the row's first element: a mean near 1e4 in float32 is off by up to
half an ulp (5e-4), which is the whole spread of ``1e4 + 1e-3 * randn``; any method that carries that
mean (two passes as well as Welford) then loses the variance. ``x - x[row, 0]`` is exact for elements
near the shift, so the summaries see the spread alone; every program of a split uses the same shift,
so their partial means agree on it and merge without it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info, numel
from .elementwise import cast_to, div_rn, fill
from .mathlib import lib
from .reduce import (
    _NULL,
    _OUT,
    _PLANS,
    _SCRATCH,
    _X,
    _Dims,
    _first_pass,
    _kept_offset,
    _kept_rows,
    _normalize_dims,
    _Plan,
    _prepare,
    _remember,
    _rows,
    _rows_types,
    _second_pass,
    _Src,
    _Step,
    _Tile,
)
from .runtime import Kernel, ptr_type
from .strided import offset_of


@triton.jit
def _chan(na, ma, qa, nb, mb, qb):
    """Merge two (count, mean, M2) summaries; an empty one (count 0) leaves the other as it is."""
    n = na + nb
    w = div_rn(nb, tl.where(n == 0, 1, n))  # b's share of the merged count
    d = mb - ma
    return n, ma + d * w, qa + qb + d * d * na * w


@triton.jit
def _merge_lanes(n, mean, m2):
    """Merge the summaries of each row's lanes (axis 1) at once: Chan's merge of k groups.

    ``mean = sum(n_j * mean_j) / n`` and ``M2 = sum(M2_j) + sum(n_j * (mean_j - mean)^2)``: plain sums
    (one add per tree step, vectorised under the interpreter), the second of non-negative terms.
    """
    n_r = tl.sum(n, axis=1)
    mean_r = div_rn(tl.sum(n * mean, axis=1), tl.where(n_r == 0, 1, n_r))
    d = mean - mean_r[:, None]
    return n_r, mean_r, tl.sum(m2 + n * d * d, axis=1)


@triton.jit
def _welford_kernel(
    x,
    q,
    out,
    out_q,
    M,
    K,
    K_PER,
    M_INNER,
    NB_INNER,
    oi,
    divisor,
    N1,
    N1_PER,
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
    ACC: tl.constexpr,
    PARTIALS: tl.constexpr,
    FINAL: tl.constexpr,
    SQRT: tl.constexpr,
    KEPT_RANK: tl.constexpr,
    RED_RANK: tl.constexpr,
    INNER: tl.constexpr,
    RED_CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    # PARTIALS (the second pass of a split): x holds the partial means and q the partial M2s, (split, M);
    # partial s summarises N1_PER elements of the first pass's N1 (the last one what is left).
    # Not FINAL: this program's (mean, M2) go to out and out_q, (split, M) row-major.
    outer, m_in, m, m_mask, full_m = _kept_rows(M, M_INNER, NB_INNER, INNER, INT64, BLOCK_M)
    row = _kept_offset(outer, m_in, 1, KS1, KS2, KS3, KS4, KS5, KS6, KS7, xk0, xk1, xk2, xk3, xk4, xk5, xk6, xk7,
                       KEPT_RANK, INNER)  # fmt: skip
    pid_s = tl.program_id(1)
    if INT64:
        k_start = pid_s.to(tl.int64) * K_PER
    else:
        k_start = pid_s * K_PER
    k_end = tl.minimum(k_start + K_PER, K)
    mean = tl.zeros([BLOCK_M, BLOCK_K], ACC)
    m2 = tl.zeros([BLOCK_M, BLOCK_K], ACC)
    if PARTIALS:
        n = tl.zeros([BLOCK_M, BLOCK_K], ACC)
    else:
        shift = cast_to(tl.load(x + row, mask=m_mask, other=0), ACC)[:, None]  # element 0 of each row
    for k0 in range(0, K_PER, BLOCK_K):
        k = k_start + k0 + tl.arange(0, BLOCK_K)
        if RED_CONTIG:
            col = k
        else:
            col = offset_of(k, RS1, RS2, RS3, RS4, RS5, RS6, RS7, xr0, xr1, xr2, xr3, xr4, xr5, xr6, xr7, RED_RANK)
        offs = row[:, None] + col[None, :]
        if PARTIALS:
            mask = m_mask[:, None] & (k < k_end)[None, :]
            s = tl.minimum(k, K - 1)  # clamped, so that s * N1_PER cannot overflow past the end
            nb = tl.where(k < k_end, tl.minimum(N1_PER, N1 - s * N1_PER), 0).to(ACC)[None, :]
            mb = tl.load(x + offs, mask=mask, other=0)
            qb = tl.load(q + offs, mask=mask, other=0)
            n, mean, m2 = _chan(n, mean, m2, nb, mb, qb)
        else:
            # Every lane in range has seen one element per earlier chunk (a lane leaves the range only
            # in a program's last chunks), so one count serves the whole tile.
            rn = div_rn(tl.full([], 1, ACC), tl.full([], k0 // BLOCK_K + 1, ACC))  # 1 / the count
            if full_m & (k_start + k0 + BLOCK_K <= k_end):
                d = cast_to(tl.load(x + offs), ACC) - shift
            else:
                # Lanes out of range see their own mean: delta = 0 leaves them as they are.
                mask = m_mask[:, None] & (k < k_end)[None, :]
                d = tl.where(mask, cast_to(tl.load(x + offs, mask=mask), ACC) - shift, mean)
            delta = d - mean
            mean += delta * rn
            m2 += delta * (d - mean)
    if not PARTIALS:
        # Lane j took one element from each chunk that reached it: ceil((k_end - k_start - j) / BLOCK_K).
        lane_n = ((k_end - k_start - tl.arange(0, BLOCK_K) + BLOCK_K - 1) // BLOCK_K).to(ACC)
        n = tl.zeros([BLOCK_M, BLOCK_K], ACC) + lane_n[None, :]
    n, mean, m2 = _merge_lanes(n, mean, m2)
    if FINAL:
        r = div_rn(m2, divisor.to(ACC))
        if SQRT:
            r = lib.sqrt(r)
        o = _kept_offset(outer, m_in, oi, KS1, KS2, KS3, KS4, KS5, KS6, KS7, ok0, ok1, ok2, ok3, ok4, ok5, ok6, ok7,
                         KEPT_RANK, INNER)  # fmt: skip
        tl.store(out + o, cast_to(r, out.dtype.element_ty), mask=m_mask)
    else:
        tl.store(out + pid_s * M + m, mean, mask=m_mask)
        tl.store(out_q + pid_s * M + m, m2, mask=m_mask)


_WELFORD = Kernel(_welford_kernel)


class _Moments(NamedTuple):
    """What every launch of one var / std plan shares."""

    acc: str  # accumulation dtype
    sqrt: bool  # std: the square root in the final store
    divisor: float  # max(K - correction, 0)
    counts: tuple[int, int]  # the first pass's K and K_PER: what each partial of a split summarises
    big: bool  # 64-bit offsets


def _welford_launch(
    mo: _Moments,
    src: tuple[_Src, _Src],
    xdt: str,
    x_aligned: bool,
    dst: tuple[_Src, _Src],
    outdt: str,
    kept: tuple[_Dims, _Dims, _Dims],
    red: tuple[_Dims, _Dims],
    cfg: _Tile,
    split: tuple[int, int],
) -> _Step:
    """One launch. ``src``: (x, null) or a split's (means, M2s); ``dst``: (out, null) or (means, M2s)."""
    block_m, block_k, warps = cfg
    rows = _rows(kept, red, block_m, split[1])
    partials, final = src[1][0] != _NULL, dst[1][0] == _NULL
    sqrt = mo.sqrt and final
    aligned = (("x",) if x_aligned else ()) + rows.aligned
    layout = (rows.kept_rank, len(red[0]), rows.inner, rows.red_contig, mo.big, *cfg, aligned)
    key = (xdt, outdt, mo.acc, partials, final, sqrt, layout)
    fn = _WELFORD.cache.get(key)
    if fn is None:
        it = "i64" if mo.big else "i32"
        types = {
            "x": ptr_type(xdt),
            "q": ptr_type(mo.acc) if partials else "i64",
            "out": ptr_type(outdt),
            "out_q": "i64" if final else ptr_type(mo.acc),
            "divisor": "fp64",
            "N1": it,
            "N1_PER": it,
            **_rows_types(it),
        }
        consts = dict(
            ACC=dtype_info(mo.acc).tl,
            PARTIALS=partials,
            FINAL=final,
            SQRT=sqrt,
            KEPT_RANK=rows.kept_rank,
            RED_RANK=len(red[0]),
            INNER=rows.inner,
            RED_CONTIG=rows.red_contig,
            INT64=mo.big,
            BLOCK_M=block_m,
            BLOCK_K=block_k,
        )
        fn = _WELFORD.build(key, types, consts, aligned, num_warps=warps)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    rest = (*rows.lead, float(mo.divisor), *mo.counts, *rows.trail, *fn._consts)  # type: ignore[attr-defined]
    return fn, (rows.programs_m, split[0], 1), (*src, *dst), rest


def var(
    x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, correction: int = 1, *, stream: int = 0
) -> None:
    """Variance over ``dims`` with Bessel-style ``correction``, in one pass over ``x``.

    ``out`` has ``x.shape`` without ``dims`` (the caller handles keepdim). Floating inputs; half types
    accumulate in float32, float64 in float64. ``max(K - correction, 0)`` divides, as torch: a
    correction at or past ``K`` gives inf (nan where all elements are equal); ``K == 0`` gives nan.
    """
    _moments("var", x, out, dims, correction, stream)


def std(
    x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, correction: int = 1, *, stream: int = 0
) -> None:
    """Standard deviation: ``var``'s one pass, with the square root taken in its final store."""
    _moments("std", x, out, dims, correction, stream)


def _moments(
    kind: str, x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None, correction: int, stream: int
) -> None:
    dims = tuple(dims) if isinstance(dims, list) else dims
    key = (kind, correction, x.dtype, x.shape, x.strides, x.ptr & 15 == 0, out.dtype, out.shape, out.strides, dims)
    plan = _PLANS.get(key)
    if plan is None:
        built = _plan_moments(kind == "std", x, out, dims, correction, stream)
        if built is None:
            return
        plan = _remember(key, built)
    plan.run(x.ptr, out.ptr, 0, stream)


def _plan_moments(sqrt: bool, x: BufferLike, out: BufferLike, dims: Any, correction: int, stream: int) -> _Plan | None:
    """The plan of ``var`` / ``std``; None (after filling ``out`` with nan for an empty reduction) if no launch."""
    dims = _normalize_dims(dims, len(x.shape))
    if numel(tuple(out.shape)) == 0:
        return None
    K = numel(tuple(x.shape[d] for d in dims))
    if K == 0:
        fill(out, float("nan"), stream=stream)
        return None
    kept, red = _prepare(x, out, dims)
    cfg, split, big = _first_pass(kept, red, moments=True)
    acc = "float64" if x.dtype == "float64" else "float32"
    mo = _Moments(acc, sqrt, max(K - correction, 0), (K, split[1]), big)
    plan = _Plan()
    aligned = x.ptr % 16 == 0
    null = (_NULL, 0)
    if split[0] == 1:
        plan.steps.append(
            _welford_launch(mo, ((_X, 0), null), x.dtype, aligned, ((_OUT, 0), null), out.dtype, kept, red, cfg, split)
        )
        return plan
    # Pass 1: each program's (mean, M2), two (split, M) planes in the accumulation dtype.
    room = split[0] * numel(kept[0]) * dtype_info(acc).itemsize
    parts = ((_SCRATCH, plan.partials(2 * room)), (_SCRATCH, plan.fixed + room))
    plan.steps.append(_welford_launch(mo, ((_X, 0), null), x.dtype, aligned, parts, acc, kept, red, cfg, split))
    kept2, red2, cfg2, split2 = _second_pass(kept, split[0], moments=True)
    plan.steps.append(_welford_launch(mo, parts, acc, True, ((_OUT, 0), null), out.dtype, kept2, red2, cfg2, split2))
    return plan
