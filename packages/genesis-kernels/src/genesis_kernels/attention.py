"""Flash attention: softmax(Q K^T * scale + mask) V without materialising the scores, forward and backward.

Layout (B, H, L, D) with any strides (a transposed (B, L, H, D) tensor is read in place). Key / value
heads may be fewer than query heads (GQA / MQA): query head ``h`` reads kv head ``h // (Hq // Hkv)``.
Head dims up to 256 are padded to the next power of two (at least 16) with masked loads.

Forward: one program per (query block, batch * head); it streams the key / value blocks with the online
softmax (running max ``m`` and sum ``l`` in base 2, so every exponential is an ``exp2``), then writes the
output and the per-row logsumexp ``lse`` (fp32, natural log). Fully masked rows (and Lk == 0) give zeros
with ``lse = +inf``, so the backward's ``exp(s - lse)`` is 0 there instead of NaN.

The hot case (fp16 / bf16, no mask, no dropout, head dim 64 or 128, 16-byte aligned buffers with a unit
head-dim stride) takes a second forward kernel, _attn_fwd_tma_kernel: the same blocks, masks and results,
with Q, K, V and O moved by Hopper's tensor-memory accelerator through descriptors built on the device
(Triton's global scratch, served by the launcher as for matmul) instead of per-thread pointer loads.

Decode (few queries, long KV): the pointer kernel with ``SPLIT``: the KV sequence is cut in chunks over a
third grid axis, each program writes its unnormalised partial (acc, m, l) to scratch and a small kernel
combines them (flash-decoding), so a handful of query rows still fills the GPU.

Backward (P recomputed from Q, K and lse; no atomics): ``delta = rowsum(dO * O)``; a dK / dV kernel, one
program per key block and kv head, loops over every query head of its group and every query block; a dQ
kernel, one program per query block, loops over the key blocks. The hot case takes TMA versions of both
(_attn_bwd_dkdv_tma_kernel, _attn_bwd_dq_tma_kernel): the same blocks, masks, order and results, Q, K, V and
dO (and the gradients' stores) through device-built descriptors, which frees the registers for 128-key
dK / dV tiles; lse and delta stay plain loads.

Causal: key ``j`` is visible from query ``i`` when ``j <= i`` (torch's top-left alignment). Loops run the
blocks that need no causal / bounds mask apart from the (few) diagonal and ragged-edge blocks; blocks wholly
above the diagonal are never visited. The forward and dQ programs of a causal launch run longest first (the
last query blocks), so the short ones fill the tail; dK / dV's first key blocks are already its longest.

Tiles: (BLOCK_M, BLOCK_N, num_warps, num_stages) per kernel and padded head dim in _FWD_CONFIGS,
_DKDV_CONFIGS, _DQ_CONFIGS (module tables, read at each launch: benchmarks/sweep_attention.py patches
them); the TMA forward's in _FWD_TMA_CONFIGS (plus warp_specialize), switched by _FWD_TMA
(benchmarks/sweep_attention_tma.py); the TMA backward's in _DKDV_TMA_CONFIGS and _DQ_TMA_CONFIGS, switched
by _BWD_TMA (benchmarks/sweep_attention_bwd_tma.py). Every 16-divisible stride, pointer and head dim is
declared so to the compiler: without that the tiles load element by element and Triton does not pipeline
them (cp.async) at all.
Dropout: element (b, h, i, j) keeps when Philox uniform at counter ``offset + ((b*Hq + h)*Lq + i)*Lk + j``
under ``seed`` is >= p (the random family's convention), so the backward regenerates the same mask.
fp32 inputs use IEEE fp32 dots (no tf32); accumulation is fp32 throughout.
"""

from __future__ import annotations

import triton
import triton.language as tl

from . import runtime
from .buffer import INT32_LIMIT, BufferLike, dtype_info
from .launch_abi import Grid, LaunchFn
from .random import _philox, philox_state
from .runtime import INTERPRET, Kernel, cdiv, next_pow2, ptr_type, sm_count

_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
MAX_HEAD_DIM = 256
DECODE_MAX_LQ = 16  # at most this many queries and ...
DECODE_MIN_LK = 512  # ... at least this many keys: the split-KV (flash-decoding) path


# The interpreter's dot reads bfloat16 storage as integers; upcast there (exact, same products).
_UPCAST_HALF_DOT = tl.constexpr(INTERPRET)


@triton.jit
def _dot(a, b, acc, PREC: tl.constexpr):
    if _UPCAST_HALF_DOT and (a.dtype == tl.bfloat16 or a.dtype == tl.float16):
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        return tl.dot(a, b, acc, input_precision=PREC)


@triton.jit
def _keep(seed, ctr, drop_p):
    r0, _, _, _ = _philox(seed, ctr)
    return tl.random.uint_to_uniform_float(r0) >= drop_p


@triton.jit
def _fwd_step(
    acc, m_i, l_i, q, k_base, v_base, mask_base, start_n, offs_m, offs_n, offs_d, skn, skd, svn, svd, smm, smn,
    Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_row, CAUSAL_MASK: tl.constexpr, BOUND_N: tl.constexpr,
    MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, GUARD: tl.constexpr, EVEN_D: tl.constexpr,
    PREC: tl.constexpr, RAW_MAX: tl.constexpr,
):  # fmt: skip
    n = start_n + offs_n
    kt_ptrs = k_base + offs_d[:, None] * skd + n[None, :] * skn
    v_ptrs = v_base + n[:, None] * svn + offs_d[None, :] * svd
    if BOUND_N:
        if EVEN_D:
            kt = tl.load(kt_ptrs, mask=(n < Lk)[None, :], other=0.0)
            v = tl.load(v_ptrs, mask=(n < Lk)[:, None], other=0.0)
        else:
            kt = tl.load(kt_ptrs, mask=(n < Lk)[None, :] & (offs_d < D)[:, None], other=0.0)
            v = tl.load(v_ptrs, mask=(n < Lk)[:, None] & (offs_d < D)[None, :], other=0.0)
    else:
        if EVEN_D:
            kt = tl.load(kt_ptrs)
            v = tl.load(v_ptrs)
        else:
            kt = tl.load(kt_ptrs, mask=(offs_d < D)[:, None], other=0.0)
            v = tl.load(v_ptrs, mask=(offs_d < D)[None, :], other=0.0)
    # RAW_MAX (a positive scale, no float mask): the row max is taken over the raw products and the scale
    # applied inside exp2's argument, s * qk_scale - m, one FMA per element instead of a multiply and a subtract.
    if RAW_MAX:
        s = _dot(q, kt, None, PREC)
    else:
        s = _dot(q, kt, None, PREC) * qk_scale  # base-2 logits
    if MASK_KIND != 0:
        mk = (offs_m < Lq)[:, None] & (n < Lk)[None, :]
        mv = tl.load(mask_base + offs_m[:, None] * smm + n[None, :] * smn, mask=mk, other=0)
        if MASK_KIND == 1:
            s = tl.where(mv != 0, s, float("-inf"))
        else:
            s += mv.to(tl.float32) * 1.4426950408889634
    if CAUSAL_MASK:
        s = tl.where(n[None, :] <= offs_m[:, None], s, float("-inf"))
    if BOUND_N:
        s = tl.where((n < Lk)[None, :], s, float("-inf"))
    if RAW_MAX:
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
    else:
        m_new = tl.maximum(m_i, tl.max(s, 1))
    if GUARD:  # a row with nothing visible yet: keep exp2 away from (-inf) - (-inf)
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    else:
        m_use = m_new
    if RAW_MAX:
        p = tl.math.exp2(s * qk_scale - m_use[:, None])
    else:
        p = tl.math.exp2(s - m_use[:, None])
    alpha = tl.math.exp2(m_i - m_use)
    l_i = l_i * alpha + tl.sum(p, 1)
    if DROPOUT:  # the softmax statistics see every weight; only the product with V is dropped
        keep = _keep(seed, rng_row[:, None] + n[None, :], drop_p)
        p = tl.where(keep, p * drop_scale, 0.0)
    acc = acc * alpha[:, None]
    acc = _dot(p.to(v.dtype), v, acc, PREC)
    return acc, m_new, l_i


@triton.jit
def _attn_fwd_kernel(
    q, k, v, o, lse, mask, part, sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, som,
    sod, smb, smh, smm, smn, Hq, GROUP, Lq, Lk, D, chunk, qk_scale, drop_p, drop_scale, seed, offset, rng,
    CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, SEED_PTR: tl.constexpr, SPLIT: tl.constexpr,
    GUARD: tl.constexpr, EVEN_D: tl.constexpr, UNIT_D: tl.constexpr, PREC: tl.constexpr, RAW_MAX: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    if UNIT_D:  # a unit head-dim stride, known at compile time: tiles load as 16-byte vectors
        sqd = 1
        skd = 1
        svd = 1
        sod = 1
    if CAUSAL and not SPLIT:  # causal rows' work grows with the block index: launch the longest first
        start_m = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M
    else:
        start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = (bh // Hq).to(tl.int64)
    h = (bh % Hq).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q_ptrs = q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd
    if EVEN_D:
        qt = tl.load(q_ptrs, mask=(offs_m < Lq)[:, None], other=0.0)
    else:
        qt = tl.load(q_ptrs, mask=(offs_m < Lq)[:, None] & (offs_d < D)[None, :], other=0.0)
    k_base = k + b * skb + hk * skh
    v_base = v + b * svb + hk * svh
    if MASK_KIND != 0:
        mask_base = mask + b * smb + h * smh
    else:
        mask_base = mask
    seed, offset = philox_state(rng, seed, offset, SEED_PTR)
    rng_row = offset + (bh.to(tl.int64) * Lq + offs_m) * Lk

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    # [lo, full_hi): blocks every row sees whole and in bounds; [mid, hi): the diagonal / ragged edge.
    if CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, Lk)
        full_hi = tl.minimum(start_m, Lk) // BLOCK_N * BLOCK_N
    else:
        hi = Lk
        full_hi = Lk // BLOCK_N * BLOCK_N
    lo = 0
    if SPLIT:
        lo = tl.program_id(2) * chunk
        hi = tl.minimum(hi, lo + chunk)
        full_hi = tl.minimum(full_hi, lo + chunk)
    mid = tl.maximum(full_hi, lo)
    for start_n in range(lo, full_hi, BLOCK_N):
        acc, m_i, l_i = _fwd_step(
            acc, m_i, l_i, qt, k_base, v_base, mask_base, start_n, offs_m, offs_n, offs_d,
            skn, skd, svn, svd, smm, smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_row,
            False, False, MASK_KIND, DROPOUT, GUARD, EVEN_D, PREC, RAW_MAX,
        )  # fmt: skip
    for start_n in range(mid, hi, BLOCK_N):
        acc, m_i, l_i = _fwd_step(
            acc, m_i, l_i, qt, k_base, v_base, mask_base, start_n, offs_m, offs_n, offs_d,
            skn, skd, svn, svd, smm, smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_row,
            CAUSAL, True, MASK_KIND, DROPOUT, True, EVEN_D, PREC, RAW_MAX,
        )  # fmt: skip

    row_ok = offs_m < Lq
    if SPLIT:  # partials: acc (S, BH, Lq, BLOCK_D), then m and l (S, BH, Lq), all fp32
        rows = (tl.program_id(2) * tl.num_programs(1) + bh).to(tl.int64) * Lq + offs_m
        n_rows = tl.num_programs(2).to(tl.int64) * tl.num_programs(1) * Lq
        tl.store(part + rows[:, None] * BLOCK_D + offs_d[None, :], acc, mask=row_ok[:, None])
        tl.store(part + n_rows * BLOCK_D + rows, m_i, mask=row_ok)
        tl.store(part + n_rows * (BLOCK_D + 1) + rows, l_i, mask=row_ok)
    else:
        dead = l_i == 0.0
        out = acc / tl.where(dead, 1.0, l_i)[:, None]
        o_ptrs = o + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod
        if EVEN_D:
            tl.store(o_ptrs, out.to(o.dtype.element_ty), mask=row_ok[:, None])
        else:
            tl.store(o_ptrs, out.to(o.dtype.element_ty), mask=row_ok[:, None] & (offs_d < D)[None, :])
        row_lse = tl.where(dead, float("inf"), (m_i + tl.math.log2(tl.where(dead, 1.0, l_i))) * 0.6931471805599453)
        tl.store(lse + bh.to(tl.int64) * Lq + offs_m, row_lse, mask=row_ok)


@triton.jit
def _fwd_tma_step(
    acc, m_i, l_i, q, k_desc, v_desc, b, hk, start_n, offs_m, offs_n, Lk, qk_scale, CAUSAL_MASK: tl.constexpr,
    BOUND_N: tl.constexpr, RAW_MAX: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    # One key block through the descriptors: rows past Lk (this head's end) read as zeros, so only the
    # scores need the bound. K^T is a transposed view of the shared-memory tile, never a copy.
    kt = k_desc.load([b, hk, start_n, 0]).reshape(BLOCK_N, BLOCK_D).T
    v = v_desc.load([b, hk, start_n, 0]).reshape(BLOCK_N, BLOCK_D)
    if RAW_MAX:  # as in _fwd_step: the scale folded into exp2's argument
        s = _dot(q, kt, None, None)
    else:
        s = _dot(q, kt, None, None) * qk_scale
    n = start_n + offs_n
    if CAUSAL_MASK:
        s = tl.where(n[None, :] <= offs_m[:, None], s, float("-inf"))
    if BOUND_N:
        s = tl.where((n < Lk)[None, :], s, float("-inf"))
    if RAW_MAX:
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
    else:
        m_new = tl.maximum(m_i, tl.max(s, 1))
    if CAUSAL_MASK or BOUND_N:  # a row with nothing visible yet: keep exp2 away from (-inf) - (-inf)
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    else:
        m_use = m_new
    if RAW_MAX:
        p = tl.math.exp2(s * qk_scale - m_use[:, None])
    else:
        p = tl.math.exp2(s - m_use[:, None])
    alpha = tl.math.exp2(m_i - m_use)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    acc = _dot(p.to(v.dtype), v, acc, None)
    return acc, m_new, l_i


@triton.jit
def _attn_fwd_tma_kernel(
    q, k, v, o, lse, sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sob, soh, som, B, Hq, Hkv, GROUP, Lq, Lk,
    qk_scale, CAUSAL: tl.constexpr, RAW_MAX: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
):  # fmt: skip
    """The forward's hot case (16-bit, no mask, no dropout, head dim 64 / 128) with Hopper's tensor-memory
    accelerator: Q, K, V and O move through tensor descriptors built on the device (their 128 bytes live in
    Triton's global scratch, which the launcher serves). One thread issues a whole tile's copy, which lands
    in shared memory already in the layout the tensor cores read, and out-of-bounds rows are zero-filled
    by the hardware; so the pointer kernel's per-thread address arithmetic and bounds masks, the registers
    they hold and the cp.async issue slots are gone, and the KV loop pipelines on mbarriers (or, where the
    compiler can, warp-specialises: a producer warp issuing the copies). Each descriptor is 4-D, (B, H, L, D) with the
    tensor's own strides, so any layout with a unit head-dim stride is read in place and a ragged last
    block never reads into the next head. Same blocks, masks, order and results as _attn_fwd_kernel."""
    if CAUSAL:  # causal rows' work grows with the block index: launch the longest first
        start_m = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M
    else:
        start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // Hq
    h = bh % Hq
    hk = h // GROUP
    # Descriptor coordinates are 32-bit element indices; the strides (in elements) are 64-bit.
    q_desc = tl.make_tensor_descriptor(q, [B, Hq, Lq, BLOCK_D], [sqb, sqh, sqm, 1], [1, 1, BLOCK_M, BLOCK_D])
    k_desc = tl.make_tensor_descriptor(k, [B, Hkv, Lk, BLOCK_D], [skb, skh, skn, 1], [1, 1, BLOCK_N, BLOCK_D])
    v_desc = tl.make_tensor_descriptor(v, [B, Hkv, Lk, BLOCK_D], [svb, svh, svn, 1], [1, 1, BLOCK_N, BLOCK_D])
    o_desc = tl.make_tensor_descriptor(o, [B, Hq, Lq, BLOCK_D], [sob, soh, som, 1], [1, 1, BLOCK_M, BLOCK_D])
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    qt = q_desc.load([b, h, start_m, 0]).reshape(BLOCK_M, BLOCK_D)  # rows past Lq: zeros

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    # [0, full_hi): blocks every row sees whole and in bounds; [full_hi, hi): the diagonal / ragged edge.
    if CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, Lk)
        full_hi = tl.minimum(start_m, Lk) // BLOCK_N * BLOCK_N
    else:
        hi = Lk
        full_hi = Lk // BLOCK_N * BLOCK_N
    # The long loop is the one worth a producer warp; the edge loop runs a block or two.
    for start_n in tl.range(0, full_hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        acc, m_i, l_i = _fwd_tma_step(
            acc, m_i, l_i, qt, k_desc, v_desc, b, hk, start_n, offs_m, offs_n, Lk, qk_scale,
            False, False, RAW_MAX, BLOCK_N, BLOCK_D,
        )  # fmt: skip
    for start_n in tl.range(full_hi, hi, BLOCK_N):
        acc, m_i, l_i = _fwd_tma_step(
            acc, m_i, l_i, qt, k_desc, v_desc, b, hk, start_n, offs_m, offs_n, Lk, qk_scale,
            CAUSAL, True, RAW_MAX, BLOCK_N, BLOCK_D,
        )  # fmt: skip

    dead = l_i == 0.0
    out = acc / tl.where(dead, 1.0, l_i)[:, None]
    # The store clips rows past Lq, as the load padded them.
    o_desc.store([b, h, start_m, 0], out.to(o.dtype.element_ty).reshape(1, 1, BLOCK_M, BLOCK_D))
    row_lse = tl.where(dead, float("inf"), (m_i + tl.math.log2(tl.where(dead, 1.0, l_i))) * 0.6931471805599453)
    tl.store(lse + bh.to(tl.int64) * Lq + offs_m, row_lse, mask=offs_m < Lq)


@triton.jit
def _decode_combine_kernel(
    part, o, lse, SPLITS, Hq, Lq, D, sob, soh, som, sod, EVEN_D: tl.constexpr, BLOCK_S: tl.constexpr,
    BLOCK_D: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)  # bh * Lq + i
    n_bh_rows = tl.num_programs(0).to(tl.int64)
    bh = row // Lq
    i = row % Lq
    b = bh // Hq
    h = bh % Hq
    s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    s_ok = s < SPLITS
    rows = s * n_bh_rows + row
    n_rows = SPLITS * n_bh_rows
    m = tl.load(part + n_rows * BLOCK_D + rows, mask=s_ok, other=float("-inf"))
    ls = tl.load(part + n_rows * (BLOCK_D + 1) + rows, mask=s_ok, other=0.0)
    m_max = tl.max(m, 0)
    m_use = tl.where(m_max == float("-inf"), 0.0, m_max)
    w = tl.math.exp2(m - m_use)
    total = tl.sum(ls * w, 0)
    acc = tl.load(part + rows[:, None] * BLOCK_D + offs_d[None, :], mask=s_ok[:, None], other=0.0)
    dead = total == 0.0
    out = tl.sum(acc * w[:, None], 0) / tl.where(dead, 1.0, total)
    o_ptrs = o + b * sob + h * soh + i * som + offs_d * sod
    if EVEN_D:
        tl.store(o_ptrs, out.to(o.dtype.element_ty))
    else:
        tl.store(o_ptrs, out.to(o.dtype.element_ty), mask=offs_d < D)
    row_lse = tl.where(dead, float("inf"), (m_max + tl.math.log2(tl.where(dead, 1.0, total))) * 0.6931471805599453)
    tl.store(lse + row, row_lse)


@triton.jit
def _bwd_delta_kernel(
    o, do, delta, Hq, Lq, D, sob, soh, som, sod, sgb, sgh, sgm, sgd, EVEN_D: tl.constexpr, UNIT_D: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    if UNIT_D:  # 16-byte vector loads
        sod = 1
        sgd = 1
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    bh = tl.program_id(1)
    b = (bh // Hq).to(tl.int64)
    h = (bh % Hq).to(tl.int64)
    offs_d = tl.arange(0, BLOCK_D)
    if EVEN_D:
        mk = (offs_m < Lq)[:, None]
    else:
        mk = (offs_m < Lq)[:, None] & (offs_d < D)[None, :]
    ov = tl.load(o + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod, mask=mk, other=0.0)
    gv = tl.load(do + b * sgb + h * sgh + offs_m[:, None] * sgm + offs_d[None, :] * sgd, mask=mk, other=0.0)
    d = tl.sum(ov.to(tl.float32) * gv.to(tl.float32), 1)
    tl.store(delta + bh.to(tl.int64) * Lq + offs_m, d, mask=offs_m < Lq)


@triton.jit
def _dkdv_step(
    dk, dv, kb, vb, q_base, do_base, lse_base, delta_base, mask_base, start_m, offs_n, offs_d, sqm, sqd, sgm,
    sgd, smm, smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_base, CAUSAL_MASK: tl.constexpr,
    MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, EVEN_D: tl.constexpr, PREC: tl.constexpr,
    BLOCK_M: tl.constexpr,
):  # fmt: skip
    # Transposed: rows are this program's keys, columns the query block, so P^T needs no transpose.
    offs_m = start_m + tl.arange(0, BLOCK_M)
    row_ok = offs_m < Lq
    if EVEN_D:
        qt = tl.load(q_base + offs_d[:, None] * sqd + offs_m[None, :] * sqm, mask=row_ok[None, :], other=0.0)
        g = tl.load(do_base + offs_m[:, None] * sgm + offs_d[None, :] * sgd, mask=row_ok[:, None], other=0.0)
    else:
        qt = tl.load(
            q_base + offs_d[:, None] * sqd + offs_m[None, :] * sqm,
            mask=row_ok[None, :] & (offs_d < D)[:, None],
            other=0.0,
        )
        g = tl.load(
            do_base + offs_m[:, None] * sgm + offs_d[None, :] * sgd,
            mask=row_ok[:, None] & (offs_d < D)[None, :],
            other=0.0,
        )
    # Rows past Lq: lse +inf makes their weights exactly 0.
    lse2 = tl.load(lse_base + offs_m, mask=row_ok, other=float("inf")) * 1.4426950408889634
    st = _dot(kb, qt, None, PREC) * qk_scale
    if MASK_KIND != 0:
        mk = row_ok[None, :] & (offs_n < Lk)[:, None]
        mv = tl.load(mask_base + offs_m[None, :] * smm + offs_n[:, None] * smn, mask=mk, other=0)
        if MASK_KIND == 1:
            st = tl.where(mv != 0, st, float("-inf"))
        else:
            st += mv.to(tl.float32) * 1.4426950408889634
    if CAUSAL_MASK:
        st = tl.where(offs_m[None, :] >= offs_n[:, None], st, float("-inf"))
    pt = tl.math.exp2(st - lse2[None, :])
    dpt = _dot(vb, tl.trans(g), None, PREC)
    if DROPOUT:
        keep = _keep(seed, rng_base + offs_m[None, :].to(tl.int64) * Lk + offs_n[:, None], drop_p)
        zt = tl.where(keep, drop_scale, 0.0)
        dv = _dot((pt * zt).to(g.dtype), g, dv, PREC)
        dpt = dpt * zt
    else:
        dv = _dot(pt.to(g.dtype), g, dv, PREC)
    dl = tl.load(delta_base + offs_m, mask=row_ok, other=0.0)
    dst = pt * (dpt - dl[None, :])
    dk = _dot(dst.to(qt.dtype), tl.trans(qt), dk, PREC)
    return dk, dv


@triton.jit
def _attn_bwd_dkdv_kernel(
    q, k, v, do, lse, delta, mask, dk, dv, sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sgb,
    sgh, sgm, sgd, smb, smh, smm, smn, skb2, skh2, skn2, skd2, svb2, svh2, svn2, svd2, Hq, Hkv, GROUP, Lq, Lk,
    D, qk_scale, sm_scale, drop_p, drop_scale, seed, offset, rng, CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr,
    DROPOUT: tl.constexpr, SEED_PTR: tl.constexpr, EVEN_D: tl.constexpr, UNIT_D: tl.constexpr, PREC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    if UNIT_D:
        sqd = 1
        skd = 1
        svd = 1
        sgd = 1
        skd2 = 1
        svd2 = 1
    start_n = tl.program_id(0) * BLOCK_N
    bhk = tl.program_id(1)
    b = (bhk // Hkv).to(tl.int64)
    hk = (bhk % Hkv).to(tl.int64)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    if EVEN_D:
        kmask = (offs_n < Lk)[:, None]
    else:
        kmask = (offs_n < Lk)[:, None] & (offs_d < D)[None, :]
    kb = tl.load(k + b * skb + hk * skh + offs_n[:, None] * skn + offs_d[None, :] * skd, mask=kmask, other=0.0)
    vb = tl.load(v + b * svb + hk * svh + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=kmask, other=0.0)
    dkacc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dvacc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    if CAUSAL:  # query blocks before m_lo see none of these keys; from m_mid on they see all of them
        m_lo = start_n // BLOCK_M * BLOCK_M
        m_mid = tl.minimum(tl.cdiv(start_n + BLOCK_N, BLOCK_M) * BLOCK_M, tl.cdiv(Lq, BLOCK_M) * BLOCK_M)
    else:
        m_lo = 0
        m_mid = 0
    seed, offset = philox_state(rng, seed, offset, SEED_PTR)
    for gi in range(0, GROUP):  # every query head that shares this kv head: dK, dV summed over the group
        h = hk * GROUP + gi
        bh = b * Hq + h
        q_base = q + b * sqb + h * sqh
        do_base = do + b * sgb + h * sgh
        lse_base = lse + bh * Lq
        delta_base = delta + bh * Lq
        if MASK_KIND != 0:
            mask_base = mask + b * smb + h * smh
        else:
            mask_base = mask
        rng_base = offset + bh * Lq * Lk
        for start_m in range(m_lo, m_mid, BLOCK_M):
            dkacc, dvacc = _dkdv_step(
                dkacc, dvacc, kb, vb, q_base, do_base, lse_base, delta_base, mask_base, start_m, offs_n, offs_d,
                sqm, sqd, sgm, sgd, smm, smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_base,
                True, MASK_KIND, DROPOUT, EVEN_D, PREC, BLOCK_M,
            )  # fmt: skip
        for start_m in range(m_mid, Lq, BLOCK_M):
            dkacc, dvacc = _dkdv_step(
                dkacc, dvacc, kb, vb, q_base, do_base, lse_base, delta_base, mask_base, start_m, offs_n, offs_d,
                sqm, sqd, sgm, sgd, smm, smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_base,
                False, MASK_KIND, DROPOUT, EVEN_D, PREC, BLOCK_M,
            )  # fmt: skip
    dkacc = dkacc * sm_scale
    dk_ptrs = dk + b * skb2 + hk * skh2 + offs_n[:, None] * skn2 + offs_d[None, :] * skd2
    dv_ptrs = dv + b * svb2 + hk * svh2 + offs_n[:, None] * svn2 + offs_d[None, :] * svd2
    tl.store(dk_ptrs, dkacc.to(dk.dtype.element_ty), mask=kmask)
    tl.store(dv_ptrs, dvacc.to(dv.dtype.element_ty), mask=kmask)


@triton.jit
def _dq_step(
    dq, qb, g, lse2, dl, k_base, v_base, mask_base, start_n, offs_m, offs_n, offs_d, skn, skd, svn, svd, smm,
    smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_row, CAUSAL_MASK: tl.constexpr,
    BOUND_N: tl.constexpr, MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr, EVEN_D: tl.constexpr,
    PREC: tl.constexpr,
):  # fmt: skip
    n = start_n + offs_n
    kt_ptrs = k_base + offs_d[:, None] * skd + n[None, :] * skn
    vt_ptrs = v_base + offs_d[:, None] * svd + n[None, :] * svn
    if BOUND_N:
        if EVEN_D:
            lm = (n < Lk)[None, :]
        else:
            lm = (n < Lk)[None, :] & (offs_d < D)[:, None]
        kt = tl.load(kt_ptrs, mask=lm, other=0.0)
        vt = tl.load(vt_ptrs, mask=lm, other=0.0)
    else:
        if EVEN_D:
            kt = tl.load(kt_ptrs)
            vt = tl.load(vt_ptrs)
        else:
            kt = tl.load(kt_ptrs, mask=(offs_d < D)[:, None], other=0.0)
            vt = tl.load(vt_ptrs, mask=(offs_d < D)[:, None], other=0.0)
    s = _dot(qb, kt, None, PREC) * qk_scale
    if MASK_KIND != 0:
        mk = (offs_m < Lq)[:, None] & (n < Lk)[None, :]
        mv = tl.load(mask_base + offs_m[:, None] * smm + n[None, :] * smn, mask=mk, other=0)
        if MASK_KIND == 1:
            s = tl.where(mv != 0, s, float("-inf"))
        else:
            s += mv.to(tl.float32) * 1.4426950408889634
    if CAUSAL_MASK:
        s = tl.where(n[None, :] <= offs_m[:, None], s, float("-inf"))
    if BOUND_N:
        s = tl.where((n < Lk)[None, :], s, float("-inf"))
    p = tl.math.exp2(s - lse2[:, None])
    dp = _dot(g, vt, None, PREC)
    if DROPOUT:
        keep = _keep(seed, rng_row[:, None] + n[None, :], drop_p)
        dp = tl.where(keep, dp * drop_scale, 0.0)
    ds = p * (dp - dl[:, None])
    dq = _dot(ds.to(kt.dtype), tl.trans(kt), dq, PREC)
    return dq


@triton.jit
def _attn_bwd_dq_kernel(
    q, k, v, do, lse, delta, mask, dq, sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sgb, sgh,
    sgm, sgd, smb, smh, smm, smn, sdb, sdh, sdm, sdd, Hq, GROUP, Lq, Lk, D, qk_scale, sm_scale, drop_p,
    drop_scale, seed, offset, rng, CAUSAL: tl.constexpr, MASK_KIND: tl.constexpr, DROPOUT: tl.constexpr,
    SEED_PTR: tl.constexpr, EVEN_D: tl.constexpr, UNIT_D: tl.constexpr, PREC: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    if UNIT_D:
        sqd = 1
        skd = 1
        svd = 1
        sgd = 1
        sdd = 1
    if CAUSAL:  # a query block's work grows with its index: launch the longest first
        start_m = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M
    else:
        start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = (bh // Hq).to(tl.int64)
    h = (bh % Hq).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < Lq
    if EVEN_D:
        rmask = row_ok[:, None]
    else:
        rmask = row_ok[:, None] & (offs_d < D)[None, :]
    qb = tl.load(q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd, mask=rmask, other=0.0)
    g = tl.load(do + b * sgb + h * sgh + offs_m[:, None] * sgm + offs_d[None, :] * sgd, mask=rmask, other=0.0)
    lse2 = tl.load(lse + bh.to(tl.int64) * Lq + offs_m, mask=row_ok, other=float("inf")) * 1.4426950408889634
    dl = tl.load(delta + bh.to(tl.int64) * Lq + offs_m, mask=row_ok, other=0.0)
    k_base = k + b * skb + hk * skh
    v_base = v + b * svb + hk * svh
    if MASK_KIND != 0:
        mask_base = mask + b * smb + h * smh
    else:
        mask_base = mask
    seed, offset = philox_state(rng, seed, offset, SEED_PTR)
    rng_row = offset + (bh.to(tl.int64) * Lq + offs_m) * Lk
    dqacc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    if CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, Lk)
        full_hi = tl.minimum(start_m, Lk) // BLOCK_N * BLOCK_N
    else:
        hi = Lk
        full_hi = Lk // BLOCK_N * BLOCK_N
    for start_n in range(0, full_hi, BLOCK_N):
        dqacc = _dq_step(
            dqacc, qb, g, lse2, dl, k_base, v_base, mask_base, start_n, offs_m, offs_n, offs_d,
            skn, skd, svn, svd, smm, smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_row,
            False, False, MASK_KIND, DROPOUT, EVEN_D, PREC,
        )  # fmt: skip
    for start_n in range(full_hi, hi, BLOCK_N):
        dqacc = _dq_step(
            dqacc, qb, g, lse2, dl, k_base, v_base, mask_base, start_n, offs_m, offs_n, offs_d,
            skn, skd, svn, svd, smm, smn, Lq, Lk, D, qk_scale, drop_p, drop_scale, seed, rng_row,
            CAUSAL, True, MASK_KIND, DROPOUT, EVEN_D, PREC,
        )  # fmt: skip
    dqacc = dqacc * sm_scale
    dq_ptrs = dq + b * sdb + h * sdh + offs_m[:, None] * sdm + offs_d[None, :] * sdd
    tl.store(dq_ptrs, dqacc.to(dq.dtype.element_ty), mask=rmask)


@triton.jit
def _dkdv_tma_step(
    dk, dv, kb, vb, q_desc, do_desc, lse_base, delta_base, b, h, start_m, offs_n, Lq, qk_scale,
    CAUSAL_MASK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    # _dkdv_step's math on one query block of head h, Q and dO through the descriptors (rows past Lq read as
    # zeros). Each is loaded once and feeds two dots: Q^T (a transposed view of the shared-memory tile, never
    # a copy) for S^T and Q for dK; dO^T for dP^T and dO for dV. Rows are this program's keys, so P^T and
    # dS^T are the A operands of dV and dK as they come, in registers.
    offs_m = start_m + tl.arange(0, BLOCK_M)
    row_ok = offs_m < Lq
    qb = q_desc.load([b, h, start_m, 0]).reshape(BLOCK_M, BLOCK_D)
    g = do_desc.load([b, h, start_m, 0]).reshape(BLOCK_M, BLOCK_D)
    # Rows past Lq: lse +inf makes their weights exactly 0 (and their dO rows are zeros).
    lse2 = tl.load(lse_base + offs_m, mask=row_ok, other=float("inf")) * 1.4426950408889634
    # The scale inside exp2's argument, s * qk_scale - lse2: one FMA per element. The causal mask selects
    # after the exponential, so a negative scale needs no other path (a masked weight is 0 either way).
    pt = tl.math.exp2(_dot(kb, qb.T, None, None) * qk_scale - lse2[None, :])
    if CAUSAL_MASK:
        pt = tl.where(offs_m[None, :] >= offs_n[:, None], pt, 0.0)
    dv = _dot(pt.to(g.dtype), g, dv, None)
    dpt = _dot(vb, g.T, None, None)
    dl = tl.load(delta_base + offs_m, mask=row_ok, other=0.0)
    dst = pt * (dpt - dl[None, :])
    dk = _dot(dst.to(qb.dtype), qb, dk, None)
    return dk, dv


@triton.jit
def _attn_bwd_dkdv_tma_kernel(
    q, k, v, do, lse, delta, dk, dv, sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sgb, sgh, sgm, skb2, skh2,
    skn2, svb2, svh2, svn2, B, Hq, Hkv, GROUP, Lq, Lk, qk_scale, sm_scale, CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """_attn_bwd_dkdv_kernel's hot case (16-bit, no mask, no dropout, head dim 64 / 128) with tensor
    descriptors built on the device, as _attn_fwd_tma_kernel: K and V of the key block are copied once into
    shared memory, where the tensor cores read them for every query block; Q and dO stream through a
    num_stages-deep TMA pipeline; dK and dV leave through descriptor stores that clip rows past Lk. Q and dO
    need no per-thread addresses or bounds masks (only the 1-D lse / delta loads keep theirs), so the
    registers those held go to bigger tiles: 64 query rows a step against 128 keys, where the pointer kernel
    fits 32. Same blocks, loop split, order and results as the pointer kernel."""
    start_n = tl.program_id(0) * BLOCK_N
    bhk = tl.program_id(1)
    b = bhk // Hkv
    hk = bhk % Hkv
    # 4-D descriptors with the tensors' own strides: any layout with a unit head-dim stride is read in place
    # and a ragged last block never reads into the next head (coordinates 32-bit, strides 64-bit).
    q_desc = tl.make_tensor_descriptor(q, [B, Hq, Lq, BLOCK_D], [sqb, sqh, sqm, 1], [1, 1, BLOCK_M, BLOCK_D])
    do_desc = tl.make_tensor_descriptor(do, [B, Hq, Lq, BLOCK_D], [sgb, sgh, sgm, 1], [1, 1, BLOCK_M, BLOCK_D])
    k_desc = tl.make_tensor_descriptor(k, [B, Hkv, Lk, BLOCK_D], [skb, skh, skn, 1], [1, 1, BLOCK_N, BLOCK_D])
    v_desc = tl.make_tensor_descriptor(v, [B, Hkv, Lk, BLOCK_D], [svb, svh, svn, 1], [1, 1, BLOCK_N, BLOCK_D])
    dk_desc = tl.make_tensor_descriptor(dk, [B, Hkv, Lk, BLOCK_D], [skb2, skh2, skn2, 1], [1, 1, BLOCK_N, BLOCK_D])
    dv_desc = tl.make_tensor_descriptor(dv, [B, Hkv, Lk, BLOCK_D], [svb2, svh2, svn2, 1], [1, 1, BLOCK_N, BLOCK_D])
    offs_n = start_n + tl.arange(0, BLOCK_N)
    # Key rows past Lk read as zeros: their dK / dV rows are computed from them but clipped at the store.
    kb = k_desc.load([b, hk, start_n, 0]).reshape(BLOCK_N, BLOCK_D)
    vb = v_desc.load([b, hk, start_n, 0]).reshape(BLOCK_N, BLOCK_D)
    dkacc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dvacc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    if CAUSAL:  # query blocks before m_lo see none of these keys; from m_mid on they see all of them
        m_lo = start_n // BLOCK_M * BLOCK_M
        m_mid = tl.minimum(tl.cdiv(start_n + BLOCK_N, BLOCK_M) * BLOCK_M, tl.cdiv(Lq, BLOCK_M) * BLOCK_M)
    else:
        m_lo = 0
        m_mid = 0
    for gi in range(0, GROUP):  # every query head that shares this kv head: dK, dV summed over the group
        h = hk * GROUP + gi
        bh = (b * Hq + h).to(tl.int64)
        lse_base = lse + bh * Lq
        delta_base = delta + bh * Lq
        for start_m in tl.range(m_lo, m_mid, BLOCK_M):
            dkacc, dvacc = _dkdv_tma_step(
                dkacc, dvacc, kb, vb, q_desc, do_desc, lse_base, delta_base, b, h, start_m, offs_n, Lq,
                qk_scale, True, BLOCK_M, BLOCK_D,
            )  # fmt: skip
        for start_m in tl.range(m_mid, Lq, BLOCK_M):
            dkacc, dvacc = _dkdv_tma_step(
                dkacc, dvacc, kb, vb, q_desc, do_desc, lse_base, delta_base, b, h, start_m, offs_n, Lq,
                qk_scale, False, BLOCK_M, BLOCK_D,
            )  # fmt: skip
    dkacc = dkacc * sm_scale
    dk_desc.store([b, hk, start_n, 0], dkacc.to(dk.dtype.element_ty).reshape(1, 1, BLOCK_N, BLOCK_D))
    dv_desc.store([b, hk, start_n, 0], dvacc.to(dv.dtype.element_ty).reshape(1, 1, BLOCK_N, BLOCK_D))


@triton.jit
def _dq_tma_step(
    dq, qb, g, lse2, dl, k_desc, v_desc, b, hk, start_n, offs_m, offs_n, Lk, qk_scale, CAUSAL_MASK: tl.constexpr,
    BOUND_N: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    # _dq_step's math on one key block through the descriptors: K and V are loaded once each, K^T (a view)
    # for S and K for dQ, V^T for dP. Key rows past Lk read as zeros, so only the weights need the bound.
    kb = k_desc.load([b, hk, start_n, 0]).reshape(BLOCK_N, BLOCK_D)
    vb = v_desc.load([b, hk, start_n, 0]).reshape(BLOCK_N, BLOCK_D)
    # As in _dkdv_tma_step: the scale inside exp2's argument, masks applied to the weights.
    p = tl.math.exp2(_dot(qb, kb.T, None, None) * qk_scale - lse2[:, None])
    n = start_n + offs_n
    if CAUSAL_MASK and BOUND_N:
        p = tl.where((n[None, :] <= offs_m[:, None]) & (n < Lk)[None, :], p, 0.0)
    elif CAUSAL_MASK:
        p = tl.where(n[None, :] <= offs_m[:, None], p, 0.0)
    elif BOUND_N:
        p = tl.where((n < Lk)[None, :], p, 0.0)
    dp = _dot(g, vb.T, None, None)
    ds = p * (dp - dl[:, None])
    dq = _dot(ds.to(kb.dtype), kb, dq, None)
    return dq


@triton.jit
def _attn_bwd_dq_tma_kernel(
    q, k, v, do, lse, delta, dq, sqb, sqh, sqm, skb, skh, skn, svb, svh, svn, sgb, sgh, sgm, sdb, sdh, sdm, B,
    Hq, Hkv, GROUP, Lq, Lk, qk_scale, sm_scale, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """_attn_bwd_dq_kernel's hot case with tensor descriptors (see _attn_bwd_dkdv_tma_kernel): Q and dO of
    the query block copied once into shared memory, K and V streamed through the TMA pipeline, dQ stored
    through a descriptor that clips rows past Lq. Same blocks, loop split, order and results."""
    if CAUSAL:  # a query block's work grows with its index: launch the longest first
        start_m = (tl.num_programs(0) - 1 - tl.program_id(0)) * BLOCK_M
    else:
        start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // Hq
    h = bh % Hq
    hk = h // GROUP
    q_desc = tl.make_tensor_descriptor(q, [B, Hq, Lq, BLOCK_D], [sqb, sqh, sqm, 1], [1, 1, BLOCK_M, BLOCK_D])
    do_desc = tl.make_tensor_descriptor(do, [B, Hq, Lq, BLOCK_D], [sgb, sgh, sgm, 1], [1, 1, BLOCK_M, BLOCK_D])
    k_desc = tl.make_tensor_descriptor(k, [B, Hkv, Lk, BLOCK_D], [skb, skh, skn, 1], [1, 1, BLOCK_N, BLOCK_D])
    v_desc = tl.make_tensor_descriptor(v, [B, Hkv, Lk, BLOCK_D], [svb, svh, svn, 1], [1, 1, BLOCK_N, BLOCK_D])
    dq_desc = tl.make_tensor_descriptor(dq, [B, Hq, Lq, BLOCK_D], [sdb, sdh, sdm, 1], [1, 1, BLOCK_M, BLOCK_D])
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    row_ok = offs_m < Lq
    qb = q_desc.load([b, h, start_m, 0]).reshape(BLOCK_M, BLOCK_D)  # rows past Lq: zeros
    g = do_desc.load([b, h, start_m, 0]).reshape(BLOCK_M, BLOCK_D)
    lse2 = tl.load(lse + bh.to(tl.int64) * Lq + offs_m, mask=row_ok, other=float("inf")) * 1.4426950408889634
    dl = tl.load(delta + bh.to(tl.int64) * Lq + offs_m, mask=row_ok, other=0.0)
    dqacc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    if CAUSAL:
        hi = tl.minimum(start_m + BLOCK_M, Lk)
        full_hi = tl.minimum(start_m, Lk) // BLOCK_N * BLOCK_N
    else:
        hi = Lk
        full_hi = Lk // BLOCK_N * BLOCK_N
    for start_n in tl.range(0, full_hi, BLOCK_N):
        dqacc = _dq_tma_step(
            dqacc, qb, g, lse2, dl, k_desc, v_desc, b, hk, start_n, offs_m, offs_n, Lk, qk_scale,
            False, False, BLOCK_N, BLOCK_D,
        )  # fmt: skip
    for start_n in tl.range(full_hi, hi, BLOCK_N):
        dqacc = _dq_tma_step(
            dqacc, qb, g, lse2, dl, k_desc, v_desc, b, hk, start_n, offs_m, offs_n, Lk, qk_scale,
            CAUSAL, True, BLOCK_N, BLOCK_D,
        )  # fmt: skip
    dqacc = dqacc * sm_scale
    dq_desc.store([b, h, start_m, 0], dqacc.to(dq.dtype.element_ty).reshape(1, 1, BLOCK_M, BLOCK_D))


_FWD = Kernel(_attn_fwd_kernel)
_FWD_TMA_KERNEL = Kernel(_attn_fwd_tma_kernel)
_COMBINE = Kernel(_decode_combine_kernel)
_DELTA = Kernel(_bwd_delta_kernel)
_DKDV = Kernel(_attn_bwd_dkdv_kernel)
_DQ = Kernel(_attn_bwd_dq_kernel)
_DKDV_TMA_KERNEL = Kernel(_attn_bwd_dkdv_tma_kernel)
_DQ_TMA_KERNEL = Kernel(_attn_bwd_dq_tma_kernel)


# ------------------------------------------------------------------------------------------ configuration
# (BLOCK_M, BLOCK_N, num_warps, num_stages) by padded head dim, for 16-bit inputs on Hopper; fp32 halves
# the tiles (twice the bytes per element, and IEEE fp32 dots run on CUDA cores).
_FWD_CONFIGS = {
    16: (128, 64, 4, 3),
    32: (128, 64, 4, 3),
    64: (128, 64, 8, 3),
    128: (128, 64, 8, 3),
    256: (64, 64, 8, 2),
}
# The TMA forward (_attn_fwd_tma_kernel) serves the hot case while _FWD_TMA is set, for the head dims of
# _FWD_TMA_CONFIGS: (BLOCK_M, BLOCK_N, num_warps, num_stages, warp_specialize). Both are read at each launch
# (benchmarks/sweep_attention_tma.py patches them). From that sweep on an H100, causal bf16 forward:
# d128 (4x16x4096x128) 128x128 8w 3st 703-707 us against the pointer kernel's 835 (cuDNN 658); d64
# (4x32x4096x64) 128x128 4w 3st 836 us against 859 (cuDNN 826). 128x128 at 4 stages needs 296 KB of shared
# memory (232 KB available). warp_specialize on sm_90 with Triton 3.6: with 8 warps the loop comes out
# unpartitioned (the same code and time as without it), with 4 the warp-specialisation pass fails.
_FWD_TMA = True
_FWD_TMA_CONFIGS: dict[int, tuple[int, int, int, int, bool]] = {
    64: (128, 128, 4, 3, False),
    128: (128, 128, 8, 3, False),
}
_DKDV_CONFIGS = {
    16: (64, 128, 8, 3),
    32: (64, 128, 8, 3),
    64: (32, 128, 4, 3),
    128: (32, 128, 8, 3),
    256: (32, 64, 8, 2),
}
_DQ_CONFIGS = {16: (128, 64, 8, 3), 32: (128, 64, 8, 3), 64: (128, 64, 4, 3), 128: (128, 64, 8, 3), 256: (64, 32, 8, 2)}
# The TMA backward kernels (_attn_bwd_dkdv_tma_kernel, _attn_bwd_dq_tma_kernel) serve the hot case while
# _BWD_TMA is set, each for the head dims of its table: (BLOCK_M, BLOCK_N, num_warps, num_stages). Read at
# each launch (benchmarks/sweep_attention_bwd_tma.py patches them); a head dim left out of one table keeps
# that kernel's pointer version. From that sweep on an H100 (causal bf16, whole backward = delta + dK/dV +
# dQ, one kernel swept at a time): dK / dV d128 64x64 4w 2st 2,395 us against the pointer kernel's 2,569
# (cuDNN 1,927); the dQ kernel's candidates at d128 and both kernels' at d64 were no faster than the
# pointer versions beyond noise (dQ d64: 3,563 against 3,580; dK / dV d64 TMA 64x128: 3,578 against 2,638),
# so those head dims stay with them. The d128 dK / dV tile: 64 keys a program, K and V resident in shared
# memory, 64-row query steps; the larger 64x128 tile (255 registers by ptxas -v, spills at 3 stages) lost.
_BWD_TMA = True
_DKDV_TMA_CONFIGS: dict[int, tuple[int, int, int, int]] = {128: (64, 64, 4, 2)}
_DQ_TMA_CONFIGS: dict[int, tuple[int, int, int, int]] = {}
_DECODE_CONFIG = {
    16: (16, 128, 4, 3),
    32: (16, 128, 4, 3),
    64: (16, 128, 4, 3),
    128: (16, 128, 4, 3),
    256: (16, 64, 4, 2),
}


def _config(table: dict, block_d: int, dtype: str, lq: int, lk: int) -> tuple[int, int, int, int]:
    bm0, bn0, warps, stages = table[block_d]
    bm, bn = bm0, bn0
    if dtype == "float32":
        bm, bn = max(16, bm // 2), max(16, bn // 2)
    # Small problems (and the interpreter's tests) need no tile bigger than the sequence.
    bm = max(16, min(bm, next_pow2(lq)))
    bn = max(16, min(bn, next_pow2(lk)))
    if (bm, bn) != (bm0, bn0) and bm * bn <= 64 * 64:  # a shrunk tile: fewer warps than the table's
        warps = min(warps, 4)
    return bm, bn, warps, stages


def _dims(q: BufferLike, k: BufferLike, v: BufferLike) -> tuple[int, int, int, int, int, int]:
    if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
        raise ValueError(f"attention expects (B, H, L, D) buffers, got {q.shape}, {k.shape}, {v.shape}")
    b, hq, lq, d = q.shape
    bk, hkv, lk, dk = k.shape
    if tuple(v.shape) != tuple(k.shape) or bk != b or dk != d:
        raise ValueError(f"attention: query {q.shape}, key {k.shape} and value {v.shape} do not match")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"attention: {hq} query heads are not a multiple of {hkv} key / value heads")
    if d > MAX_HEAD_DIM:
        raise ValueError(f"attention: head dim {d} exceeds {MAX_HEAD_DIM}")
    if q.dtype not in ("float32", "float16", "bfloat16") or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"attention: float32 / float16 / bfloat16 inputs of one dtype expected, got {q.dtype}")
    return b, hq, hkv, lq, lk, d


def _tma_strides(t: BufferLike) -> tuple[int, int, int] | None:
    """The (batch, head, row) strides a tensor descriptor reads the (B, H, L, D) buffer ``t`` with, or None
    where TMA cannot: it needs a unit head-dim stride, a 16-byte aligned base and the other strides positive
    16-byte multiples. An extent-1 dim is never stepped, so its stride (which may be anything) is replaced by
    a nominal aligned one, as matmul does for a broadcast batch."""
    item = dtype_info(t.dtype).itemsize
    if t.ptr % 16 or t.strides[3] != 1:
        return None
    strides = [0, 0, 0]
    span = t.shape[3]  # elements one step of the dim at hand must clear: the dims inside it
    for i in (2, 1, 0):
        s = t.strides[i] if t.shape[i] > 1 else span
        if s <= 0 or (s * item) % 16:
            return None
        strides[i] = s
        span = t.shape[i] * s
    return strides[0], strides[1], strides[2]


def _fwd_tma_strides(q: BufferLike, k: BufferLike, v: BufferLike, out: BufferLike, kind: int, dropout: bool,
                     split: bool) -> tuple[int, ...] | None:  # fmt: skip
    """The descriptors' strides of q, k, v and out (three each) where the forward takes the TMA kernel, else
    None. It does with _FWD_TMA set, 16-bit inputs and output of one dtype, no mask, no dropout, not split-KV,
    a power-of-two head dim of _FWD_TMA_CONFIGS (no padded columns), at least one key, 32-bit coordinates,
    and every buffer readable by a descriptor (_tma_strides)."""
    d = q.shape[3]
    if not _FWD_TMA or kind != 0 or dropout or split:
        return None
    if q.dtype not in ("float16", "bfloat16") or out.dtype != q.dtype or d not in _FWD_TMA_CONFIGS:
        return None
    if d != next_pow2(d) or k.shape[2] == 0 or max(*q.shape, *k.shape) >= INT32_LIMIT:
        return None
    strides: tuple[int, ...] = ()
    for t in (q, k, v, out):
        st = _tma_strides(t)
        if st is None:
            return None
        strides += st
    return strides


def _fwd_tma_key(dtype: str, causal: bool, raw_max: bool, cfg: tuple[int, int, int, int, bool], block_d: int) -> tuple:
    """_FWD_TMA_KERNEL's cache key of one specialisation (cfg: BLOCK_M, BLOCK_N, warps, stages, warp_specialize)."""
    return (dtype, causal, raw_max, block_d, *cfg)


def _fwd_tma_config(d: int, dtype: str, lq: int, lk: int) -> tuple[int, int, int, int, bool]:
    """_FWD_TMA_CONFIGS's entry, tiles shrunk to the sequences as _config does."""
    *tiles, ws = _FWD_TMA_CONFIGS[d]
    return (*_config({d: tuple(tiles)}, d, dtype, lq, lk), ws)


def _forward_tma(q: BufferLike, k: BufferLike, v: BufferLike, out: BufferLike, lse: BufferLike,
                 strides: tuple[int, ...], causal: bool, scale: float, stream: int) -> None:  # fmt: skip
    """attention_forward's hot case through _attn_fwd_tma_kernel; ``strides`` from _fwd_tma_strides."""
    b, hq, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    cfg = _fwd_tma_config(d, q.dtype, lq, lk)
    bm, bn, warps, stages, ws = cfg
    raw_max = scale > 0
    key = _fwd_tma_key(q.dtype, causal, raw_max, cfg, d)
    fn = _FWD_TMA_KERNEL.cache.get(key)
    if fn is None:
        stride_names = ("sqb", "sqh", "sqm", "skb", "skh", "skn", "svb", "svh", "svn", "sob", "soh", "som")
        types = {
            "q": ptr_type(q.dtype), "k": ptr_type(k.dtype), "v": ptr_type(v.dtype), "o": ptr_type(out.dtype),
            "lse": "*fp32", **dict.fromkeys(stride_names, "i64"),
            **dict.fromkeys(("B", "Hq", "Hkv", "GROUP", "Lq", "Lk"), "i32"), "qk_scale": "fp32",
        }  # fmt: skip
        consts = dict(CAUSAL=causal, RAW_MAX=raw_max, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=d, WARP_SPECIALIZE=ws)
        fn = _FWD_TMA_KERNEL.build(key, types, consts, ("q", "k", "v", "o"), num_warps=warps, num_stages=stages)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    args = (q.ptr, k.ptr, v.ptr, out.ptr, lse.ptr, *strides, b, hq, hkv, hq // hkv, lq, lk, scale * _LOG2E,
            *fn._consts)  # type: ignore[attr-defined]  # fmt: skip
    fn((cdiv(lq, bm), b * hq, 1), stream, args)


# The buffers each TMA backward kernel reads or writes through descriptors, and the names of their
# (batch, head, row) stride arguments.
_BWD_TMA_BUFS = {"dkdv": ("q", "k", "v", "do", "dk", "dv"), "dq": ("q", "k", "v", "do", "dq")}
_BWD_TMA_STRIDE_ARGS = {
    "q": ("sqb", "sqh", "sqm"), "k": ("skb", "skh", "skn"), "v": ("svb", "svh", "svn"), "do": ("sgb", "sgh", "sgm"),
    "dk": ("skb2", "skh2", "skn2"), "dv": ("svb2", "svh2", "svn2"), "dq": ("sdb", "sdh", "sdm"),
}  # fmt: skip


def _bwd_tma_table(kernel: str) -> dict[int, tuple[int, int, int, int]]:
    return _DKDV_TMA_CONFIGS if kernel == "dkdv" else _DQ_TMA_CONFIGS


def _bwd_tma_strides(kernel: str, bufs: dict[str, BufferLike], kind: int, dropout: bool) -> tuple[int, ...] | None:
    """The descriptor strides (three per buffer of _BWD_TMA_BUFS[kernel], in that order) where ``kernel``
    ("dkdv" or "dq") takes its TMA version, else None. It does with _BWD_TMA set, the head dim in the
    kernel's table (a power of two: no padded columns), 16-bit q, k, v, dO and gradients of one dtype, no
    mask, no dropout, at least one query and one key (a descriptor has no empty dims), 32-bit coordinates
    and every buffer the kernel touches readable by a descriptor (_tma_strides)."""
    q, k = bufs["q"], bufs["k"]
    d = q.shape[3]
    if not _BWD_TMA or kind != 0 or dropout or d not in _bwd_tma_table(kernel) or d != next_pow2(d):
        return None
    if q.dtype not in ("float16", "bfloat16") or any(bufs[n].dtype != q.dtype for n in _BWD_TMA_BUFS[kernel]):
        return None
    if q.shape[2] == 0 or k.shape[2] == 0 or max(*q.shape, *k.shape) >= INT32_LIMIT:
        return None
    strides: tuple[int, ...] = ()
    for name in _BWD_TMA_BUFS[kernel]:
        st = _tma_strides(bufs[name])
        if st is None:
            return None
        strides += st
    return strides


def _bwd_tma_config(kernel: str, d: int, lq: int, lk: int) -> tuple[int, int, int, int]:
    """The kernel's table entry, tiles shrunk to the sequences as _config does."""
    return _config({d: _bwd_tma_table(kernel)[d]}, d, "bfloat16", lq, lk)


def _bwd_tma_key(dtype: str, causal: bool, cfg: tuple[int, int, int, int], block_d: int) -> tuple:
    """_DKDV_TMA_KERNEL's / _DQ_TMA_KERNEL's cache key of one specialisation (cfg: BLOCK_M, BLOCK_N, warps,
    stages)."""
    return (dtype, causal, block_d, *cfg)


def _bwd_tma_build(kernel: str, q: BufferLike, k: BufferLike, causal: bool) -> tuple[LaunchFn, Grid]:
    """The compiled (cached) TMA backward kernel ``kernel`` for these shapes, and its grid."""
    b, hq, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    cfg = _bwd_tma_config(kernel, d, lq, lk)
    bm, bn, warps, stages = cfg
    kern = _DKDV_TMA_KERNEL if kernel == "dkdv" else _DQ_TMA_KERNEL
    key = _bwd_tma_key(q.dtype, causal, cfg, d)
    fn = kern.cache.get(key)
    if fn is None:
        names = _BWD_TMA_BUFS[kernel]
        types = {
            **dict.fromkeys(names, ptr_type(q.dtype)), "lse": "*fp32", "delta": "*fp32",
            **dict.fromkeys([s for n in names for s in _BWD_TMA_STRIDE_ARGS[n]], "i64"),
            **dict.fromkeys(("B", "Hq", "Hkv", "GROUP", "Lq", "Lk"), "i32"), "qk_scale": "fp32", "sm_scale": "fp32",
        }  # fmt: skip
        consts = dict(CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=d)
        # The descriptor buffers are 16-byte aligned (_tma_strides); lse and delta are read as plain vectors.
        fn = kern.build(key, types, consts, names, num_warps=warps, num_stages=stages)
        fn._consts = consts  # type: ignore[attr-defined]
    grid = (cdiv(lk, bn), b * hkv, 1) if kernel == "dkdv" else (cdiv(lq, bm), b * hq, 1)
    return fn, grid


def _bwd_tma_launch(kernel: str, fn: LaunchFn, grid: Grid, bufs: dict[str, BufferLike], strides: tuple[int, ...],
                    lse: BufferLike, delta: int, scale: float, stream: int) -> None:  # fmt: skip
    """Launch ``fn`` from _bwd_tma_build; ``strides`` from _bwd_tma_strides."""
    q, k = bufs["q"], bufs["k"]
    names = _BWD_TMA_BUFS[kernel]
    args: dict[str, object] = {n: bufs[n].ptr for n in names}
    args.update(zip([s for n in names for s in _BWD_TMA_STRIDE_ARGS[n]], strides))
    args.update(
        lse=lse.ptr, delta=delta, B=q.shape[0], Hq=q.shape[1], Hkv=k.shape[1], GROUP=q.shape[1] // k.shape[1],
        Lq=q.shape[2], Lk=k.shape[2], qk_scale=scale * _LOG2E, sm_scale=scale, **fn._consts,  # type: ignore[attr-defined]
    )  # fmt: skip
    kern = _DKDV_TMA_KERNEL if kernel == "dkdv" else _DQ_TMA_KERNEL
    fn(grid, stream, tuple(args[n] for n in kern.arg_names))


def _mask_args(mask: BufferLike | None, b: int, hq: int, lq: int, lk: int) -> tuple[int, tuple[int, ...], int, str]:
    """(pointer, 4 strides, MASK_KIND, triton type) of a mask broadcast to (B, Hq, Lq, Lk)."""
    if mask is None:
        return 0, (0, 0, 0, 0), 0, "i64"
    if tuple(mask.shape) != (b, hq, lq, lk):
        raise ValueError(f"attention: mask of shape {mask.shape} is not (B, Hq, Lq, Lk) = {(b, hq, lq, lk)}")
    kind = 1 if mask.dtype == "bool" else 2
    return mask.ptr, tuple(mask.strides), kind, ptr_type(mask.dtype)


def _int_type(*bufs: BufferLike | None) -> str:
    """i32 strides unless some offset a kernel forms can pass 2^31."""
    worst = 0
    for t in bufs:
        if t is not None:
            worst = max(worst, sum((s - 1) * abs(st) for s, st in zip(t.shape, t.strides)) + 1)
    return "i64" if worst >= 2**31 - 4096 else "i32"


def _aligned(names_ptrs: list[tuple[str, int]], names_ints: list[tuple[str, int]]) -> tuple[str, ...]:
    return tuple([n for n, p in names_ptrs if p % 16 == 0] + [n for n, v in names_ints if v % 16 == 0])


def _stride_ints(*named: tuple[str, BufferLike]) -> list[tuple[str, int]]:
    """(argument name, value) of the batch, head and row strides of each (prefix, buffer): ``sqb``, ``sqh``,
    ``sqm`` for ("q", q); a prefix ending in 2 names the output copies (``skb2``...)."""
    out = []
    for prefix, t in named:
        letters = _STRIDE_NAMES[prefix.rstrip("2")][:3]
        suffix = "2" if prefix.endswith("2") else ""
        out += [(f"s{prefix.rstrip('2')}{c}{suffix}", st) for c, st in zip(letters, t.strides[:3])]
    return out


def _prec(dtype: str) -> str | None:
    return "ieee" if dtype == "float32" else None  # fp32: no tf32; 16-bit dots have one precision


_STRIDE_NAMES = {"q": "bhmd", "k": "bhnd", "v": "bhnd", "o": "bhmd", "g": "bhmd", "d": "bhmd", "m": "bhmn"}


def _strides(prefix: str, it: str) -> dict[str, str]:
    return {f"s{prefix}{c}": it for c in _STRIDE_NAMES[prefix]}


def attention_forward(
    q: BufferLike,
    k: BufferLike,
    v: BufferLike,
    out: BufferLike,
    lse: BufferLike,
    *,
    mask: BufferLike | None = None,
    causal: bool = False,
    scale: float,
    dropout_p: float = 0.0,
    seed: int = 0,
    offset: int = 0,
    rng_ptr: int = 0,
    stream: int = 0,
) -> None:
    """``out = softmax(q k^T * scale + mask) v`` over (B, H, L, D) buffers and ``lse`` (B, Hq, Lq) fp32.

    ``mask``: bool (True = may attend) or float (added), expanded to (B, Hq, Lq, Lk) with any strides.
    ``dropout_p`` > 0 drops weights with the Philox stream (seed, offset), counters offset + B*Hq*Lq*Lk;
    with ``rng_ptr`` (CUDA-graph capture) the seed and base offset are read from that device int64[2]
    and ``offset`` is added to the base (random.philox_state).
    """
    b, hq, hkv, lq, lk, d = _dims(q, k, v)
    if tuple(out.shape) != tuple(q.shape) or tuple(lse.shape) != (b, hq, lq) or lse.dtype != "float32":
        raise ValueError(f"attention: out {out.shape} / lse {lse.shape} do not fit query {q.shape}")
    if b * hq * lq == 0:
        return
    block_d = max(16, next_pow2(d))
    mptr, ms, kind, mtype = _mask_args(mask, b, hq, lq, lk)
    dropout = dropout_p > 0.0
    split = lq <= DECODE_MAX_LQ and lk >= DECODE_MIN_LK
    tma = _fwd_tma_strides(q, k, v, out, kind, dropout, split)
    if tma is not None:  # the hot case: the TMA kernel
        _forward_tma(q, k, v, out, lse, tma, causal, scale, stream)
        return
    table = _DECODE_CONFIG if split else _FWD_CONFIGS
    bm, bn, warps, stages = _config(table, block_d, q.dtype, lq, lk)
    it = _int_type(q, k, v, out, mask)
    grid_m = cdiv(lq, bm)
    splits, chunk, part = 1, lk, 0
    if split:
        n_blocks = cdiv(lk, bn)
        splits = max(1, min(max(1, n_blocks // 4), cdiv(16 * sm_count(), b * hq * grid_m), 64))
        chunk = cdiv(n_blocks, splits) * bn
        splits = cdiv(lk, chunk)
        part = runtime.scratch(splits * b * hq * lq * (block_d + 2) * 4, stream)
    even_d = d == block_d
    prec = _prec(q.dtype)
    # Every batch / head / row stride divisible by 16 is declared so: one that is not (batch strides were
    # left out once) makes every tile pointer of unknown alignment, so loads go scalar and unpipelined.
    # A head dim divisible by 16 (96) lets the padded-D mask keep 16-byte vectors.
    ints = [*_stride_ints(("q", q), ("k", k), ("v", v), ("o", out)), ("D", d)]
    aligned = _aligned([("q", q.ptr), ("k", k.ptr), ("v", v.ptr), ("o", out.ptr), ("lse", lse.ptr)], ints)
    unit_d = (q.strides[3], k.strides[3], v.strides[3], out.strides[3]) == (1, 1, 1, 1)
    seed_ptr = dropout and rng_ptr != 0
    raw_max = scale > 0 and kind != 2
    key = (q.dtype, out.dtype, mtype, kind, causal, dropout, seed_ptr, split, even_d, it, bm, bn, block_d, aligned,
           unit_d, raw_max, warps, stages)  # fmt: skip
    fn = _FWD.cache.get(key)
    if fn is None:
        types = {
            "q": ptr_type(q.dtype), "k": ptr_type(k.dtype), "v": ptr_type(v.dtype), "o": ptr_type(out.dtype),
            "lse": "*fp32", "mask": mtype, "part": "*fp32",
            **_strides("q", it), **_strides("k", it), **_strides("v", it), **_strides("o", it), **_strides("m", it),
            "Hq": "i32", "GROUP": "i32", "Lq": "i32", "Lk": "i32", "D": "i32", "chunk": "i32",
            "qk_scale": "fp32", "drop_p": "fp32", "drop_scale": "fp32", "seed": "i64", "offset": "i64",
            "rng": "*i64" if seed_ptr else "i64",
        }  # fmt: skip
        consts = dict(
            CAUSAL=causal, MASK_KIND=kind, DROPOUT=dropout, SEED_PTR=seed_ptr, SPLIT=split, GUARD=kind != 0 or split,
            EVEN_D=even_d, UNIT_D=unit_d, PREC=prec, RAW_MAX=raw_max, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=block_d,
        )  # fmt: skip
        fn = _FWD.build(key, types, consts, aligned, num_warps=warps, num_stages=stages)
        fn._consts = consts  # type: ignore[attr-defined]
    args = dict(
        q=q.ptr, k=k.ptr, v=v.ptr, o=out.ptr, lse=lse.ptr, mask=mptr, part=part,
        sqb=q.strides[0], sqh=q.strides[1], sqm=q.strides[2], sqd=q.strides[3],
        skb=k.strides[0], skh=k.strides[1], skn=k.strides[2], skd=k.strides[3],
        svb=v.strides[0], svh=v.strides[1], svn=v.strides[2], svd=v.strides[3],
        sob=out.strides[0], soh=out.strides[1], som=out.strides[2], sod=out.strides[3],
        smb=ms[0], smh=ms[1], smm=ms[2], smn=ms[3],
        Hq=hq, GROUP=hq // hkv, Lq=lq, Lk=lk, D=d, chunk=chunk,
        qk_scale=scale * _LOG2E, drop_p=dropout_p, drop_scale=1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0,
        seed=seed & (2**63 - 1), offset=offset, rng=rng_ptr if seed_ptr else 0,
    )  # fmt: skip
    args.update(fn._consts)  # type: ignore[attr-defined]
    fn((grid_m, b * hq, splits), stream, tuple(args[n] for n in _FWD.arg_names))
    if split:
        _combine(part, splits, out, lse, b, hq, lq, d, block_d, stream)


def _combine(part: int, splits: int, out: BufferLike, lse: BufferLike, b: int, hq: int, lq: int, d: int,
             block_d: int, stream: int) -> None:  # fmt: skip
    block_s = max(2, next_pow2(splits))
    even_d = d == block_d
    key = (out.dtype, even_d, block_s, block_d)
    fn = _COMBINE.cache.get(key)
    if fn is None:
        types = {
            "part": "*fp32", "o": ptr_type(out.dtype), "lse": "*fp32", "SPLITS": "i32", "Hq": "i32", "Lq": "i32",
            "D": "i32", "sob": "i64", "soh": "i64", "som": "i64", "sod": "i64",
        }  # fmt: skip
        consts = dict(EVEN_D=even_d, BLOCK_S=block_s, BLOCK_D=block_d)
        fn = _COMBINE.build(key, types, consts, (), num_warps=4 if block_d <= 128 else 8, num_stages=1)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (b * hq * lq, 1, 1),
        stream,
        (part, out.ptr, lse.ptr, splits, hq, lq, d, *out.strides, *fn._consts),  # type: ignore[attr-defined]
    )


def attention_backward(
    q: BufferLike,
    k: BufferLike,
    v: BufferLike,
    out: BufferLike,
    dout: BufferLike,
    lse: BufferLike,
    dq: BufferLike,
    dk: BufferLike,
    dv: BufferLike,
    *,
    mask: BufferLike | None = None,
    causal: bool = False,
    scale: float,
    dropout_p: float = 0.0,
    seed: int = 0,
    offset: int = 0,
    rng_ptr: int = 0,
    stream: int = 0,
) -> None:
    """dq, dk, dv of :func:`attention_forward` given ``dout``, its ``out`` and ``lse``, and the same
    mask / causal / scale / dropout (seed, offset, rng_ptr) arguments. dk / dv sum over each kv head's group."""
    b, hq, hkv, lq, lk, d = _dims(q, k, v)
    for name, t, like in (("dq", dq, q), ("dk", dk, k), ("dv", dv, v), ("out", out, q), ("dout", dout, q)):
        if tuple(t.shape) != tuple(like.shape):
            raise ValueError(f"attention_backward: {name} of shape {t.shape}, expected {like.shape}")
    if b * hkv * lk * d == 0 and b * hq * lq * d == 0:
        return
    block_d = max(16, next_pow2(d))
    even_d = d == block_d
    mptr, ms, kind, mtype = _mask_args(mask, b, hq, lq, lk)
    dropout = dropout_p > 0.0
    it = _int_type(q, k, v, dout, mask, dq, dk, dv)
    unit_d = all(t.strides[3] == 1 for t in (q, k, v, dout, dq, dk, dv))
    prec = _prec(q.dtype)
    # The hot case's TMA kernels, built first: the launcher serves their device-side descriptors from the
    # start of this stream's scratch (grid x global_scratch bytes), so delta must lie past that reserve, as
    # matmul's stream-K partials do; otherwise the descriptors the programs write would overwrite it.
    bufs = {"q": q, "k": k, "v": v, "do": dout, "dq": dq, "dk": dk, "dv": dv}
    tma: dict[str, tuple[LaunchFn, Grid, tuple[int, ...]]] = {}
    for name, runs in (("dkdv", b * hkv * lk > 0), ("dq", b * hq * lq > 0)):
        st = _bwd_tma_strides(name, bufs, kind, dropout) if runs else None
        if st is not None:
            tma[name] = (*_bwd_tma_build(name, q, k, causal), st)
    reserve = max([g[0] * g[1] * g[2] * getattr(fn, "global_scratch", 0) for fn, g, _ in tma.values()], default=0)
    reserve = cdiv(reserve, 256) * 256
    delta = runtime.scratch(reserve + max(1, b * hq * lq) * 4, stream) + reserve
    seed_ptr = dropout and rng_ptr != 0
    common = dict(
        Hq=hq, Lq=lq, Lk=lk, D=d, qk_scale=scale * _LOG2E, sm_scale=scale, drop_p=dropout_p,
        drop_scale=1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0, seed=seed & (2**63 - 1), offset=offset,
        rng=rng_ptr if seed_ptr else 0,
        smb=ms[0], smh=ms[1], smm=ms[2], smn=ms[3], mask=mptr, lse=lse.ptr, delta=delta,
        q=q.ptr, k=k.ptr, v=v.ptr, do=dout.ptr, GROUP=hq // hkv, Hkv=hkv,
        **{f"sq{c}": s for c, s in zip("bhmd", q.strides)},
        **{f"sk{c}": s for c, s in zip("bhnd", k.strides)},
        **{f"sv{c}": s for c, s in zip("bhnd", v.strides)},
        **{f"sg{c}": s for c, s in zip("bhmd", dout.strides)},
    )  # fmt: skip
    scalar_types = {
        "Hq": "i32", "Hkv": "i32", "GROUP": "i32", "Lq": "i32", "Lk": "i32", "D": "i32", "qk_scale": "fp32",
        "sm_scale": "fp32", "drop_p": "fp32", "drop_scale": "fp32", "seed": "i64", "offset": "i64",
        "rng": "*i64" if seed_ptr else "i64",
    }  # fmt: skip
    # delta = rowsum(dO * O), fp32 (B*Hq, Lq)
    if b * hq * lq:
        # 32 rows x BLOCK_D per program: a few 16-byte loads per thread, thousands of programs in flight.
        dm = max(16, min(32 if block_d <= 128 else 16, next_pow2(lq)))
        d_unit = out.strides[3] == 1 and dout.strides[3] == 1
        d_aligned = _aligned([("o", out.ptr), ("do", dout.ptr)], [*_stride_ints(("o", out), ("g", dout)), ("D", d)])
        dkey = (out.dtype, dout.dtype, dm, block_d, it, even_d, d_unit, d_aligned)
        fn = _DELTA.cache.get(dkey)
        if fn is None:
            types = {
                "o": ptr_type(out.dtype), "do": ptr_type(dout.dtype), "delta": "*fp32", "Hq": "i32", "Lq": "i32",
                "D": "i32", **_strides("o", it), **_strides("g", it),
            }  # fmt: skip
            dconsts = dict(EVEN_D=even_d, UNIT_D=d_unit, BLOCK_M=dm, BLOCK_D=block_d)
            fn = _DELTA.build(dkey, types, dconsts, d_aligned, num_warps=4)
        fn(
            (cdiv(lq, dm), b * hq, 1),
            stream,
            (out.ptr, dout.ptr, delta, hq, lq, d, *out.strides, *dout.strides, even_d, d_unit, dm, block_d),
        )
    # dK, dV: one program per key block and kv head
    if "dkdv" in tma:
        fn, grid, st = tma["dkdv"]
        _bwd_tma_launch("dkdv", fn, grid, bufs, st, lse, delta, scale, stream)
    elif b * hkv * lk:
        bm, bn, warps, stages = _config(_DKDV_CONFIGS, block_d, q.dtype, lq, lk)
        ints = [*_stride_ints(("q", q), ("k", k), ("v", v), ("g", dout), ("k2", dk), ("v2", dv)), ("D", d)]
        ptrs = [("q", q.ptr), ("k", k.ptr), ("v", v.ptr), ("do", dout.ptr), ("dk", dk.ptr), ("dv", dv.ptr)]
        aligned = _aligned([*ptrs, ("lse", lse.ptr), ("delta", delta)], ints)
        key = (q.dtype, dk.dtype, mtype, kind, causal, dropout, seed_ptr, even_d, unit_d, it, bm, bn, block_d, aligned,
               warps, stages)  # fmt: skip
        fn = _DKDV.cache.get(key)
        if fn is None:
            types = {
                "q": ptr_type(q.dtype), "k": ptr_type(k.dtype), "v": ptr_type(v.dtype), "do": ptr_type(dout.dtype),
                "lse": "*fp32", "delta": "*fp32", "mask": mtype, "dk": ptr_type(dk.dtype), "dv": ptr_type(dv.dtype),
                **_strides("q", it), **_strides("k", it), **_strides("v", it), **_strides("g", it),
                **_strides("m", it), **{f"{n}2": it for n in (*_strides("k", it), *_strides("v", it))},
                **scalar_types,
            }  # fmt: skip
            consts = dict(
                CAUSAL=causal, MASK_KIND=kind, DROPOUT=dropout, SEED_PTR=seed_ptr, EVEN_D=even_d, UNIT_D=unit_d,
                PREC=prec, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=block_d,
            )  # fmt: skip
            fn = _DKDV.build(key, types, consts, aligned, num_warps=warps, num_stages=stages)
            fn._consts = consts  # type: ignore[attr-defined]
        args = dict(
            common, dk=dk.ptr, dv=dv.ptr,
            **{f"sk{c}2": s for c, s in zip("bhnd", dk.strides)},
            **{f"sv{c}2": s for c, s in zip("bhnd", dv.strides)},
            **fn._consts,  # type: ignore[attr-defined]
        )  # fmt: skip
        fn((cdiv(lk, bn), b * hkv, 1), stream, tuple(args[n] for n in _DKDV.arg_names))
    # dQ: one program per query block and query head
    if "dq" in tma:
        fn, grid, st = tma["dq"]
        _bwd_tma_launch("dq", fn, grid, bufs, st, lse, delta, scale, stream)
    elif b * hq * lq:
        bm, bn, warps, stages = _config(_DQ_CONFIGS, block_d, q.dtype, lq, lk)
        ints = [*_stride_ints(("q", q), ("k", k), ("v", v), ("g", dout), ("d", dq)), ("D", d)]
        ptrs = [("q", q.ptr), ("k", k.ptr), ("v", v.ptr), ("do", dout.ptr), ("dq", dq.ptr)]
        aligned = _aligned([*ptrs, ("lse", lse.ptr), ("delta", delta)], ints)
        key = (q.dtype, dq.dtype, mtype, kind, causal, dropout, seed_ptr, even_d, unit_d, it, bm, bn, block_d, aligned,
               warps, stages)  # fmt: skip
        fn = _DQ.cache.get(key)
        if fn is None:
            types = {
                "q": ptr_type(q.dtype), "k": ptr_type(k.dtype), "v": ptr_type(v.dtype), "do": ptr_type(dout.dtype),
                "lse": "*fp32", "delta": "*fp32", "mask": mtype, "dq": ptr_type(dq.dtype),
                **_strides("q", it), **_strides("k", it), **_strides("v", it), **_strides("g", it),
                **_strides("m", it), **_strides("d", it), **scalar_types,
            }  # fmt: skip
            for n in ("Hkv",):
                types.pop(n)
            consts = dict(
                CAUSAL=causal, MASK_KIND=kind, DROPOUT=dropout, SEED_PTR=seed_ptr, EVEN_D=even_d, UNIT_D=unit_d,
                PREC=prec, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=block_d,
            )  # fmt: skip
            fn = _DQ.build(key, types, consts, aligned, num_warps=warps, num_stages=stages)
            fn._consts = consts  # type: ignore[attr-defined]
        args = dict(
            common, dq=dq.ptr, **{f"sd{c}": s for c, s in zip("bhmd", dq.strides)},
            **fn._consts,  # type: ignore[attr-defined]
        )  # fmt: skip
        fn((cdiv(lq, bm), b * hq, 1), stream, tuple(args[n] for n in _DQ.arg_names))


__all__ = ["attention_backward", "attention_forward"]
