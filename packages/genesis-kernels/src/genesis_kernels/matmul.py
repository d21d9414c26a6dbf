"""Batched matmul ``out[b] = act(a[b] @ b[b] + bias)`` over any strides (batch stride 0 broadcasts).

Two kernels. The tensor-core path (float16 / bfloat16, and float32 as tf32) is a
persistent kernel: one program per SM walks the output tiles in grouped order, and the
tensor-memory accelerator loads operand tiles through descriptors built on the device,
so transposed operands (the backward's x^T dy and dy W^T) are read in place, never
copied. Everything else (exact IEEE float32, float64, layouts TMA cannot address, small
products) takes the classic tiled pointer kernel. Both accumulate in float32 (float64
for float64), add the bias and apply the activation to the accumulator, and round once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import triton
import triton.language as tl

from . import runtime as rt
from .buffer import INT32_LIMIT, BufferLike, dtype_info, extent
from .elementwise import cast_to, fill, unary_op
from .runtime import INTERPRET, Kernel, LaunchFn, PlanTable, cdiv, next_pow2, ptr_type, sm_count

# The interpreter's dot reads bfloat16 storage as integers; upcast there (exact, same products).
_UPCAST_HALF_DOT = tl.constexpr(INTERPRET)


@triton.jit
def _epilogue(acc, bias, sbias, rn, N, HAS_BIAS: tl.constexpr, ACT: tl.constexpr):
    """bias (broadcast over rows) and activation on the float32 accumulator tile."""
    if HAS_BIAS:
        acc += tl.load(bias + rn * sbias, mask=rn < N, other=0).to(acc.dtype)[None, :]
    if ACT != "none":
        acc = unary_op(acc, ACT)
    return acc


@triton.jit
def _matmul_kernel(
    a,
    b,
    out,
    bias,
    M,
    N,
    K,
    sab,
    sam,
    sak,
    sbb,
    sbk,
    sbn,
    sob,
    som,
    son,
    sbias,
    ws,
    k_per,
    ACC: tl.constexpr,
    PRECISION: tl.constexpr,
    INT64: tl.constexpr,
    A_K_CONTIG: tl.constexpr,
    B_N_CONTIG: tl.constexpr,
    O_N_CONTIG: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    ACT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    SPLIT: tl.constexpr,
    ACCUMULATE: tl.constexpr,
):
    # SPLIT > 1 (split-K, for products with too few output tiles to fill the chip): program
    # (tile, batch, s) sums K's slice [s * k_per, (s + 1) * k_per) and writes its float32 (float64)
    # partial to ws (SPLIT, B, M, N); _split_sum_kernel adds the slices, the bias and the activation.
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _grouped(pid, grid_m, grid_n, GROUP_M)
    if INT64:
        batch = batch.to(tl.int64)
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_base = a + batch * sab + rm[:, None] * sam
    b_base = b + batch * sbb + rn[None, :] * sbn
    acc = tl.zeros([BLOCK_M, BLOCK_N], ACC)
    k_lo = 0
    k_hi = K
    if SPLIT > 1:
        k_lo = tl.program_id(2) * k_per  # k_per is a multiple of BLOCK_K: the slices tile K exactly
        k_hi = tl.minimum(K, k_lo + k_per)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        k = k0 + rk
        if A_K_CONTIG:
            a_ptrs = a_base + k[None, :]
        else:
            a_ptrs = a_base + k[None, :] * sak
        if B_N_CONTIG:
            b_ptrs = b + batch * sbb + k[:, None] * sbk + rn[None, :]
        else:
            b_ptrs = b_base + k[:, None] * sbk
        av = tl.load(a_ptrs, mask=(rm[:, None] < M) & (k[None, :] < K), other=0)
        bv = tl.load(b_ptrs, mask=(k[:, None] < K) & (rn[None, :] < N), other=0)
        if ACC == tl.float64:
            acc += tl.dot(av.to(tl.float64), bv.to(tl.float64), input_precision="ieee", out_dtype=tl.float64)
        elif _UPCAST_HALF_DOT and (av.dtype == tl.bfloat16 or av.dtype == tl.float16):
            acc = tl.dot(av.to(tl.float32), bv.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(av, bv, acc, input_precision=PRECISION)
    if SPLIT > 1:
        part = ws + ((tl.program_id(2) * tl.num_programs(1) + batch) * M + rm[:, None]) * N + rn[None, :]
        tl.store(part, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
        return
    acc = _epilogue(acc, bias, sbias, rn, N, HAS_BIAS, ACT)
    if O_N_CONTIG:
        o = out + batch * sob + rm[:, None] * som + rn[None, :]
    else:
        o = out + batch * sob + rm[:, None] * som + rn[None, :] * son
    o_mask = (rm[:, None] < M) & (rn[None, :] < N)
    if ACCUMULATE:
        acc += tl.load(o, mask=o_mask, other=0).to(acc.dtype)
    tl.store(o, cast_to(acc, out.dtype.element_ty), mask=o_mask)


@triton.jit
def _grouped(tile, grid_m, grid_n, GROUP_M: tl.constexpr):
    """Tile index -> (row tile, column tile), GROUP_M row tiles per column sweep so B panels stay in L2."""
    per_group = GROUP_M * grid_n
    group = tile // per_group
    first_m = group * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % size_m, (tile % per_group) // size_m


@triton.jit
def _split_sum_kernel(
    ws, out, bias, M, N, total, sob, som, son, sbias,
    SPLIT: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr, INT64: tl.constexpr, BLOCK: tl.constexpr,
    ACCUMULATE: tl.constexpr,
):  # fmt: skip
    """out = act(sum of the SPLIT partials + bias), rounded once: split-K's second pass, in slice order
    (deterministic)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if INT64:
        i = i.to(tl.int64)
    mask = i < total
    acc = tl.load(ws + i, mask=mask, other=0)
    for s in tl.static_range(1, SPLIT):
        acc += tl.load(ws + s * total + i, mask=mask, other=0)
    mn = M * N
    b = i // mn
    m = (i % mn) // N
    n = i % N
    if HAS_BIAS:
        acc += tl.load(bias + n * sbias, mask=mask, other=0).to(acc.dtype)
    if ACT != "none":
        acc = unary_op(acc, ACT)
    o = out + b * sob + m * som + n * son
    if ACCUMULATE:
        acc += tl.load(o, mask=mask, other=0).to(acc.dtype)
    tl.store(o, cast_to(acc, out.dtype.element_ty), mask=mask)


@triton.jit
def _matmul_tma_kernel(
    a,
    b,
    out,
    bias,
    M,
    N,
    K,
    BATCH,
    A_BATCHES,
    B_BATCHES,
    sab,
    sa,
    sbb,
    sb,
    sob,
    so,
    sbias,
    programs,
    PRECISION: tl.constexpr,
    A_T: tl.constexpr,
    B_T: tl.constexpr,
    BATCHED: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    ACT: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    STAGES: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
    ACCUMULATE: tl.constexpr,
):
    # Operands are read by the tensor-memory accelerator through descriptors built on the device:
    # each matrix is described by the layout it is stored in (A_T: A is stored K x M, i.e. A^T
    # row-major; B_T: B stored N x K), and a transposed tile is fed to the tensor cores as a
    # transposed shared-memory view, never copied. Out-of-range rows and columns read as zero
    # and are clipped on store, so no masks are needed.
    if BATCHED:
        if A_T:
            a_desc = tl.make_tensor_descriptor(a, [A_BATCHES, K, M], [sab, sa, 1], [1, BK, BM])
        else:
            a_desc = tl.make_tensor_descriptor(a, [A_BATCHES, M, K], [sab, sa, 1], [1, BM, BK])
        if B_T:
            b_desc = tl.make_tensor_descriptor(b, [B_BATCHES, N, K], [sbb, sb, 1], [1, BN, BK])
        else:
            b_desc = tl.make_tensor_descriptor(b, [B_BATCHES, K, N], [sbb, sb, 1], [1, BK, BN])
        o_desc = tl.make_tensor_descriptor(out, [BATCH, M, N], [sob, so, 1], [1, BM, BN])
    else:
        if A_T:
            a_desc = tl.make_tensor_descriptor(a, [K, M], [sa, 1], [BK, BM])
        else:
            a_desc = tl.make_tensor_descriptor(a, [M, K], [sa, 1], [BM, BK])
        if B_T:
            b_desc = tl.make_tensor_descriptor(b, [N, K], [sb, 1], [BN, BK])
        else:
            b_desc = tl.make_tensor_descriptor(b, [K, N], [sb, 1], [BK, BN])
        o_desc = tl.make_tensor_descriptor(out, [M, N], [so, 1], [BM, BN])
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    per_batch = grid_m * grid_n
    k_tiles = tl.cdiv(K, BK)
    # Persistent: one program per SM walks the tiles, so tile t+1's first loads overlap tile t's epilogue.
    for tile in tl.range(tl.program_id(0), BATCH * per_batch, programs, flatten=True, warp_specialize=WARP_SPECIALIZE):
        batch = tile // per_batch
        pid_m, pid_n = _grouped(tile % per_batch, grid_m, grid_n, GROUP_M)
        om = pid_m * BM
        on = pid_n * BN
        ba = batch if A_BATCHES > 1 else 0
        bb = batch if B_BATCHES > 1 else 0
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in tl.range(k_tiles, num_stages=STAGES):
            ok = kt * BK
            if BATCHED:
                if A_T:
                    av = a_desc.load([ba, ok, om]).reshape(BK, BM).T
                else:
                    av = a_desc.load([ba, om, ok]).reshape(BM, BK)
                if B_T:
                    bv = b_desc.load([bb, on, ok]).reshape(BN, BK).T
                else:
                    bv = b_desc.load([bb, ok, on]).reshape(BK, BN)
            else:
                if A_T:
                    av = a_desc.load([ok, om]).T
                else:
                    av = a_desc.load([om, ok])
                if B_T:
                    bv = b_desc.load([on, ok]).T
                else:
                    bv = b_desc.load([ok, on])
            if _UPCAST_HALF_DOT and (av.dtype == tl.bfloat16 or av.dtype == tl.float16):
                acc = tl.dot(av.to(tl.float32), bv.to(tl.float32), acc, input_precision="ieee")
            else:
                acc = tl.dot(av, bv, acc, input_precision=PRECISION)
        acc = _epilogue(acc, bias, sbias, on + tl.arange(0, BN), N, HAS_BIAS, ACT)
        if ACCUMULATE:  # out += the product: the old tile read through pointers (no shared memory taken)
            rm = om + tl.arange(0, BM)
            rn = on + tl.arange(0, BN)
            old = out + batch.to(tl.int64) * sob + rm.to(tl.int64)[:, None] * so + rn[None, :]
            acc += tl.load(old, mask=(rm[:, None] < M) & (rn[None, :] < N), other=0).to(tl.float32)
        res = cast_to(acc, out.dtype.element_ty)
        if BATCHED:
            o_desc.store([batch, om, on], res.reshape(1, BM, BN))
        else:
            o_desc.store([om, on], res)


@triton.jit
def _tma_k_loop(a_desc, b_desc, om, on, k_lo, k_hi, acc, PRECISION: tl.constexpr, A_T: tl.constexpr,
                B_T: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):  # fmt: skip
    """acc += A[om:om+BM, K tiles k_lo..k_hi) @ B[.., on:on+BN] through 2-D descriptors (transposed views)."""
    for kt in tl.range(k_lo, k_hi, num_stages=STAGES):
        ok = kt * BK
        if A_T:
            av = a_desc.load([ok, om]).T
        else:
            av = a_desc.load([om, ok])
        if B_T:
            bv = b_desc.load([on, ok]).T
        else:
            bv = b_desc.load([ok, on])
        if _UPCAST_HALF_DOT and (av.dtype == tl.bfloat16 or av.dtype == tl.float16):
            acc = tl.dot(av.to(tl.float32), bv.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(av, bv, acc, input_precision=PRECISION)
    return acc


@triton.jit
def _matmul_tma_sk_kernel(
    a,
    b,
    out,
    bias,
    ws,
    M,
    N,
    K,
    sa,
    sb,
    so,
    sbias,
    programs,
    dp_tiles,
    sk_iters,
    PRECISION: tl.constexpr,
    A_T: tl.constexpr,
    B_T: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    ACT: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    STAGES: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
):
    # Stream-K (2-D products whose output tiles fill the SMs badly, with a long K: a weight
    # gradient x^T dy, 768 x 3072 outputs over 8192 rows, has 72 to 144 tiles for 132 SMs).
    # The first dp_tiles tiles (whole waves) go round robin, whole, as in _matmul_tma_kernel.
    # The remaining tiles' K iterations, sk_iters in all (tile-major), are cut into `programs`
    # equal contiguous ranges, one per program: every SM does the same work. A tile whose K
    # range lies within one program is finished there; a tile cut between programs has each
    # piece's float32 partial written to ws (two slots per program: the first and the last
    # tile of its range are the only ones it can share), and _stream_k_fixup_kernel sums
    # them in program order (deterministic, no atomics) and applies the epilogue.
    if A_T:
        a_desc = tl.make_tensor_descriptor(a, [K, M], [sa, 1], [BK, BM])
    else:
        a_desc = tl.make_tensor_descriptor(a, [M, K], [sa, 1], [BM, BK])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b, [N, K], [sb, 1], [BN, BK])
    else:
        b_desc = tl.make_tensor_descriptor(b, [K, N], [sb, 1], [BK, BN])
    o_desc = tl.make_tensor_descriptor(out, [M, N], [so, 1], [BM, BN])
    grid_m = tl.cdiv(M, BM)
    grid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    pid = tl.program_id(0)
    for tile in tl.range(pid, dp_tiles, programs, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _grouped(tile, grid_m, grid_n, GROUP_M)
        om = pid_m * BM
        on = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        acc = _tma_k_loop(a_desc, b_desc, om, on, 0, k_tiles, acc, PRECISION, A_T, B_T, BK, STAGES)
        acc = _epilogue(acc, bias, sbias, on + tl.arange(0, BN), N, HAS_BIAS, ACT)
        o_desc.store([om, on], cast_to(acc, out.dtype.element_ty))
    start = pid * sk_iters // programs  # the launcher keeps programs * sk_iters < 2^31
    end = (pid + 1) * sk_iters // programs
    first = start // k_tiles
    for t in tl.range(first, (end - 1) // k_tiles + 1):
        lo = tl.maximum(start - t * k_tiles, 0)
        hi = tl.minimum(end - t * k_tiles, k_tiles)
        pid_m, pid_n = _grouped(dp_tiles + t, grid_m, grid_n, GROUP_M)
        om = pid_m * BM
        on = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        acc = _tma_k_loop(a_desc, b_desc, om, on, lo, hi, acc, PRECISION, A_T, B_T, BK, STAGES)
        if (lo == 0) & (hi == k_tiles):
            acc = _epilogue(acc, bias, sbias, on + tl.arange(0, BN), N, HAS_BIAS, ACT)
            o_desc.store([om, on], cast_to(acc, out.dtype.element_ty))
        else:
            slot = 2 * pid + (t != first).to(tl.int32)
            part = ws + slot * (BM * BN) + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
            tl.store(part, acc)


@triton.jit
def _stream_k_fixup_kernel(
    ws, out, bias, M, N, K, so, sbias, programs, dp_tiles, sk_iters,
    HAS_BIAS: tl.constexpr, ACT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    GROUP_M: tl.constexpr, SUB: tl.constexpr,
):  # fmt: skip
    """Stream-K's second pass: rows [SUB * program_id(1), + SUB) of stream-K tile program_id(0), when that
    tile was cut between programs: the partials summed in program order, the epilogue, one rounding."""
    t = tl.program_id(0)
    k_tiles = tl.cdiv(K, BK)
    # Program p's range is [p * sk_iters // programs, (p + 1) * sk_iters // programs), so iteration i
    # belongs to program ((i + 1) * programs - 1) // sk_iters: the tile's first and last iterations' owners.
    p_lo = ((t * k_tiles + 1) * programs - 1) // sk_iters
    p_hi = ((t + 1) * k_tiles * programs - 1) // sk_iters
    if p_lo < p_hi:
        rows = tl.program_id(1) * SUB + tl.arange(0, SUB)
        cols = tl.arange(0, BN)
        acc = tl.zeros((SUB, BN), dtype=tl.float32)
        for p in range(p_lo, p_hi + 1):
            slot = 2 * p + (t != (p * sk_iters // programs) // k_tiles).to(tl.int32)
            acc += tl.load(ws + slot * (BM * BN) + rows[:, None] * BN + cols[None, :])
        pid_m, pid_n = _grouped(dp_tiles + t, tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
        rm = pid_m * BM + rows
        rn = pid_n * BN + cols
        acc = _epilogue(acc, bias, sbias, rn, N, HAS_BIAS, ACT)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        tl.store(out + rm[:, None] * so + rn[None, :], cast_to(acc, out.dtype.element_ty), mask=mask)


_MATMUL = Kernel(_matmul_kernel)
_SPLIT_SUM = Kernel(_split_sum_kernel)
_MATMUL_TMA = Kernel(_matmul_tma_kernel)
_MATMUL_TMA_SK = Kernel(_matmul_tma_sk_kernel)
_SK_FIXUP = Kernel(_stream_k_fixup_kernel)

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


def _config(dtype: str, tf32: bool, M: int, N: int, K: int) -> tuple[int, int, int, int, int]:
    """The pointer kernel's (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); shrunk for small problems."""
    if dtype in ("float16", "bfloat16"):
        bm, bn, bk, w, s = (128, 256, 64, 8, 3) if N >= 2048 and M >= 2048 else (128, 128, 64, 8, 3)
    elif dtype == "float32" and tf32:
        bm, bn, bk, w, s = 128, 128, 32, 8, 3
    elif dtype == "float64":
        bm, bn, bk, w, s = 64, 64, 16, 4, 2
    else:  # exact float32: FMA path, moderate tiles
        bm, bn, bk, w, s = 64, 64, 32, 4, 3
    if INTERPRET:  # numpy executes a program at a time: small tiles keep CPU tests quick
        bm, bn, bk = 32, 32, 32
    # tl.dot needs every tile dim >= 16.
    bm = max(16, min(bm, next_pow2(M)))
    bn = max(16, min(bn, next_pow2(N)))
    bk = max(16, min(bk, next_pow2(K)))
    return bm, bn, bk, w, s


class TmaConfig(NamedTuple):
    """The TMA kernels' configuration for one product: tile (bm x bn, K step bk), warps, pipeline
    stages, whether the tiles' K iterations are balanced over the SMs (stream-K), and whether the
    tile loop is warp-specialised (a producer warp issues the loads)."""

    bm: int
    bn: int
    bk: int
    warps: int
    stages: int
    stream_k: bool = False
    warp_specialize: bool = True


class PointerConfig(NamedTuple):
    """The pointer kernel's configuration for one product (``matmul_plan``'s ``config``): tile
    (bm x bn, K step bk), warps, pipeline stages and ``split`` K slices (1: no split-K; more: each
    slice's float32 partial is summed by a second kernel). Tile sizes are clamped to the product
    (at least 16, at most the next power of two of its dimension) and ``split`` to whole K steps."""

    bm: int
    bn: int
    bk: int
    warps: int
    stages: int
    split: int = 1


MatmulConfig = PointerConfig | TmaConfig


def latency_config(dtype: str, M: int, N: int, K: int) -> PointerConfig:
    """A pointer-kernel configuration for a small-M product launched in a chain of dependent steps
    (a recurrent net's h @ W_hh^T, 64 rows), where each launch's latency, not the chip's throughput,
    is what counts.

    One row tile (M <= 64), the widest column tile (128, 64, 32) that still gives every SM a program,
    and split-K only where even 32-column tiles leave SMs idle, in at most as many slices as fill one
    wave (no second wave of programs, and no second launch where the tiles alone fill the chip). The
    general choice (``_config`` / ``_split_k``) takes bigger tiles and splits K up to five ways, which
    suits one product but not a chain of them. benchmarks/sweep_rnn_step.py measures both.
    """
    sms = sm_count()
    bm = max(16, min(64, next_pow2(M)))
    bk = 64 if dtype_info(dtype).itemsize == 2 else 32
    rows = cdiv(M, bm)
    bn = next((c for c in (128, 64) if rows * cdiv(N, c) >= sms), 32)
    programs = rows * cdiv(N, bn)
    split = max(1, min(sms // programs, K // (_MIN_SLICE_TILES * bk), 8))
    return PointerConfig(bm, bn, bk, 4, 3, split)


# Stream-K pays where a long-K product has too few output tiles to occupy half the SMs (a 768 x 768
# weight gradient over 8192 rows: 36 tiles of 128 x 128 for 132 SMs, 1.21x cuBLAS against 0.95x
# data-parallel on an H100). Above that, measured (benchmarks/sweep_matmul_wgrad.py), the partials'
# float32 round trip through L2 and the fix-up pass cost more than the idle SMs: 108 tiles (one wave,
# 82 % full) ran 0.71x stream-K against 1.24x data-parallel. K must be long enough (>= _SK_MIN_K_TILES
# steps per tile) for the partials to be small beside the product. Each program gets at least
# _SK_MIN_ITERS K steps (fewer programs for tiny outputs) so its pipeline fills.
# It also pays where the tiles just overflow one wave, leaving a second wave nearly empty (at most
# _SK_MAX_TAIL of the SMs): a 3072 x 768 weight gradient written in float32 (128 x 128 tiles, as a
# float32 output cannot take 128 x 256 ones) is 144 tiles for 132 SMs, 99 us stream-K against 107 us
# data-parallel on an H200 (benchmarks/sweep_matmul_step.py).
_SK_MAX_FILL = 0.5
_SK_MAX_TAIL = 0.25
_SK_MIN_K_TILES = 32
_SK_MIN_ITERS = 8


def _stream_k_pays(tiles: int, k_tiles: int, sms: int) -> bool:
    """Whether a 2-D product of ``tiles`` output tiles, ``k_tiles`` K steps each, takes stream-K on ``sms`` SMs."""
    if k_tiles < _SK_MIN_K_TILES:
        return False
    return tiles <= _SK_MAX_FILL * sms or sms < tiles <= (1 + _SK_MAX_TAIL) * sms


def _tma_config(
    itemsize: int, M: int, N: int, K: int, batched: bool, a_t: bool = False, out_itemsize: int | None = None
) -> TmaConfig:
    """The TMA kernels' configuration, by the shape class (``a_t``: A is read transposed, as in a
    weight gradient x^T dy; ``out_itemsize``: the output's element size, the inputs' by default).

    Measured on an H100 against cuBLAS (benchmarks/matmul_variants.py, sweep_matmul_wgrad.py):
    128 x 256 tiles, three stages, win wherever N is wide; narrow outputs (N < 2048, e.g. a GPT's
    768-wide projections) have too few such tiles to fill 132 SMs, and 128 x 128 tiles four stages
    deep win there. Weight gradients (A transposed, K = 8192 rows) are the exception: with more
    128 x 128 tiles than SMs (3072 x 768: 144, a second wave 9 % full) 128 x 256 tiles win (1.01x
    against 0.81x; 50304 x 768: 1.07x against 0.87x), while the products that read A untransposed
    keep 128 x 128 (8192 x 768 over K = 50304: 0.92x against 0.79x). Outputs below half a wave of
    tiles take stream-K, four warps (1.21x against 1.09x with eight).
    """
    bk = 64 if itemsize == 2 else 32
    sms = sm_count()
    long_k = cdiv(K, bk) >= _SK_MIN_K_TILES
    if INTERPRET:
        bm, bn, bk, warps, stages = 64, 32, 32, 4, 2
    elif (
        itemsize == 2
        and out_itemsize in (None, 2)
        and (N >= 2048 or (a_t and long_k and cdiv(M, 128) * cdiv(N, 128) > sms))
    ):
        bm, bn, warps, stages = 128, 256, 8, 3
    else:
        # float32 out: a 128 x 256 tile's fp32 epilogue buffer (128 KB) plus three stages exceeds the 227 KB
        # of shared memory an H100 block may have; 128 x 128 tiles fit with four stages. Four warps (one
        # consumer warp group beside the producer) beat eight on every GPT-2 product of this class on an
        # H200 (benchmarks/sweep_matmul_step.py: by 1-9 %, the LM head's float32 gradients by 7 and 9 %).
        bm, bn, warps, stages = 128, 128, 4, 4
    sk = not batched and _stream_k_pays(cdiv(M, bm) * cdiv(N, bn), cdiv(K, bk), sms)
    if sk and not INTERPRET:
        warps = 4
    return TmaConfig(bm, bn, bk, warps, stages, stream_k=sk, warp_specialize=not INTERPRET and not sk)


def _tma_layout(t: BufferLike, rows: int, cols: int) -> tuple[bool, int] | None:
    """How a (batch, rows, cols) operand is stored for a tensor descriptor: (transposed, row stride).

    None when TMA cannot read it: it needs one unit-stride dimension, the other stride and the
    base address 16-byte aligned, and a batch stride that is 16-byte aligned too.
    """
    item = dtype_info(t.dtype).itemsize
    sb, sr, sc = t.strides
    if t.ptr % 16 or (sb * item) % 16:
        return None
    if sc == 1 and sr >= cols and (sr * item) % 16 == 0:
        return False, sr
    if sr == 1 and sc >= rows and (sc * item) % 16 == 0:
        return True, sc
    return None


MatmulPlan = Callable[[int, int, int, int, int], None]  # (a, b, out, bias pointers, stream) -> None

# Resolved launches: (dtypes, shapes, strides, pointer alignments, bias layout, activation, tf32) -> plan. A
# plan is everything one launch needs but the pointers and the stream (kernel, grid, sizes, strides, constexprs),
# so a repeated product (every step of a training loop) costs a dict lookup and one launch.
_PLANS = PlanTable(4096)


def _nothing(a: int, b: int, out: int, bias: int, stream: int) -> None:
    """The plan of an empty product."""


def matmul(
    a: BufferLike,
    b: BufferLike,
    out: BufferLike,
    *,
    bias: BufferLike | None = None,
    activation: str = "none",
    allow_tf32: bool = False,
    accumulate: bool = False,
    stream: int = 0,
) -> None:
    """``out (B, M, N) = act(a (B, M, K) @ b (B, K, N) + bias (N,))``; any strides, batch stride 0 broadcasts.

    float16 / bfloat16 (and float32 with ``allow_tf32``) run on the tensor cores with float32
    accumulation; float32 without tf32 and float64 are exact (FMA). ``bias`` is added and
    ``activation`` (one of :data:`ACTIVATIONS`) applied to the float32 accumulator before the
    one rounding to ``out``'s dtype, so a Linear layer is one launch. With ``accumulate`` the result is
    added to what ``out`` holds (``out += ...``, torch's ``addmm_``), in float32 before that rounding:
    a float32 ``out`` sums a chunked product's partial products (a weight gradient over row chunks)
    without a temporary of its size.
    """
    plan = matmul_plan(a, b, out, bias=bias, activation=activation, allow_tf32=allow_tf32, accumulate=accumulate)
    if plan is None:  # K == 0 without an epilogue: the product is zeros
        fill(out, 0, stream=stream)
        return
    plan(a.ptr, b.ptr, out.ptr, out.ptr if bias is None else bias.ptr, stream)


def matmul_plan(
    a: BufferLike,
    b: BufferLike,
    out: BufferLike,
    *,
    bias: BufferLike | None = None,
    activation: str = "none",
    allow_tf32: bool = False,
    config: MatmulConfig | None = None,
    accumulate: bool = False,
) -> MatmulPlan | None:
    """The launch of ``matmul(a, b, out, ...)`` for these buffers' layouts, resolved once and cached:
    ``plan(a.ptr, b.ptr, out.ptr, bias.ptr (out.ptr without a bias), stream)`` runs it on any buffers of
    the same dtypes, shapes and strides whose pointers have the same 16-byte alignment. None where the
    product is all zeros (K == 0, no bias, no activation): ``fill`` the output instead.

    ``config`` overrides the automatic choice of kernel and configuration (for sweeps, tests, and callers
    that know their product better, e.g. a recurrent step's :func:`latency_config`): a
    :class:`PointerConfig` takes the pointer kernel, a :class:`TmaConfig` the TMA kernel (ValueError where
    the operands' dtypes or layouts rule it out). None: chosen by shape.
    """
    key = (
        a.dtype,
        b.dtype,
        out.dtype,
        a.shape,
        a.strides,
        b.shape,
        b.strides,
        out.shape,
        out.strides,
        a.ptr & 15,
        b.ptr & 15,
        out.ptr & 15,
        None if bias is None else (bias.dtype, bias.shape, bias.strides),
        activation,
        allow_tf32,
        config,
        accumulate,
    )
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(a, b, out, bias, activation, allow_tf32, config, accumulate)
        if plan is None:
            return None
        _PLANS.put(key, plan)
    return plan


def _plan(
    a: BufferLike,
    b: BufferLike,
    out: BufferLike,
    bias: BufferLike | None,
    activation: str,
    allow_tf32: bool,
    config: MatmulConfig | None = None,
    accumulate: bool = False,
) -> MatmulPlan | None:
    """Check the operands and choose the kernel, its configuration and its grid (see matmul_plan)."""
    if len(a.shape) != 3 or len(b.shape) != 3 or len(out.shape) != 3:
        raise ValueError("matmul takes rank-3 buffers (B, M, K) @ (B, K, N) -> (B, M, N)")
    B, M, K = a.shape
    if tuple(b.shape[:2]) != (B, K) or tuple(out.shape) != (B, M, b.shape[2]):
        raise ValueError(f"matmul shapes do not match: {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(out.shape)}")
    N = b.shape[2]
    if activation not in ACTIVATIONS:
        raise ValueError(f"matmul: unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    if bias is not None and (len(bias.shape) != 1 or bias.shape[0] != N):
        raise ValueError(f"matmul: bias must have shape ({N},), got {tuple(bias.shape)}")
    if B * M * N == 0:
        return _nothing
    if a.dtype != b.dtype or not dtype_info(a.dtype).is_float:
        raise TypeError(f"matmul needs matching float inputs, got {a.dtype} and {b.dtype}")
    if K == 0 and bias is None and activation == "none":
        return _nothing if accumulate else None  # out += 0, or out = 0
    tf32 = allow_tf32 and a.dtype == "float32"
    # A 16-bit product may be written straight to float32 (a weight gradient for a float32 master weight):
    # the accumulator is float32 either way, and the output's rounding is the epilogue's cast.
    tensor_cores = K > 0 and (a.dtype in ("float16", "bfloat16") or tf32) and out.dtype in (a.dtype, "float32")
    if isinstance(config, TmaConfig):
        plan = _matmul_tma(a, b, out, bias, activation, tf32, config, accumulate) if tensor_cores else None
        if plan is None:
            raise ValueError(
                f"matmul: {config} needs the TMA kernel, which cannot read {a.dtype} {tuple(a.shape)} strides "
                f"{tuple(a.strides)} @ {tuple(b.shape)} strides {tuple(b.strides)} (tf32={tf32})"
            )
        return plan
    if tensor_cores and config is None:
        plan = _matmul_tma(a, b, out, bias, activation, tf32, None, accumulate)
        if plan is not None:
            return plan
    return _matmul_pointers(a, b, out, bias, activation, tf32, config, accumulate)


def _bind(fn: LaunchFn, grid: tuple[int, int, int], tail: tuple) -> MatmulPlan:
    """A plan: ``fn`` launched on ``grid`` with the four pointers followed by ``tail`` (sizes, strides, constexprs)."""

    def plan(a: int, b: int, out: int, bias: int, stream: int) -> None:
        fn(grid, stream, (a, b, out, bias, *tail))

    return plan


def _matmul_tma(
    a: BufferLike,
    b: BufferLike,
    out: BufferLike,
    bias: BufferLike | None,
    act: str,
    tf32: bool,
    config: TmaConfig | None = None,
    accumulate: bool = False,
) -> MatmulPlan | None:
    """The persistent TMA kernel's plan (``config``, else chosen by shape), when the operands' layouts
    allow it; None when they do not."""
    B, M, K = a.shape
    N = b.shape[2]
    if K < 16 or (config is None and (M < 64 or N < 64)):  # small products: the pointer kernel wastes less
        return None
    if max(B, M, N, K) >= INT32_LIMIT:  # descriptor coordinates are 32-bit
        return None
    la, lb, lo = _tma_layout(a, M, K), _tma_layout(b, K, N), _tma_layout(out, M, N)
    if la is None or lb is None or lo is None or lo[0]:
        return None
    item = dtype_info(a.dtype).itemsize
    # tf32 tensor cores read both operands K-major only; other layouts go to the pointer kernel.
    if tf32 and (la[0] or not lb[0]):
        return None
    a_batches = B if a.strides[0] else 1
    b_batches = B if b.strides[0] else 1
    batched = B > 1
    if batched and b_batches == 1 and not la[0] and a.strides[0] == M * la[1] and out.strides[0] == M * lo[1]:
        # (B, M, K) rows contiguous across batches times one shared (K, N): one (B*M, K) product.
        M, B, batched, a_batches = M * B, 1, False, 1
    out_item = dtype_info(out.dtype).itemsize
    if accumulate and out_item != 4:  # (accumulating into 16 bits: the pointer kernel; see the stages below)
        return None
    cfg = _tma_config(item, M, N, K, batched, la[0], out_item) if config is None else config
    has_bias = bias is not None
    precision = "tf32" if tf32 else "ieee"
    if cfg.stream_k and not batched and not accumulate:  # (stream-K's fix-up pass does not accumulate)
        plan = _stream_k_plan(a, b, out, bias, act, precision, cfg, M, la, lb, lo)
        if plan is not None:
            return plan
    bm, bn, bk, warps, stages = cfg[:5]
    if accumulate and config is None:
        # The old tile's load is converted to the accumulator's layout through shared memory: one pipeline
        # stage fewer leaves room for it (a 128 x 128 float32 tile with four stages needs 256 KiB).
        stages = max(2, stages - 1)
    bias_dtype = bias.dtype if bias is not None else None
    key = (a.dtype, out.dtype, precision, la[0], lb[0], batched, has_bias, bias_dtype, act, bm, bn, bk, warps, stages,
           cfg.warp_specialize, accumulate)  # fmt: skip
    fn = _MATMUL_TMA.cache.get(key)
    if fn is None:
        types = {
            "a": ptr_type(a.dtype),
            "b": ptr_type(b.dtype),
            "out": ptr_type(out.dtype),
            "bias": ptr_type(bias.dtype if bias is not None else out.dtype),
            **{n: "i32" for n in ("M", "N", "K", "BATCH", "A_BATCHES", "B_BATCHES", "programs")},
            **{n: "i64" for n in ("sab", "sa", "sbb", "sb", "sob", "so", "sbias")},
        }
        consts = dict(
            PRECISION=precision,
            A_T=la[0],
            B_T=lb[0],
            BATCHED=batched,
            HAS_BIAS=has_bias,
            ACT=act,
            BM=bm,
            BN=bn,
            BK=bk,
            GROUP_M=8,
            STAGES=stages,
            WARP_SPECIALIZE=cfg.warp_specialize,
            ACCUMULATE=accumulate,
        )
        fn = _MATMUL_TMA.build(key, types, consts, ("a", "b", "out"), num_warps=warps, num_stages=stages)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    tiles = B * cdiv(M, bm) * cdiv(N, bn)
    programs = min(tiles, sm_count())
    # A batch that does not vary gets a nominal, aligned stride (TMA rejects 0; it is never stepped).
    sab = a.strides[0] if a_batches > 1 else (K if la[0] else M) * la[1]
    sbb = b.strides[0] if b_batches > 1 else (N if lb[0] else K) * lb[1]
    args = (
        M,
        N,
        K,
        B,
        a_batches,
        b_batches,
        sab,
        la[1],
        sbb,
        lb[1],
        out.strides[0] if batched else M * lo[1],
        lo[1],
        bias.strides[0] if bias is not None else 0,
        programs,
    )
    return _bind(fn, (programs, 1, 1), (*args, *fn._consts))  # type: ignore[attr-defined]


_SK_FAILED: set[tuple] = set()  # stream-K specialisations that did not compile or load (warned once each)


def _stream_k_plan(
    a: BufferLike,
    b: BufferLike,
    out: BufferLike,
    bias: BufferLike | None,
    act: str,
    precision: str,
    cfg: TmaConfig,
    M: int,
    la: tuple[bool, int],
    lb: tuple[bool, int],
    lo: tuple[bool, int],
) -> MatmulPlan | None:
    """The stream-K plan of a 2-D product (M rows, possibly batches folded into them): the TMA kernel
    with balanced K ranges, then the fix-up pass. None where it does not apply (the caller takes the
    data-parallel kernel), including a specialisation that failed to build (warned once)."""
    K = a.shape[2]
    N = b.shape[2]
    bm, bn, bk = cfg[:3]
    sms = sm_count()
    tiles = cdiv(M, bm) * cdiv(N, bn)
    k_tiles = cdiv(K, bk)
    # Whole waves but the last one or two go data-parallel; the rest (between one and two waves'
    # worth of tiles, or all of them when there are fewer) is balanced over the programs.
    programs = sms
    dp_tiles = max(tiles // programs - 1, 0) * programs
    sk_iters = (tiles - dp_tiles) * k_tiles
    if sk_iters < programs * _SK_MIN_ITERS:  # only when dp_tiles == 0: fewer, fuller programs
        programs = max(1, sk_iters // _SK_MIN_ITERS)
    if programs * sk_iters >= INT32_LIMIT:  # the kernels' range arithmetic is 32-bit
        return None
    has_bias = bias is not None
    bias_dtype = bias.dtype if bias is not None else None
    key = (a.dtype, out.dtype, precision, la[0], lb[0], has_bias, bias_dtype, act, *cfg[:5], cfg.warp_specialize)
    if key in _SK_FAILED:
        return None
    fn = _MATMUL_TMA_SK.cache.get(key)
    fix_key = (out.dtype, has_bias, bias_dtype, act, bm, bn, bk)
    fix = _SK_FIXUP.cache.get(fix_key)
    if fn is None or fix is None:
        try:
            fn, fix = _build_stream_k(key, fix_key, a, out, bias, act, precision, cfg, la[0], lb[0])
        except Exception as exc:  # a compiler or resource failure: the data-parallel kernel still works
            import warnings

            _SK_FAILED.add(key)
            warnings.warn(
                f"genesis_kernels.matmul: the stream-K kernel for {cfg} ({a.dtype}, A_T={la[0]}, B_T={lb[0]}) "
                f"failed to build ({type(exc).__name__}: {str(exc)[:200]}); using the data-parallel kernel",
                RuntimeWarning,
                stacklevel=4,
            )
            return None
    sub = fix._sub  # type: ignore[attr-defined]
    sbias = bias.strides[0] if bias is not None else 0
    # The partials: two bm x bn float32 slots per program, placed past the global scratch the main
    # kernel's launch takes from the same stream scratch (its device-side tensor descriptors).
    reserve = cdiv(programs * getattr(fn, "global_scratch", 0), 256) * 256
    ws_bytes = reserve + 2 * programs * bm * bn * 4
    main_tail = (M, N, K, la[1], lb[1], lo[1], sbias, programs, dp_tiles, sk_iters, *fn._consts)  # type: ignore[attr-defined]
    fix_tail = (M, N, K, lo[1], sbias, programs, dp_tiles, sk_iters, *fix._consts)  # type: ignore[attr-defined]
    grid = (programs, 1, 1)
    fix_grid = (tiles - dp_tiles, bm // sub, 1)

    def plan(a_ptr: int, b_ptr: int, out_ptr: int, bias_ptr: int, stream: int) -> None:
        ws = rt.scratch(ws_bytes, stream) + reserve
        fn(grid, stream, (a_ptr, b_ptr, out_ptr, bias_ptr, ws, *main_tail))
        fix(fix_grid, stream, (ws, out_ptr, bias_ptr, *fix_tail))

    return plan


def _build_stream_k(
    key: tuple,
    fix_key: tuple,
    a: BufferLike,
    out: BufferLike,
    bias: BufferLike | None,
    act: str,
    precision: str,
    cfg: TmaConfig,
    a_t: bool,
    b_t: bool,
) -> tuple[LaunchFn, LaunchFn]:
    """Compile (or fetch) the stream-K kernel and its fix-up pass."""
    bm, bn, bk, warps, stages = cfg[:5]
    has_bias = bias is not None
    bias_ptr = ptr_type(bias.dtype if bias is not None else out.dtype)
    fn = _MATMUL_TMA_SK.cache.get(key)
    if fn is None:
        types = {
            "a": ptr_type(a.dtype),
            "b": ptr_type(a.dtype),
            "out": ptr_type(out.dtype),
            "bias": bias_ptr,
            "ws": "*fp32",
            **{n: "i32" for n in ("M", "N", "K", "programs", "dp_tiles", "sk_iters")},
            **{n: "i64" for n in ("sa", "sb", "so", "sbias")},
        }
        consts = dict(
            PRECISION=precision,
            A_T=a_t,
            B_T=b_t,
            HAS_BIAS=has_bias,
            ACT=act,
            BM=bm,
            BN=bn,
            BK=bk,
            GROUP_M=8,
            STAGES=stages,
            WARP_SPECIALIZE=cfg.warp_specialize,
        )
        fn = _MATMUL_TMA_SK.build(key, types, consts, ("a", "b", "out", "ws"), num_warps=warps, num_stages=stages)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fix = _SK_FIXUP.cache.get(fix_key)
    if fix is None:
        sub = min(32, bm)
        types = {
            "ws": "*fp32",
            "out": ptr_type(out.dtype),
            "bias": bias_ptr,
            **{n: "i32" for n in ("M", "N", "K", "programs", "dp_tiles", "sk_iters")},
            **{n: "i64" for n in ("so", "sbias")},
        }
        consts = dict(HAS_BIAS=has_bias, ACT=act, BM=bm, BN=bn, BK=bk, GROUP_M=8, SUB=sub)
        fix = _SK_FIXUP.build(fix_key, types, consts, ("ws", "out"), num_warps=4, num_stages=1)
        fix._consts = tuple(consts.values())  # type: ignore[attr-defined]
        fix._sub = sub  # type: ignore[attr-defined]
    return fn, fix


def _matmul_pointers(
    a: BufferLike,
    b: BufferLike,
    out: BufferLike,
    bias: BufferLike | None,
    act: str,
    tf32: bool,
    config: PointerConfig | None = None,
    accumulate: bool = False,
) -> MatmulPlan:
    """The tiled pointer kernel's plan (``config``, else chosen by shape): any strides, every float dtype,
    exact float32 / float64."""
    B, M, K = a.shape
    N = b.shape[2]
    acc = "float64" if a.dtype == "float64" else "float32"
    precision = "tf32" if tf32 else "ieee"
    if config is None:
        bm, bn, bk, warps, stages = _config(a.dtype, tf32, M, N, max(K, 1))
        split, k_per = _split_k(B, M, N, K, bm, bn, bk)
    else:
        bm, bn, bk, warps, stages = _clamped(config, M, N, max(K, 1))
        split, k_per = _slices(B, M, N, K, bk, config.split)
    big = max(extent(tuple(t.shape), tuple(t.strides)) for t in (a, b, out)) >= INT32_LIMIT - 65536
    a_k = a.strides[2] == 1
    b_n = b.strides[2] == 1
    o_n = out.strides[2] == 1
    has_bias = bias is not None
    # Divisibility by 16 of the pointers and of the row/batch strides is part of the key: with it
    # the compiler can prove each row of a tile starts 16-byte aligned and use vector (and async) copies.
    strides = dict(
        zip(("sab", "sam", "sak", "sbb", "sbk", "sbn", "sob", "som", "son"), (*a.strides, *b.strides, *out.strides))
    )
    aligned = tuple(
        [n for n, t in (("a", a), ("b", b), ("out", out)) if t.ptr % 16 == 0]
        + [n for n in ("sab", "sam", "sbb", "sbk", "sob", "som") if strides[n] % 16 == 0]
    )
    bias_dtype = bias.dtype if bias is not None else None
    key = (a.dtype, out.dtype, precision, big, a_k, b_n, o_n, bm, bn, bk, warps, stages, aligned, has_bias, act,
           bias_dtype, split, accumulate)  # fmt: skip
    fn = _MATMUL.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "a": ptr_type(a.dtype),
            "b": ptr_type(b.dtype),
            "out": ptr_type(out.dtype),
            "bias": ptr_type(bias.dtype if bias is not None else out.dtype),
            "ws": ptr_type(acc),
            **{n: it for n in ("M", "N", "K", "sab", "sam", "sak", "sbb", "sbk", "sbn", "sob", "som", "son")},
            **{n: it for n in ("sbias", "k_per")},
        }
        consts = dict(
            ACC=dtype_info(acc).tl,
            PRECISION=precision,
            INT64=big,
            A_K_CONTIG=a_k,
            B_N_CONTIG=b_n,
            O_N_CONTIG=o_n,
            HAS_BIAS=has_bias,
            ACT=act,
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=8,
            SPLIT=split,
            ACCUMULATE=accumulate,
        )
        fn = _MATMUL.build(key, types, consts, aligned, num_warps=warps, num_stages=stages)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    sbias = bias.strides[0] if bias is not None else 0
    args = (M, N, K, *a.strides, *b.strides, *out.strides, sbias)
    if split == 1:
        return _bind(fn, (cdiv(M, bm) * cdiv(N, bn), B, 1), (*args, 0, K, *fn._consts))  # type: ignore[attr-defined]
    grid = (cdiv(M, bm) * cdiv(N, bn), B, split)
    return _split_plan(fn, grid, a, b, out, bias, act, acc, k_per, args, big, accumulate)


# Split-K: a product whose output tiles cannot fill the chip (a batch of 64 rows times a square
# weight: 16 tiles for 132 SMs) splits K over several programs per tile, each writing a float32
# partial; a second small kernel sums them. It pays only while a tile's K loop is long enough to
# hide the extra pass: each slice keeps at least _MIN_SLICE_TILES of BLOCK_K.
_MIN_SLICE_TILES = 4
_MAX_SPLIT = 16


def _split_k(B: int, M: int, N: int, K: int, bm: int, bn: int, bk: int) -> tuple[int, int]:
    """(number of K slices, K per slice); (1, K) when the tiles alone fill half of the SMs or K is short."""
    programs = B * cdiv(M, bm) * cdiv(N, bn)
    sms = sm_count()
    if 2 * programs > sms or K < 2 * _MIN_SLICE_TILES * bk:
        return 1, K
    split = min(cdiv(sms, programs), K // (_MIN_SLICE_TILES * bk), _MAX_SPLIT)
    if split < 2 or split * B * M * N >= INT32_LIMIT:
        return 1, K
    k_per = cdiv(cdiv(K, split), bk) * bk
    return cdiv(K, k_per), k_per


def _clamped(config: PointerConfig, M: int, N: int, K: int) -> tuple[int, int, int, int, int]:
    """A requested pointer configuration's (bm, bn, bk, warps, stages), tiles clamped to the product as
    ``_config`` clamps its own (tl.dot needs every tile dimension >= 16)."""
    for name, v in (("bm", config.bm), ("bn", config.bn), ("bk", config.bk)):
        if v < 16 or v & (v - 1):
            raise ValueError(f"matmul: {name} must be a power of two >= 16, got {v} in {config}")
    if config.warps not in (1, 2, 4, 8, 16) or config.stages < 1 or config.split < 1:
        raise ValueError(f"matmul: bad warps, stages or split in {config}")
    bm = max(16, min(config.bm, next_pow2(M)))
    bn = max(16, min(config.bn, next_pow2(N)))
    bk = max(16, min(config.bk, next_pow2(K)))
    return bm, bn, bk, config.warps, config.stages


def _slices(B: int, M: int, N: int, K: int, bk: int, split: int) -> tuple[int, int]:
    """(K slices, K per slice) for a requested ``split``: whole K steps per slice, at most one slice per
    step, and none where the partials would pass 32-bit offsets."""
    split = min(split, max(1, K // bk))
    if split < 2 or split * B * M * N >= INT32_LIMIT:
        return 1, K
    k_per = cdiv(cdiv(K, split), bk) * bk
    return cdiv(K, k_per), k_per


def _split_plan(
    fn: LaunchFn,
    grid: tuple[int, int, int],
    a: BufferLike,
    b: BufferLike,
    out: BufferLike,
    bias: BufferLike | None,
    act: str,
    acc: str,
    k_per: int,
    args: tuple,
    big: bool,
    accumulate: bool = False,
) -> MatmulPlan:
    """Both passes of a split-K product; the partials live in the stream's scratch (a graph's own
    block under capture), which stream order keeps valid from the first pass to the second."""
    B, M, _ = a.shape
    N = b.shape[2]
    split = grid[2]
    total = B * M * N
    ws_bytes = split * total * dtype_info(acc).itemsize
    has_bias = bias is not None
    key = (acc, out.dtype, has_bias, bias.dtype if bias is not None else None, act, split, big, accumulate)
    red = _SPLIT_SUM.cache.get(key)
    if red is None:
        it = "i64" if big else "i32"
        types = {
            "ws": ptr_type(acc),
            "out": ptr_type(out.dtype),
            "bias": ptr_type(bias.dtype if bias is not None else out.dtype),
            **{n: it for n in ("M", "N", "total", "sob", "som", "son", "sbias")},
        }
        consts = dict(SPLIT=split, HAS_BIAS=has_bias, ACT=act, INT64=big, BLOCK=1024, ACCUMULATE=accumulate)
        red = _SPLIT_SUM.build(key, types, consts, num_warps=4, num_stages=1)
        red._consts = tuple(consts.values())  # type: ignore[attr-defined]
    red_grid = (cdiv(total, 1024), 1, 1)
    sob, som, son = out.strides
    sbias = bias.strides[0] if bias is not None else 0
    consts = fn._consts  # type: ignore[attr-defined]
    second = (M, N, total, sob, som, son, sbias, *red._consts)  # type: ignore[attr-defined]

    def plan(a_ptr: int, b_ptr: int, out_ptr: int, bias_ptr: int, stream: int) -> None:
        ws = rt.scratch(ws_bytes, stream)
        fn(grid, stream, (a_ptr, b_ptr, out_ptr, bias_ptr, *args, ws, k_per, *consts))
        red(red_grid, stream, (ws, out_ptr, bias_ptr, *second))

    return plan
