"""Reductions over any set of dims: sum, mean, prod, max/min, all/any, var, logsumexp, norm.

The launcher splits the input's dims into *kept* dims (the output's) and *reduced*
dims, collapses each group, and views the input as an ``M x K`` matrix of rows
(kept) by reduced elements, both through arbitrary strides. One program owns
``BLOCK_M`` rows and walks ``K`` in ``BLOCK_K`` chunks, accumulating elementwise in
a register tile (in float32 for half types, int64 for integers) and folding the
tile once at the end. The tile shape follows the layout:

* reduced dim contiguous (``sum(-1)``): wide ``BLOCK_K``, a few rows per program;
* kept dim contiguous (``sum(0)``): wide ``BLOCK_M`` columns, a short ``BLOCK_K``;
* when there are too few rows to fill the GPU (``sum()`` of everything, or the
  8192-column ``sum(0)``), ``K`` is split across programs: partial results go to a
  per-stream scratch block and a second launch of the same kernel folds them.

``var`` and ``logsumexp`` first reduce a per-row statistic (mean or max) into
scratch, then reduce ``(x - mean)^2`` or ``exp(x - max)`` against it. ``norm``
folds a per-element transform (``x^2``, ``|x|``, ``|x|^p``, ``x != 0``) with a sum,
or ``|x|`` with a max or min, and takes the root in the final pass.
"""

from __future__ import annotations

import triton
import triton.language as tl

from genesis_storage import contiguous_strides

from .buffer import INT32_LIMIT, MAX_RANK, Buffer, BufferLike, collapse, dtype_info, extent, numel, pad_dims
from .elementwise import cast_to, div_rn, fill, unary
from .mathlib import lib
from .runtime import Kernel, cdiv, next_pow2, ptr_type, scratch, sm_count
from .strided import offset_of, stride_types

# ----------------------------------------------------------------------------------------------
# Kernel
# ----------------------------------------------------------------------------------------------


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
def _prepare_values(v, center, p, OP: tl.constexpr, ACC: tl.constexpr):
    """Loaded values -> what the accumulator folds (truth values, squared deviations, shifted exps, powers)."""
    if OP == "all" or OP == "any" or OP == "count":
        return (v != 0).to(ACC)
    v = cast_to(v, ACC)
    if OP == "sumsq":
        return v * v
    elif OP == "sumabs" or OP == "maxabs" or OP == "minabs":
        return tl.abs(v)
    elif OP == "sumpow":
        return lib.pow(tl.abs(v), p.to(ACC))
    elif OP == "sqdev":
        d = v - center[:, None]
        return d * d
    elif OP == "sumexp":
        return lib.exp(v - center[:, None])
    else:
        return v


@triton.jit
def _reduce_kernel(
    x,
    aux,
    out,
    M,
    K,
    K_PER,
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
    KEPT_CONTIG: tl.constexpr,
    RED_CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    if INT64:
        m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        k_start = pid_s.to(tl.int64) * K_PER
    else:
        m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        k_start = pid_s * K_PER
    m_mask = m < M
    if KEPT_CONTIG:
        row = m
    else:
        row = offset_of(m, KS1, KS2, KS3, KS4, KS5, KS6, KS7, xk0, xk1, xk2, xk3, xk4, xk5, xk6, xk7, KEPT_RANK)
    full_m = (pid_m + 1) * BLOCK_M <= M
    if OP == "sqdev" or OP == "sumexp":
        center = tl.load(aux + m, mask=m_mask, other=0).to(ACC)
        if OP == "sumexp":
            center = tl.where(center == float("-inf"), 0.0, center)  # all -inf rows: exp(-inf) = 0
    else:
        center = tl.zeros([BLOCK_M], ACC)
    ident = _identity(OP, ACC)
    acc = tl.full([BLOCK_M, BLOCK_K], ident, ACC)
    k_end = tl.minimum(k_start + K_PER, K)
    # Loop bounds from plain arguments (the interpreter cannot range over program_id-derived values).
    for k0 in range(0, K_PER, BLOCK_K):
        k = k_start + k0 + tl.arange(0, BLOCK_K)
        k_mask = k < k_end
        if RED_CONTIG:
            col = k
        else:
            col = offset_of(k, RS1, RS2, RS3, RS4, RS5, RS6, RS7, xr0, xr1, xr2, xr3, xr4, xr5, xr6, xr7, RED_RANK)
        ptrs = x + (row[:, None] + col[None, :])
        # Whole tiles load without a mask (a mask the compiler cannot prove uniform over 16
        # bytes forces scalar loads); only the ragged edge is masked.
        if full_m & (k_start + k0 + BLOCK_K <= k_end):
            acc = _combine(acc, _prepare_values(tl.load(ptrs), center, divisor, OP, ACC), OP)
        else:
            mask = m_mask[:, None] & k_mask[None, :]
            v = _prepare_values(tl.load(ptrs, mask=mask), center, divisor, OP, ACC)
            acc = _combine(acc, tl.where(mask, v, ident), OP)
    r = _fold(acc, OP)
    if FINAL:
        if FINALIZE == "divide":
            r = div_rn(r, divisor.to(ACC))
        elif FINALIZE == "sqrt":
            r = lib.sqrt(r)
        elif FINALIZE == "root":  # divisor holds p
            r = lib.pow(r, 1.0 / divisor.to(ACC))
        elif FINALIZE == "log_plus_aux":
            c = tl.load(aux + m, mask=m_mask, other=0).to(ACC)
            r = lib.log(r) + tl.where(c == float("-inf"), 0.0, c)
        if KEPT_CONTIG:
            o = m
        else:
            o = offset_of(m, KS1, KS2, KS3, KS4, KS5, KS6, KS7, ok0, ok1, ok2, ok3, ok4, ok5, ok6, ok7, KEPT_RANK)
        tl.store(out + o, cast_to(r, out.dtype.element_ty), mask=m_mask)
    else:
        tl.store(out + pid_s * M + m, r, mask=m_mask)  # partials, row-major (split, row)


_REDUCE = Kernel(_reduce_kernel)

# ----------------------------------------------------------------------------------------------
# Launcher
# ----------------------------------------------------------------------------------------------

REDUCE_OPS = frozenset(("sum", "mean", "prod", "max", "min", "amax", "amin", "all", "any"))
# How the partial results of a split reduction fold in its second pass.
_FINAL_OP = {
    "sqdev": "sum",
    "sumexp": "sum",
    "sumsq": "sum",
    "sumabs": "sum",
    "sumpow": "sum",
    "count": "sum",
    "maxabs": "max",
    "minabs": "min",
}
_TILE = 4096  # elements per register tile (32 fp32 values per thread with 4 warps)


def _acc_dtype(op: str, dtype: str) -> str:
    if op in ("all", "any"):
        return "int32"
    if dtype in ("float16", "bfloat16", "float32"):
        return "float32"
    if dtype == "float64":
        return "float64"
    return "int64"


def _sizes(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Sizes of dims 1..7 as the kernel takes them."""
    return tuple(shape[1:]) + (1,) * (MAX_RANK - len(shape))


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


def tile_config(M: int, K: int, red_contig: bool, kept_contig: bool) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_K, num_warps, programs per SM wanted before K is split) for an ``M x K`` reduction.

    The tile is long along whichever side is contiguous in memory. A plain function, so that a
    tuning script can replace it and measure other choices.
    """
    if red_contig and M == 1:  # everything into one value: wide tiles over the split K
        block_m, block_k = 1, min(next_pow2(K), 4096)
        return block_m, block_k, 8 if block_k >= 4096 else 4, 4
    if red_contig or not kept_contig:
        block_k = min(next_pow2(K), 2048 if red_contig else 256)
        block_m = max(1, min(next_pow2(M), _TILE // block_k))
        return block_m, block_k, 4 if block_m * block_k <= 2048 else 8, 4
    # Kept dim contiguous (sum over the first dim): wide rows of columns, short K chunks, and more
    # programs per SM before K is split (measured on an H200 with tools/probe_kernels.py).
    block_m = min(next_pow2(M), 512)
    block_k = max(1, min(next_pow2(K), _TILE // block_m))
    return block_m, block_k, 4 if block_m * block_k <= 2048 else 8, 8


def _run(
    op: str,
    x_ptr: int,
    x_dtype: str,
    aux: int,
    out: BufferLike,
    acc: str,
    kept: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]],
    red: tuple[tuple[int, ...], tuple[int, ...]],
    divisor: float,
    finalize: str,
    stream: int,
) -> None:
    """One reduction of an ``M x K`` strided view; splits ``K`` over programs when rows are few."""
    kshape, kx, ko = kept
    rshape, rx = red
    M, K = numel(kshape), numel(rshape)
    kept_contig = len(kshape) == 1 and kx[0] == 1 and ko[0] == 1
    red_contig = len(rshape) == 1 and rx[0] == 1
    big = max(M, K, extent(kshape, kx) + extent(rshape, rx), extent(kshape, ko)) >= INT32_LIMIT - 65536
    block_m, block_k, num_warps, per_sm = tile_config(M, K, red_contig, kept_contig)
    programs_m = cdiv(M, block_m)
    split = 1
    want = per_sm * sm_count()  # programs needed to keep every SM busy
    if programs_m < want and K > 8 * block_k:
        split = max(1, min(cdiv(want, programs_m), cdiv(K, 4 * block_k), 1024))
    k_per = cdiv(cdiv(K, split), block_k) * block_k
    split = cdiv(K, k_per)
    final_op = _FINAL_OP.get(op, op)
    it = "i64" if big else "i32"
    ints = (M, K, k_per)
    kernel_args = (*_sizes(kshape), *pad_dims(kx, 0), *pad_dims(ko, 0), *_sizes(rshape), *pad_dims(rx, 0))

    def launch(
        xp: int,
        xdt: str,
        outp: int,
        outdt: str,
        rop: str,
        final: bool,
        bm: int,
        bk: int,
        warps: int,
        grid: tuple[int, int, int],
        kargs: tuple,
        kc: bool,
        rc: bool,
        kr: int,
        rr: int,
        ints: tuple[int, int, int],
    ) -> None:
        # Pointers and strides divisible by 16 let the compiler prove rows start 16-byte aligned,
        # which is what turns the contiguous side's loads into vector loads.
        names = ("xk0", "xk1", "xk2", "xk3", "xk4", "xk5", "xk6", "xk7")
        aligned = (
            tuple(["x"] if xp % 16 == 0 else [])
            + tuple(
                n
                for n, v in zip(names + tuple(f"xr{d}" for d in range(MAX_RANK)), kargs[7:15] + kargs[30:38])
                if v % 16 == 0
            )
            + (("K_PER",) if ints[2] % 16 == 0 else ())
        )
        key = (
            rop,
            xdt,
            outdt,
            acc,
            final,
            finalize if final else "none",
            kr,
            rr,
            kc,
            rc,
            big,
            bm,
            bk,
            warps,
            aux != 0,
            aligned,
        )
        fn = _REDUCE.cache.get(key)
        if fn is None:
            types = {
                "x": ptr_type(xdt),
                "aux": ptr_type(acc) if aux else "i64",
                "out": ptr_type(outdt),
                "M": it,
                "K": it,
                "K_PER": it,
                "divisor": "fp64",
                **{f"KS{d}": it for d in range(1, MAX_RANK)},
                **stride_types("xk", it),
                **stride_types("ok", it),
                **{f"RS{d}": it for d in range(1, MAX_RANK)},
                **stride_types("xr", it),
            }
            consts = dict(
                OP=rop,
                ACC=dtype_info(acc).tl,
                FINAL=final,
                FINALIZE=finalize if final else "none",
                KEPT_RANK=kr,
                RED_RANK=rr,
                KEPT_CONTIG=kc,
                RED_CONTIG=rc,
                INT64=big,
                BLOCK_M=bm,
                BLOCK_K=bk,
            )
            fn = _REDUCE.build(key, types, consts, aligned, num_warps=warps)
            fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
        fn(grid, stream, (xp, aux, outp, *ints, float(divisor), *kargs, *fn._consts))  # type: ignore[attr-defined]

    if split == 1:
        launch(
            x_ptr,
            x_dtype,
            out.ptr,
            out.dtype,
            op,
            True,
            block_m,
            block_k,
            num_warps,
            (programs_m, 1, 1),
            kernel_args,
            kept_contig,
            red_contig,
            len(kshape),
            len(rshape),
            ints,
        )
        return
    # Stage 1: partials of shape (split, M), contiguous, in the accumulation dtype.
    part = scratch(split * M * dtype_info(acc).itemsize, stream)
    launch(
        x_ptr,
        x_dtype,
        part,
        acc,
        op,
        False,
        block_m,
        block_k,
        num_warps,
        (programs_m, split, 1),
        kernel_args,
        kept_contig,
        red_contig,
        len(kshape),
        len(rshape),
        ints,
    )
    # Stage 2: fold the partials: kept = the flat row index, reduced = the split index (stride M).
    flat = contiguous_strides(kshape)
    bk2 = min(next_pow2(split), 64)
    bm2 = max(1, min(next_pow2(M), _TILE // bk2))
    args2 = (*_sizes(kshape), *pad_dims(flat, 0), *pad_dims(ko, 0), *_sizes((split,)), *pad_dims((M,), 0))
    kc2 = len(kshape) == 1 and ko[0] == 1
    launch(
        part,
        acc,
        out.ptr,
        out.dtype,
        final_op,
        True,
        bm2,
        bk2,
        4,
        (cdiv(M, bm2), 1, 1),
        args2,
        kc2,
        False,
        len(kshape),
        1,
        (M, split, split),
    )


_Dims = tuple[int, ...]


def _prepare(x: BufferLike, out: BufferLike, dims: _Dims) -> tuple[tuple[_Dims, _Dims, _Dims], tuple[_Dims, _Dims]]:
    """((kept shape, x's kept strides, out's strides), (reduced shape, x's reduced strides)), collapsed."""
    rank = len(x.shape)
    kept_dims = [d for d in range(rank) if d not in dims]
    kshape_full = tuple(x.shape[d] for d in kept_dims)
    if tuple(out.shape) != kshape_full:
        raise ValueError(
            f"out.shape {tuple(out.shape)} != {kshape_full} (x.shape {tuple(x.shape)} without dims {dims})"
        )
    kshape, (ko, kx) = collapse(kshape_full, [tuple(out.strides), tuple(x.strides[d] for d in kept_dims)])
    if not kshape:
        kshape, ko, kx = (1,), (0,), (0,)
    rshape, (rx,) = collapse(tuple(x.shape[d] for d in dims), [tuple(x.strides[d] for d in dims)])
    if not rshape:
        rshape, rx = (1,), (0,)
    if len(kshape) > MAX_RANK or len(rshape) > MAX_RANK:
        raise ValueError("rank after collapsing exceeds 8")
    return (kshape, kx, ko), (rshape, rx)


def reduce(
    op: str, x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, *, stream: int = 0
) -> None:
    """Reduce ``x`` over ``dims`` into ``out`` (``x.shape`` without ``dims``; the caller handles keepdim).

    Ops: sum mean prod max min amax amin all any (and logsumexp). Half types accumulate in float32, integers in
    int64; max/min propagate NaN as torch. (For max/min with indices use ``arg_reduce``.)
    """
    if op == "logsumexp":
        logsumexp(x, out, dims, stream=stream)
        return
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduction {op!r}")
    op = {"amax": "max", "amin": "min"}.get(op, op)
    dims = _normalize_dims(dims, len(x.shape))
    if numel(tuple(out.shape)) == 0:
        return
    K = numel(tuple(x.shape[d] for d in dims))
    if K == 0:
        if op in ("max", "min"):
            raise ValueError(f"{op} of an empty dimension has no identity")
        fill(out, {"sum": 0, "prod": 1, "all": True, "any": False, "mean": float("nan")}[op], stream=stream)
        return
    kept, red = _prepare(x, out, dims)
    acc = _acc_dtype(op, x.dtype)
    if op == "mean":
        acc = "float64" if x.dtype == "float64" else "float32"
        _run("sum", x.ptr, x.dtype, 0, out, acc, kept, red, K, "divide", stream)
    else:
        _run(op, x.ptr, x.dtype, 0, out, acc, kept, red, 1, "none", stream)


def norm(
    x: BufferLike, out: BufferLike, p: float = 2.0, dims: tuple[int, ...] | int | None = None, *, stream: int = 0
) -> None:
    """The vector ``p``-norm over ``dims`` (torch.linalg.vector_norm): ``sum(|x|^p)^(1/p)``.

    ``p`` = inf / -inf give the largest / smallest ``|x|``, ``p`` = 0 counts the non-zeros. Floating
    inputs only; half types accumulate in float32. An empty reduction gives 0 (inf and negative
    ``p`` have no identity there and raise ValueError, as torch raises).
    """
    if not dtype_info(x.dtype).is_float:
        raise TypeError(f"norm needs a floating point input, got {x.dtype}")
    p = float(p)
    dims = _normalize_dims(dims, len(x.shape))
    if numel(tuple(out.shape)) == 0:
        return
    K = numel(tuple(x.shape[d] for d in dims))
    if K == 0:
        if p < 0 or p == float("inf"):
            raise ValueError(f"norm of order {p} over an empty dimension has no identity")
        fill(out, 0, stream=stream)
        return
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
    _run(op, x.ptr, x.dtype, 0, out, acc, kept, red, p, finalize, stream)


def var(
    x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, correction: int = 1, *, stream: int = 0
) -> None:
    """Variance over ``dims`` with Bessel-style ``correction`` (two passes: mean, then squared deviations)."""
    _two_pass("var", x, out, dims, correction, stream)


def std(
    x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, correction: int = 1, *, stream: int = 0
) -> None:
    """Standard deviation: ``var`` then a square root in place."""
    _two_pass("var", x, out, dims, correction, stream)
    unary("sqrt", out, out, stream=stream)


def logsumexp(x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None = None, *, stream: int = 0) -> None:
    """``log(sum(exp(x)))`` over ``dims``, shifted by the row max for stability."""
    _two_pass("logsumexp", x, out, dims, 0, stream)


def _two_pass(
    kind: str, x: BufferLike, out: BufferLike, dims: tuple[int, ...] | int | None, correction: int, stream: int
) -> None:
    dims = _normalize_dims(dims, len(x.shape))
    if numel(tuple(out.shape)) == 0:
        return
    K = numel(tuple(x.shape[d] for d in dims))
    acc = "float64" if x.dtype == "float64" else "float32"
    if K == 0:
        fill(out, float("nan") if kind == "var" else float("-inf"), stream=stream)
        return
    kept, red = _prepare(x, out, dims)
    M = numel(kept[0])
    # The per-row statistic (mean or max) sits in this stream's scratch block above the room the
    # split partials may use (at most 1024 x M values at offset 0), so the passes never overlap.
    # If a later pass grows the scratch, the old block stays allocated, so the pointer stays valid.
    part_bytes = 1024 * M * 8
    stat_ptr = scratch(part_bytes + M * 8, stream) + part_bytes
    stat = Buffer(stat_ptr, (M,), (1,), acc)
    stat_kept = (kept[0], kept[1], contiguous_strides(kept[0]))
    if kind == "var":
        _run("sum", x.ptr, x.dtype, 0, stat, acc, stat_kept, red, K, "divide", stream)
        _run("sqdev", x.ptr, x.dtype, stat_ptr, out, acc, kept, red, max(K - correction, 0), "divide", stream)
    else:
        _run("max", x.ptr, x.dtype, 0, stat, acc, stat_kept, red, 1, "none", stream)
        _run("sumexp", x.ptr, x.dtype, stat_ptr, out, acc, kept, red, 1, "log_plus_aux", stream)


# ----------------------------------------------------------------------------------------------
# max/min with indices (argmax/argmin)
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
def _arg_reduce_kernel(
    x,
    values,
    indices,
    M,
    K,
    xk_dim,
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
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        m = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    else:
        m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = m < M
    row = offset_of(m, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)
    if IS_MAX:
        ident = _identity("max", ACC)
    else:
        ident = _identity("min", ACC)
    best = tl.full([BLOCK_M, BLOCK_K], ident, ACC)
    best_i = tl.full([BLOCK_M, BLOCK_K], 9223372036854775807, tl.int64)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        mask = m_mask[:, None] & (k < K)[None, :]
        v = cast_to(tl.load(x + row[:, None] + k[None, :] * xk_dim, mask=mask), ACC)
        v = tl.where(mask, v, ident)
        kk = tl.where(mask, k[None, :].to(tl.int64), 9223372036854775807)
        # Chunks arrive in increasing k, so a strict comparison keeps the first occurrence.
        if IS_MAX:
            take = ((v > best) | ((v != v) & (best == best))) & mask
        else:
            take = ((v < best) | ((v != v) & (best == best))) & mask
        best = tl.where(take, v, best)
        best_i = tl.where(take | ((best_i == 9223372036854775807) & mask), kk, best_i)
    if IS_MAX:
        val, idx = tl.reduce((best, best_i), 1, _pick_max)
    else:
        val, idx = tl.reduce((best, best_i), 1, _pick_min)
    vo = offset_of(m, S1, S2, S3, S4, S5, S6, S7, v0, v1, v2, v3, v4, v5, v6, v7, RANK)
    io = offset_of(m, S1, S2, S3, S4, S5, S6, S7, i0, i1, i2, i3, i4, i5, i6, i7, RANK)
    tl.store(values + vo, cast_to(val, values.dtype.element_ty), mask=m_mask)
    tl.store(indices + io, idx, mask=m_mask)


_ARG_REDUCE = Kernel(_arg_reduce_kernel)


def arg_reduce(
    op: str, x: BufferLike, out_values: BufferLike, out_indices: BufferLike, dim: int, *, stream: int = 0
) -> None:
    """Max or min along ``dim`` with int64 indices of the first occurrence (NaN counts as extreme, as torch).

    ``op``: "max"/"argmax" or "min"/"argmin". ``out_values``/``out_indices`` have ``x.shape`` without ``dim``.
    """
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
        return
    if K == 0:
        raise IndexError(f"{op}: reduction dim {dim} has size 0")
    kshape, (vs, xs, is_) = collapse(
        kshape_full, [tuple(out_values.strides), tuple(x.strides[d] for d in kept_dims), tuple(out_indices.strides)]
    )
    if not kshape:
        kshape, vs, xs, is_ = (1,), (0,), (0,), (0,)
    xk = x.strides[dim] if rank else 1
    acc = (
        "float32"
        if x.dtype in ("float16", "bfloat16")
        else ("int64" if x.dtype in ("bool", "uint8", "int8", "int16", "int32") else x.dtype)
    )
    big = (
        max(extent(tuple(x.shape), tuple(x.strides)), extent(kshape, vs), extent(kshape, is_), M * K)
        >= INT32_LIMIT - 65536
    )
    block_k = min(next_pow2(K), 1024)
    block_m = max(1, min(next_pow2(M), 2048 // block_k))
    key = (is_max, x.dtype, out_values.dtype, len(kshape), big, block_m, block_k)
    fn = _ARG_REDUCE.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "x": ptr_type(x.dtype),
            "values": ptr_type(out_values.dtype),
            "indices": ptr_type("int64"),
            "M": it,
            "K": it,
            "xk_dim": it,
            **{f"S{d}": it for d in range(1, MAX_RANK)},
            **stride_types("x", it),
            **stride_types("v", it),
            **stride_types("i", it),
        }
        consts = dict(
            IS_MAX=is_max, ACC=dtype_info(acc).tl, RANK=len(kshape), INT64=big, BLOCK_M=block_m, BLOCK_K=block_k
        )
        fn = _ARG_REDUCE.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (cdiv(M, block_m), 1, 1),
        stream,
        (
            x.ptr,
            out_values.ptr,
            out_indices.ptr,
            M,
            K,
            xk,
            *_sizes(kshape),
            *pad_dims(xs, 0),
            *pad_dims(vs, 0),
            *pad_dims(is_, 0),
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )
