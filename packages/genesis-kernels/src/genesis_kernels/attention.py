"""Flash attention: softmax(Q K^T * scale + mask) V without materialising the scores, forward and backward.

This module holds the launchers, the tile tables and the choice of kernel; the ``@triton.jit`` kernels
are in ``attention_kernels.py``.

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

from collections.abc import Iterable

from . import runtime
from .attention_kernels import (
    _attn_bwd_dkdv_kernel,
    _attn_bwd_dkdv_tma_kernel,
    _attn_bwd_dq_kernel,
    _attn_bwd_dq_tma_kernel,
    _attn_fwd_kernel,
    _attn_fwd_tma_kernel,
    _bwd_delta_kernel,
    _decode_combine_kernel,
)
from .buffer import INT32_LIMIT, BufferLike, dtype_info
from .launch_abi import Grid, LaunchFn
from .runtime import Kernel, PlanTable, cdiv, next_pow2, ptr_type, sm_count

_LOG2E = 1.4426950408889634
MAX_HEAD_DIM = 256
DECODE_MAX_LQ = 16  # at most this many queries and ...
DECODE_MIN_LK = 512  # ... at least this many keys: the split-KV (flash-decoding) path


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


def _all_tma_strides(bufs: Iterable[BufferLike]) -> tuple[int, ...] | None:
    """The descriptor strides of every buffer in turn (three each), or None if a descriptor cannot read one."""
    strides: tuple[int, ...] = ()
    for t in bufs:
        st = _tma_strides(t)
        if st is None:
            return None
        strides += st
    return strides


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
    return _all_tma_strides((q, k, v, out))


def _fwd_tma_key(dtype: str, causal: bool, raw_max: bool, cfg: tuple[int, int, int, int, bool], block_d: int) -> tuple:
    """_FWD_TMA_KERNEL's cache key of one specialisation (cfg: BLOCK_M, BLOCK_N, warps, stages, warp_specialize)."""
    return (dtype, causal, raw_max, block_d, *cfg)


def _fwd_tma_config(d: int, dtype: str, lq: int, lk: int) -> tuple[int, int, int, int, bool]:
    """_FWD_TMA_CONFIGS's entry, tiles shrunk to the sequences as _config does."""
    *tiles, ws = _FWD_TMA_CONFIGS[d]
    return (*_config({d: tuple(tiles)}, d, dtype, lq, lk), ws)


def _forward_tma(q: BufferLike, k: BufferLike, v: BufferLike, out: BufferLike, lse: BufferLike,
                 strides: tuple[int, ...], causal: bool, scale: float) -> _FwdPlan:  # fmt: skip
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
    tail = (*strides, b, hq, hkv, hq // hkv, lq, lk, scale * _LOG2E, *fn._consts)  # type: ignore[attr-defined]
    return _FwdPlan(fn, (cdiv(lq, bm), b * hq, 1), [0, 0, 0, 0, 0, *tail], (0, 1, 2, 3, 4))


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
    return _all_tma_strides(bufs[name] for name in _BWD_TMA_BUFS[kernel])


def _bwd_tma_config(kernel: str, d: int, lq: int, lk: int) -> tuple[int, int, int, int]:
    """The kernel's table entry, tiles shrunk to the sequences as _config does (16-bit: the TMA kernels
    take no float32, so none of _config's float32 halving applies)."""
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


def _bwd_tma_args(kernel: str, fn: LaunchFn, bufs: dict[str, BufferLike], strides: tuple[int, ...],
                  lse: BufferLike, delta: int, scale: float) -> tuple:  # fmt: skip
    """The arguments of ``fn`` from _bwd_tma_build; ``strides`` from _bwd_tma_strides."""
    q, k = bufs["q"], bufs["k"]
    names = _BWD_TMA_BUFS[kernel]
    args: dict[str, object] = {n: bufs[n].ptr for n in names}
    args.update(zip([s for n in names for s in _BWD_TMA_STRIDE_ARGS[n]], strides))
    args.update(
        lse=lse.ptr, delta=delta, B=q.shape[0], Hq=q.shape[1], Hkv=k.shape[1], GROUP=q.shape[1] // k.shape[1],
        Lq=q.shape[2], Lk=k.shape[2], qk_scale=scale * _LOG2E, sm_scale=scale, **fn._consts,  # type: ignore[attr-defined]
    )  # fmt: skip
    kern = _DKDV_TMA_KERNEL if kernel == "dkdv" else _DQ_TMA_KERNEL
    return tuple([args[n] for n in kern.arg_names])


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
            reach = 1
            for s, st in zip(t.shape, t.strides):  # (a loop, not sum() over a generator: per attention call)
                reach += (s - 1) * abs(st)
            worst = max(worst, reach)
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
    # The host path of every attention layer: the launch's configuration depends only on the operands'
    # layouts and alignment, the flags and the tile tables, so it is worked out once per such signature
    # (_plan_forward) and a launch fills in the addresses (and the dropout stream's position).
    d = q.shape[-1] if len(q.shape) else 0
    block_d = _BLOCK_D.get(d) or max(16, next_pow2(d))
    sig = (
        tuple(q.shape), tuple(q.strides), tuple(k.shape), tuple(k.strides), tuple(v.shape), tuple(v.strides),
        tuple(out.shape), tuple(out.strides), tuple(lse.shape), tuple(lse.strides),
        q.dtype, k.dtype, v.dtype, out.dtype, lse.dtype,
        None if mask is None else (tuple(mask.shape), tuple(mask.strides), mask.dtype),
        causal, scale, dropout_p, rng_ptr != 0,
        q.ptr % 16, k.ptr % 16, v.ptr % 16, out.ptr % 16, lse.ptr % 16,
        _FWD_TMA, _FWD_TMA_CONFIGS.get(block_d), _FWD_CONFIGS.get(block_d), _DECODE_CONFIG.get(block_d),
    )  # fmt: skip
    plan = _FWD_PLANS.get(sig)
    if plan is None:
        plan = _FWD_PLANS.put(sig, _plan_forward(q, k, v, out, lse, mask, causal, scale, dropout_p, rng_ptr))
    if plan.fn is None:  # nothing to compute
        return
    args = list(plan.template)
    dyn = (q.ptr, k.ptr, v.ptr, out.ptr, lse.ptr, 0 if mask is None else mask.ptr)
    for i, slot in enumerate(plan.slots):
        args[slot] = dyn[i]
    part = 0
    if plan.scratch:
        part = runtime.scratch(plan.scratch, stream)
        args[plan.part_slot] = part
    if plan.drop_slots:
        i_seed, i_offset, i_rng = plan.drop_slots
        args[i_seed], args[i_offset], args[i_rng] = seed & (2**63 - 1), offset, rng_ptr
    plan.fn(plan.grid, stream, tuple(args))
    if plan.scratch:
        b, hq, lq = lse.shape
        _combine(part, plan.grid[2], out, lse, b, hq, lq, d, block_d, stream)


class _FwdPlan:
    """One forward launch's configuration: the compiled kernel, its grid and its argument tuple with the
    addresses left at ``slots`` (q, k, v, o, lse[, mask]), the split-KV scratch's size and slot, and the
    dropout arguments' slots (seed, offset, rng)."""

    __slots__ = ("drop_slots", "fn", "grid", "part_slot", "scratch", "slots", "template")

    def __init__(self, fn, grid: tuple[int, int, int], template: list, slots: tuple[int, ...], scratch: int = 0,
                 part_slot: int = -1, drop_slots: tuple[int, ...] = ()) -> None:  # fmt: skip
        self.fn, self.grid, self.template, self.slots = fn, grid, template, slots
        self.scratch, self.part_slot, self.drop_slots = scratch, part_slot, drop_slots


_FWD_PLANS = PlanTable()
_BLOCK_D = {d: max(16, next_pow2(d)) for d in range(1, MAX_HEAD_DIM + 1)}


def _plan_forward(q: BufferLike, k: BufferLike, v: BufferLike, out: BufferLike, lse: BufferLike,
                  mask: BufferLike | None, causal: bool, scale: float, dropout_p: float,
                  rng_ptr: int) -> _FwdPlan:  # fmt: skip
    """attention_forward's checks and its choice of kernel, tiles and arguments for one signature."""
    b, hq, hkv, lq, lk, d = _dims(q, k, v)
    if tuple(out.shape) != tuple(q.shape) or tuple(lse.shape) != (b, hq, lq) or lse.dtype != "float32":
        raise ValueError(f"attention: out {out.shape} / lse {lse.shape} do not fit query {q.shape}")
    if b * hq * lq == 0:
        return _FwdPlan(None, (0, 0, 0), [], ())
    block_d = max(16, next_pow2(d))
    _, ms, kind, mtype = _mask_args(mask, b, hq, lq, lk)  # (the mask's address is read at each launch)
    dropout = dropout_p > 0.0
    split = lq <= DECODE_MAX_LQ and lk >= DECODE_MIN_LK
    tma = _fwd_tma_strides(q, k, v, out, kind, dropout, split)
    if tma is not None:  # the hot case: the TMA kernel
        return _forward_tma(q, k, v, out, lse, tma, causal, scale)
    table = _DECODE_CONFIG if split else _FWD_CONFIGS
    bm, bn, warps, stages = _config(table, block_d, q.dtype, lq, lk)
    it = _int_type(q, k, v, out, mask)
    grid_m = cdiv(lq, bm)
    splits, chunk, scratch = 1, lk, 0
    if split:
        n_blocks = cdiv(lk, bn)
        splits = max(1, min(max(1, n_blocks // 4), cdiv(16 * sm_count(), b * hq * grid_m), 64))
        chunk = cdiv(n_blocks, splits) * bn
        splits = cdiv(lk, chunk)
        scratch = splits * b * hq * lq * (block_d + 2) * 4
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
        q=0, k=0, v=0, o=0, lse=0, mask=0, part=0,
        sqb=q.strides[0], sqh=q.strides[1], sqm=q.strides[2], sqd=q.strides[3],
        skb=k.strides[0], skh=k.strides[1], skn=k.strides[2], skd=k.strides[3],
        svb=v.strides[0], svh=v.strides[1], svn=v.strides[2], svd=v.strides[3],
        sob=out.strides[0], soh=out.strides[1], som=out.strides[2], sod=out.strides[3],
        smb=ms[0], smh=ms[1], smm=ms[2], smn=ms[3],
        Hq=hq, GROUP=hq // hkv, Lq=lq, Lk=lk, D=d, chunk=chunk,
        qk_scale=scale * _LOG2E, drop_p=dropout_p, drop_scale=1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0,
        seed=0, offset=0, rng=0,
    )  # fmt: skip
    args.update(fn._consts)  # type: ignore[attr-defined]
    names = list(_FWD.arg_names)
    slots = tuple(names.index(n) for n in ("q", "k", "v", "o", "lse", "mask"))
    drop = tuple(names.index(n) for n in ("seed", "offset", "rng")) if dropout else ()
    return _FwdPlan(fn, (grid_m, b * hq, splits), [args[n] for n in names], slots, scratch, names.index("part"), drop)


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
    # As the forward: the launches (delta, dK / dV, dQ) are worked out once per signature of layouts,
    # alignments, flags and tile tables (_plan_backward), and a call fills in the addresses, the delta
    # scratch and the dropout stream's position.
    d = q.shape[-1] if len(q.shape) else 0
    block_d = _BLOCK_D.get(d) or max(16, next_pow2(d))
    sig = (
        tuple(q.shape), tuple(q.strides), tuple(k.shape), tuple(k.strides), tuple(v.shape), tuple(v.strides),
        tuple(out.shape), tuple(out.strides), tuple(dout.shape), tuple(dout.strides), tuple(lse.shape),
        tuple(lse.strides), tuple(dq.shape), tuple(dq.strides), tuple(dk.shape), tuple(dk.strides),
        tuple(dv.shape), tuple(dv.strides),
        q.dtype, k.dtype, v.dtype, out.dtype, dout.dtype, lse.dtype, dq.dtype, dk.dtype, dv.dtype,
        None if mask is None else (tuple(mask.shape), tuple(mask.strides), mask.dtype, mask.ptr % 16),
        causal, scale, dropout_p, rng_ptr != 0,
        q.ptr % 16, k.ptr % 16, v.ptr % 16, out.ptr % 16, dout.ptr % 16, lse.ptr % 16, dq.ptr % 16,
        dk.ptr % 16, dv.ptr % 16,
        _BWD_TMA, _DKDV_TMA_CONFIGS.get(d), _DQ_TMA_CONFIGS.get(d), _DKDV_CONFIGS.get(block_d),
        _DQ_CONFIGS.get(block_d),
    )  # fmt: skip
    seed &= 2**63 - 1
    plan = _BWD_PLANS.get(sig)
    if plan is None:
        plan = _BWD_PLANS.put(sig, _plan_backward(q, k, v, out, dout, lse, dq, dk, dv, mask, causal, scale,
                                                  dropout_p, seed, offset, rng_ptr, stream))  # fmt: skip
    if not plan.launches:
        return
    delta = runtime.scratch(plan.reserve + plan.delta_bytes, stream) + plan.reserve
    dyn = (q.ptr, k.ptr, v.ptr, out.ptr, dout.ptr, lse.ptr, dq.ptr, dk.ptr, dv.ptr,
           0 if mask is None else mask.ptr, delta, seed, offset, rng_ptr)  # (the order of _DYN)  # fmt: skip
    for fn, grid, template, slots in plan.launches:
        args = list(template)
        for position, index in slots:
            args[position] = dyn[index]
        fn(grid, stream, tuple(args))


# The per-call values of a backward launch, in the order attention_backward lists them.
_DYN = ("q", "k", "v", "out", "dout", "lse", "dq", "dk", "dv", "mask", "delta", "seed", "offset", "rng")


class _Slot(int):
    """A per-call value met while planning (an address, delta's scratch, the dropout position): the value
    itself, tagged with its index in _DYN, so the plan knows which arguments a call fills in."""

    index: int


def _slot(value: int, name: str) -> _Slot:
    tagged = _Slot(value)
    tagged.index = _DYN.index(name)
    return tagged


class _Addressed:
    """A buffer's layout with its address tagged (_Slot): what _plan_backward reads instead of the buffer."""

    __slots__ = ("dtype", "ptr", "shape", "strides")
    ptr: int  # (a _Slot)
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str

    def __init__(self, t: BufferLike, name: str) -> None:
        self.shape, self.strides, self.dtype, self.ptr = tuple(t.shape), tuple(t.strides), t.dtype, _slot(t.ptr, name)


class _BwdPlan:
    """The backward's launches for one signature, each (kernel, grid, argument template, (position, _DYN
    index) of every per-call value), and delta's scratch: ``delta_bytes`` past a ``reserve`` the TMA
    kernels' descriptors take from the start of the stream's scratch."""

    __slots__ = ("delta_bytes", "launches", "reserve")

    def __init__(self, launches: list, reserve: int = 0, delta_bytes: int = 0) -> None:
        self.launches, self.reserve, self.delta_bytes = launches, reserve, delta_bytes


_BWD_PLANS = PlanTable()


def _record(launches: list, fn: LaunchFn, grid: Grid, args: tuple) -> None:
    """Keep one launch of a plan: its arguments with each _Slot replaced by 0 and its position noted."""
    slots = tuple((i, a.index) for i, a in enumerate(args) if a.__class__ is _Slot)
    template = [0 if a.__class__ is _Slot else a for a in args]
    launches.append((fn, grid, template, slots))


def _plan_backward(q: BufferLike, k: BufferLike, v: BufferLike, out: BufferLike, dout: BufferLike,
                   lse: BufferLike, dq: BufferLike, dk: BufferLike, dv: BufferLike, mask: BufferLike | None,
                   causal: bool, scale: float, dropout_p: float, seed: int, offset: int, rng_ptr: int,
                   stream: int) -> _BwdPlan:  # fmt: skip
    """attention_backward's checks and its choice of kernels, tiles and arguments for one signature. The
    buffers are read through _Addressed stand-ins, so every per-call value reaches the arguments tagged."""
    q, k, v, out, dout, lse, dq, dk, dv = (
        _Addressed(t, name) for t, name in zip((q, k, v, out, dout, lse, dq, dk, dv), _DYN)
    )
    mask = None if mask is None else _Addressed(mask, "mask")
    launches: list = []
    b, hq, hkv, lq, lk, d = _dims(q, k, v)
    for name, t, like in (("dq", dq, q), ("dk", dk, k), ("dv", dv, v), ("out", out, q), ("dout", dout, q)):
        if tuple(t.shape) != tuple(like.shape):
            raise ValueError(f"attention_backward: {name} of shape {t.shape}, expected {like.shape}")
    if b * hkv * lk * d == 0 and b * hq * lq * d == 0:
        return _BwdPlan(launches)
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
    bufs: dict[str, BufferLike] = {"q": q, "k": k, "v": v, "do": dout, "dq": dq, "dk": dk, "dv": dv}
    tma: dict[str, tuple[LaunchFn, Grid, tuple[int, ...]]] = {}
    for name, runs in (("dkdv", b * hkv * lk > 0), ("dq", b * hq * lq > 0)):
        st = _bwd_tma_strides(name, bufs, kind, dropout) if runs else None
        if st is not None:
            tma[name] = (*_bwd_tma_build(name, q, k, causal), st)
    reserve = max([g[0] * g[1] * g[2] * getattr(fn, "global_scratch", 0) for fn, g, _ in tma.values()], default=0)
    reserve = cdiv(reserve, 256) * 256
    delta_bytes = max(1, b * hq * lq) * 4
    delta = _slot(runtime.scratch(reserve + delta_bytes, stream) + reserve, "delta")
    seed_ptr = dropout and rng_ptr != 0
    common = dict(
        Hq=hq, Lq=lq, Lk=lk, D=d, qk_scale=scale * _LOG2E, sm_scale=scale, drop_p=dropout_p,
        drop_scale=1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0, seed=_slot(seed, "seed"),
        offset=_slot(offset, "offset"), rng=_slot(rng_ptr, "rng") if seed_ptr else 0,
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
        _record(
            launches,
            fn,
            (cdiv(lq, dm), b * hq, 1),
            (out.ptr, dout.ptr, delta, hq, lq, d, *out.strides, *dout.strides, even_d, d_unit, dm, block_d),
        )
    # dK, dV: one program per key block and kv head
    if "dkdv" in tma:
        fn, grid, st = tma["dkdv"]
        _record(launches, fn, grid, _bwd_tma_args("dkdv", fn, bufs, st, lse, delta, scale))
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
        _record(launches, fn, (cdiv(lk, bn), b * hkv, 1), tuple([args[n] for n in _DKDV.arg_names]))
    # dQ: one program per query block and query head
    if "dq" in tma:
        fn, grid, st = tma["dq"]
        _record(launches, fn, grid, _bwd_tma_args("dq", fn, bufs, st, lse, delta, scale))
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
        _record(launches, fn, (cdiv(lq, bm), b * hq, 1), tuple([args[n] for n in _DQ.arg_names]))
    return _BwdPlan(launches, reserve, delta_bytes)


__all__ = ["attention_backward", "attention_forward"]
