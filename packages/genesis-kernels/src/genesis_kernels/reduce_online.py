"""Reductions that keep a two-value summary per register lane, in one pass over the input: var / std, logsumexp.

The rows, tiles and split of ``reduce.py`` (its module docstring), with a summary per lane instead of
one accumulator, updated with each chunk's element and merged across lanes at the end:

* var / std: (count, mean, M2 = the sum of squared deviations from the mean). Welford's update
  ``delta = x - mean; mean += delta / n; M2 += delta * (x - mean)``; the lanes of a row merge at once
  (Chan et al.'s merge of k groups)::

      n = sum(n_j);  mean = sum(n_j * mean_j) / n;  M2 = sum(M2_j) + sum(n_j * (mean_j - mean)^2)

  The final pass writes ``M2 / max(K - correction, 0)`` (its square root for std), so a correction at
  or past ``K`` gives torch's inf (nan where all elements are equal). Counts are never stored: a
  lane's and a partial's follow from the geometry.
* logsumexp: (max, sum of exp(x - max)). An element above the max rescales the sum instead of adding
  to it, so each element costs one exp: ``e = exp(-|x - max|)``, ``sum = sum * e + 1`` if ``x > max``,
  else ``sum + e``. Lanes merge as ``max = max_j(max_j)``, ``sum = sum_j(sum_j * exp(max_j - max))``;
  the final pass writes ``max + log(sum)``.

A split reduction stores each program's two values in scratch as two (split, M) planes; a second
launch of the same kernel merges them lane by lane with the pairwise forms (var: ``d = mb - ma;
mean = ma + d * nb / n; M2 = M2a + M2b + d^2 * na * nb / n``), then across lanes as above (no atomics,
so the result does not depend on timing).

Why var's deviations are taken from the row's first element: a mean near 1e4 in float32 is off by up
to half an ulp (5e-4), which is the whole spread of ``1e4 + 1e-3 * randn``; any method that carries
that mean (two passes as well as Welford) then loses the variance. ``x - x[row, 0]`` is exact for
elements near the shift, so the summaries see the spread alone; every program of a split uses the same
shift, so their partial means agree on it and merge without it.
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
def _rescaled(s, m, top):
    """``s * exp(m - top)`` for ``m <= top``; exactly ``s`` where ``m == top``, infinities included."""
    return s * lib.exp(tl.where(m == top, 0.0, m - top))


@triton.jit
def _lse_pair(ma, sa, mb, sb):
    """Merge two (max, sum of exp(x - max)) summaries."""
    top = tl.maximum(ma, mb)
    return top, _rescaled(sa, ma, top) + _rescaled(sb, mb, top)


@triton.jit
def _update(a, b, v, shift, rn, mask, KIND: tl.constexpr, MASKED: tl.constexpr):
    """One chunk's elements ``v`` into the lanes' summaries (a, b); with MASKED, lanes out of ``mask`` keep theirs."""
    if KIND == "var":  # Welford on deviations from the shift; rn = 1 / the lanes' count
        d = v - shift
        if MASKED:
            d = tl.where(mask, d, a)  # a lane's own mean: delta = 0 leaves it as it is
        delta = d - a
        a += delta * rn
        return a, b + delta * (d - a)
    else:  # one exp per element: exp(-|x - max|) either rescales the sum (a new max) or adds to it
        e = lib.exp(-tl.abs(tl.where(v == a, 0.0, v - a)))
        above = v > a
        if MASKED:
            above = above & mask
            e = tl.where(mask, e, 0.0)
        return tl.where(above, v, a), tl.where(above, b * e + 1, b + e)


@triton.jit
def _online_kernel(
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
    KIND: tl.constexpr,
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
    # KIND "var": the summary is (mean, M2) (the count follows from the geometry); "lse": (max, sum).
    # PARTIALS (the second pass of a split): x holds the partials' first values and q their second,
    # (split, M); for var, partial s summarises N1_PER elements of the first pass's N1 (the last one
    # what is left). Not FINAL: this program's summary goes to out and out_q, (split, M) row-major.
    outer, m_in, m, m_mask, full_m = _kept_rows(M, M_INNER, NB_INNER, INNER, INT64, BLOCK_M)
    row = _kept_offset(outer, m_in, 1, KS1, KS2, KS3, KS4, KS5, KS6, KS7, xk0, xk1, xk2, xk3, xk4, xk5, xk6, xk7,
                       KEPT_RANK, INNER)  # fmt: skip
    pid_s = tl.program_id(1)
    if INT64:
        k_start = pid_s.to(tl.int64) * K_PER
    else:
        k_start = pid_s * K_PER
    k_end = tl.minimum(k_start + K_PER, K)
    if KIND == "var":
        a = tl.zeros([BLOCK_M, BLOCK_K], ACC)  # mean
        a_empty = 0.0
    else:
        a = tl.full([BLOCK_M, BLOCK_K], float("-inf"), ACC)  # max
        a_empty = float("-inf")
    b = tl.zeros([BLOCK_M, BLOCK_K], ACC)  # M2, or the sum of exp(x - max)
    if PARTIALS:
        n = tl.zeros([BLOCK_M, BLOCK_K], ACC)
    elif KIND == "var":
        shift = cast_to(tl.load(x + row, mask=m_mask, other=0), ACC)[:, None]  # element 0 of each row
    else:
        shift = 0
    for k0 in range(0, K_PER, BLOCK_K):
        k = k_start + k0 + tl.arange(0, BLOCK_K)
        if RED_CONTIG:
            col = k
        else:
            col = offset_of(k, RS1, RS2, RS3, RS4, RS5, RS6, RS7, xr0, xr1, xr2, xr3, xr4, xr5, xr6, xr7, RED_RANK)
        offs = row[:, None] + col[None, :]
        if PARTIALS:
            mask = m_mask[:, None] & (k < k_end)[None, :]
            ab = tl.load(x + offs, mask=mask, other=a_empty)
            bb = tl.load(q + offs, mask=mask, other=0)
            if KIND == "var":
                s = tl.minimum(k, K - 1)  # clamped, so that s * N1_PER cannot overflow past the end
                nb = tl.where(k < k_end, tl.minimum(N1_PER, N1 - s * N1_PER), 0).to(ACC)[None, :]
                n, a, b = _chan(n, a, b, nb, ab, bb)
            else:
                a, b = _lse_pair(a, b, ab, bb)
        else:
            if KIND == "var":
                # Every lane in range has seen one element per earlier chunk (a lane leaves the range
                # only in a program's last chunks), so one count serves the whole tile.
                rn = div_rn(tl.full([], 1, ACC), tl.full([], k0 // BLOCK_K + 1, ACC))  # 1 / the count
            else:
                rn = 0
            # Whole tiles load without a mask (reduce.py's kernel says why); only the ragged edge is masked.
            if full_m & (k_start + k0 + BLOCK_K <= k_end):
                v = cast_to(tl.load(x + offs), ACC)
                a, b = _update(a, b, v, shift, rn, 0, KIND, False)
            else:
                mask = m_mask[:, None] & (k < k_end)[None, :]
                v = cast_to(tl.load(x + offs, mask=mask), ACC)
                a, b = _update(a, b, v, shift, rn, mask, KIND, True)
    if KIND == "var":
        if not PARTIALS:
            # Lane j took one element from each chunk that reached it: ceil((k_end - k_start - j) / BLOCK_K).
            lane_n = ((k_end - k_start - tl.arange(0, BLOCK_K) + BLOCK_K - 1) // BLOCK_K).to(ACC)
            n = tl.zeros([BLOCK_M, BLOCK_K], ACC) + lane_n[None, :]
        n, a, b = _merge_lanes(n, a, b)
    else:
        top = tl.max(a, axis=1)
        a, b = top, tl.sum(_rescaled(b, a, top[:, None]), axis=1)
    if FINAL:
        if KIND == "var":
            r = div_rn(b, divisor.to(ACC))
            if SQRT:
                r = lib.sqrt(r)
        else:
            r = a + lib.log(b)
        o = _kept_offset(outer, m_in, oi, KS1, KS2, KS3, KS4, KS5, KS6, KS7, ok0, ok1, ok2, ok3, ok4, ok5, ok6, ok7,
                         KEPT_RANK, INNER)  # fmt: skip
        tl.store(out + o, cast_to(r, out.dtype.element_ty), mask=m_mask)
    else:
        tl.store(out + pid_s * M + m, a, mask=m_mask)
        tl.store(out_q + pid_s * M + m, b, mask=m_mask)


_ONLINE = Kernel(_online_kernel)


class _Summary(NamedTuple):
    """What every launch of one plan shares."""

    kind: str  # "var" (std too) or "lse"
    acc: str  # accumulation dtype
    sqrt: bool  # std: the square root in the final store
    divisor: float  # var: max(K - correction, 0)
    counts: tuple[int, int]  # the first pass's K and K_PER: what each partial of a split summarises
    big: bool  # 64-bit offsets


def _online_launch(
    mo: _Summary,
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
    """One launch. ``src``: (x, null) or a split's two planes; ``dst``: (out, null) or the two planes."""
    block_m, block_k, warps = cfg
    rows = _rows(kept, red, block_m, split[1])
    partials, final = src[1][0] != _NULL, dst[1][0] == _NULL
    sqrt = mo.sqrt and final
    aligned = (("x",) if x_aligned else ()) + rows.aligned
    layout = (rows.kept_rank, len(red[0]), rows.inner, rows.red_contig, mo.big, *cfg, aligned)
    key = (mo.kind, xdt, outdt, mo.acc, partials, final, sqrt, layout)
    fn = _ONLINE.cache.get(key)
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
            KIND=mo.kind,
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
        fn = _ONLINE.build(key, types, consts, aligned, num_warps=warps)
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
    _run("var", x, out, dims, correction, stream)


def std(
    x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, correction: int = 1, *, stream: int = 0
) -> None:
    """Standard deviation: ``var``'s one pass, with the square root taken in its final store."""
    _run("std", x, out, dims, correction, stream)


def logsumexp(x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, *, stream: int = 0) -> None:
    """``log(sum(exp(x)))`` over ``dims`` in one pass: a running max per lane and the sum rescaled to it.

    Half types accumulate in float32; ``K == 0`` gives -inf.
    """
    _run("lse", x, out, dims, 0, stream)


def _run(
    kind: str, x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None, correction: int, stream: int
) -> None:
    dims = tuple(dims) if isinstance(dims, list) else dims
    key = (kind, correction, x.dtype, x.shape, x.strides, x.ptr & 15 == 0, out.dtype, out.shape, out.strides, dims)
    plan = _PLANS.get(key)
    if plan is None:
        built = plan_online(kind, x, out, dims, correction, stream)
        if built is None:
            return
        plan = _PLANS.put(key, built)
    plan.run(x.ptr, out.ptr, 0, stream)


def plan_online(kind: str, x: BufferLike, out: BufferLike, dims: Any, correction: int, stream: int) -> _Plan | None:
    """The plan of ``var`` / ``std`` / ``logsumexp`` (``kind`` "var", "std", "lse").

    None (after filling ``out`` for an empty reduction: nan, or -inf for logsumexp) if nothing to launch.
    """
    dims = _normalize_dims(dims, len(x.shape))
    if numel(tuple(out.shape)) == 0:
        return None
    K = numel(tuple(x.shape[d] for d in dims))
    if K == 0:
        fill(out, float("-inf") if kind == "lse" else float("nan"), stream=stream)
        return None
    kept, red = _prepare(x, out, dims)
    cfg, split, big = _first_pass(kept, red, online=True)
    acc = "float64" if x.dtype == "float64" else "float32"
    mo = _Summary("lse" if kind == "lse" else "var", acc, kind == "std", max(K - correction, 0), (K, split[1]), big)
    plan = _Plan()
    aligned = x.ptr % 16 == 0
    null = (_NULL, 0)
    if split[0] == 1:
        plan.steps.append(
            _online_launch(mo, ((_X, 0), null), x.dtype, aligned, ((_OUT, 0), null), out.dtype, kept, red, cfg, split)
        )
        return plan
    # Pass 1: each program's summary, two (split, M) planes in the accumulation dtype.
    room = split[0] * numel(kept[0]) * dtype_info(acc).itemsize
    base = plan.partials(2 * room)
    parts = ((_SCRATCH, base), (_SCRATCH, base + room))
    plan.steps.append(_online_launch(mo, ((_X, 0), null), x.dtype, aligned, parts, acc, kept, red, cfg, split))
    kept2, red2, cfg2, split2 = _second_pass(kept, split[0], online=True)
    plan.steps.append(_online_launch(mo, parts, acc, True, ((_OUT, 0), null), out.dtype, kept2, red2, cfg2, split2))
    return plan
