"""The flash-attention kernels themselves (Triton): the forward (pointer and TMA), the split-KV decode
combine, and the backward's delta pre-pass, dK / dV and dQ kernels (pointer and TMA).

What they compute, the layouts and the masking conventions are described in ``attention.py``, which
holds the launchers, the tile tables and the choice between the pointer and the TMA kernels; this
module holds only ``@triton.jit`` code, so that each half reads in one sitting.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .random import _philox, philox_state
from .runtime import INTERPRET

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
