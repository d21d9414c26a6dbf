"""Counter-based random numbers (Philox 4x32-10): rand, randn, randint, normal, uniform, bernoulli, dropout.

Element ``i`` of ``out`` (its row-major logical index, whatever the strides) draws
from counter ``offset + i`` under key ``seed``; the 64-bit counter is split into
two 32-bit Philox words. So a result depends only on (seed, offset, shape), never
on block sizes or grids: dropout can write its keep-mask (as torch's native_dropout
returns it) or have it recomputed from the same seed and offset. The caller advances
``offset`` by ``numel`` after each draw.

Every launcher also takes ``rng_ptr``: when nonzero (CUDA-graph capture), the kernel reads
(seed, base offset) from the device int64[2] at that address and adds ``offset`` to the base, so
a replayed graph draws whatever the generator's state is at replay time (:func:`write_rng_state`
fills that buffer before each replay). ``seed`` is then ignored.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import BufferLike
from .elementwise import cast_to
from .runtime import Kernel, cdiv, ptr_type
from .strided import layout, offset_of, size_types, stride_types

_BLOCK = 1024


@triton.jit
def _philox(seed, ctr):
    lo = (ctr & 0xFFFFFFFF).to(tl.uint32)
    hi = (ctr >> 32).to(tl.uint32)
    z = hi * 0
    return tl.philox(seed, lo, hi, z, z)


@triton.jit
def philox_state(rng, seed, offset, SEED_PTR: tl.constexpr):
    """(seed, offset) of a draw: the values passed (eager), or under CUDA-graph capture (``SEED_PTR``) the
    (seed, base offset) that each replay writes into the device int64[2] at ``rng``, plus this op's
    ``offset`` within the graph, fixed at capture. Both give the same numbers for the same pair."""
    if SEED_PTR:
        seed = tl.load(rng)
        offset = tl.load(rng + 1) + offset
    return seed, offset


@triton.jit
def _random_kernel(
    x,
    out,
    keep_out,
    p0,
    p1,
    seed,
    offset,
    rng,
    n,
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
    o0,
    o1,
    o2,
    o3,
    o4,
    o5,
    o6,
    o7,
    k0,
    k1,
    k2,
    k3,
    k4,
    k5,
    k6,
    k7,
    DIST: tl.constexpr,
    X_SCALAR: tl.constexpr,
    KEEP: tl.constexpr,
    SEED_PTR: tl.constexpr,
    RANK: tl.constexpr,
    CONTIG: tl.constexpr,
    BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    seed, offset = philox_state(rng, seed, offset, SEED_PTR)
    r0, r1, _, _ = _philox(seed, offset + i)
    u = tl.random.uint_to_uniform_float(r0)  # [0, 1)
    if CONTIG:
        io = i
        ix = i
        ik = i
    else:
        io = offset_of(i, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, RANK)
        ix = offset_of(i, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)
        ik = offset_of(i, S1, S2, S3, S4, S5, S6, S7, k0, k1, k2, k3, k4, k5, k6, k7, RANK)
    if DIST == "uniform":  # p0 + (p1 - p0) * u
        v = p0 + (p1 - p0) * u.to(tl.float64)
    elif DIST == "normal":  # mean p0, std p1 (Box-Muller on two words)
        u2 = tl.random.uint_to_uniform_float(r1)
        n0, _ = tl.random.pair_uniform_to_normal(u, u2)
        v = p0 + p1 * n0.to(tl.float64)
    elif DIST == "randint":  # [p0, p1): 64 random bits modulo the range
        bits = (r0.to(tl.uint64) << 32) | r1.to(tl.uint64)
        span = (p1 - p0).to(tl.uint64)
        v = p0 + (bits % span).to(tl.int64)
    elif DIST == "bernoulli":  # p from the scalar p0 or from buffer x
        if X_SCALAR:
            prob = p0
        else:
            prob = tl.load(x + ix, mask=mask, other=0).to(tl.float64)
        v = (u.to(tl.float64) < prob).to(tl.int8)
    else:  # dropout: keep with probability 1 - p0, scaled by p1 = 1 / (1 - p0)
        xv = tl.load(x + ix, mask=mask, other=0).to(tl.float32)
        keep = u >= p0
        # x * mask * scale, as torch: a dropped NaN or inf stays NaN (0 * inf), it is not zeroed.
        v = xv * (keep.to(tl.float32) * p1.to(tl.float32))
        if KEEP:
            tl.store(keep_out + ik, cast_to(keep, keep_out.dtype.element_ty), mask=mask)
    tl.store(out + io, cast_to(v, out.dtype.element_ty), mask=mask)


_RANDOM = Kernel(_random_kernel)


def _launch(
    dist: str,
    x: BufferLike | None,
    out: BufferLike,
    p0: float | int,
    p1: float | int,
    seed: int,
    offset: int,
    stream: int,
    keep: BufferLike | None = None,
    rng_ptr: int = 0,
) -> None:
    strides = [out.strides] if x is None else [out.strides, x.strides]
    for other in (x, keep):
        if other is not None and tuple(other.shape) != tuple(out.shape):
            raise ValueError(f"shape mismatch: {tuple(other.shape)} vs {tuple(out.shape)}")
    if keep is not None:
        strides.append(keep.strides)
    lay = layout(out.shape, strides, reorder=False)
    if lay.n == 0:
        return
    x_scalar = x is None
    pt = "i64" if dist == "randint" else "fp64"
    key = (
        dist,
        out.dtype,
        None if x is None else x.dtype,
        None if keep is None else keep.dtype,
        lay.rank,
        lay.contiguous,
        rng_ptr != 0,
    )
    fn = _RANDOM.cache.get(key)
    if fn is None:
        it = "i64"
        types = {
            "x": "i64" if x is None else ptr_type(x.dtype),
            "out": ptr_type(out.dtype),
            "keep_out": "i64" if keep is None else ptr_type(keep.dtype),
            "p0": pt,
            "p1": pt,
            "seed": "i64",
            "offset": "i64",
            "rng": "*i64" if rng_ptr else "i64",
            "n": it,
            **size_types(it),
            **stride_types("x", it),
            **stride_types("o", it),
            **stride_types("k", it),
        }
        consts = dict(
            DIST=dist,
            X_SCALAR=x_scalar,
            KEEP=keep is not None,
            SEED_PTR=rng_ptr != 0,
            RANK=lay.rank,
            CONTIG=lay.contiguous,
            BLOCK=_BLOCK,
        )
        fn = _RANDOM.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    xs = lay.strides[1] if x is not None else (0,) * 8
    ks = lay.strides[-1] if keep is not None else (0,) * 8
    fn(
        (cdiv(lay.n, _BLOCK), 1, 1),
        stream,
        (
            0 if x is None else x.ptr,
            out.ptr,
            0 if keep is None else keep.ptr,
            p0,
            p1,
            seed & (2**63 - 1),
            offset,
            rng_ptr,
            lay.n,
            *lay.sizes,
            *xs,
            *lay.strides[0],
            *ks,
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def rand(out: BufferLike, seed: int, offset: int = 0, *, stream: int = 0, rng_ptr: int = 0) -> None:
    """Uniform [0, 1) into ``out`` (float dtypes)."""
    _launch("uniform", None, out, 0.0, 1.0, seed, offset, stream, rng_ptr=rng_ptr)


def uniform(
    out: BufferLike, low: float, high: float, seed: int, offset: int = 0, *, stream: int = 0, rng_ptr: int = 0
) -> None:
    """Uniform [low, high) into ``out``."""
    _launch("uniform", None, out, float(low), float(high), seed, offset, stream, rng_ptr=rng_ptr)


def randn(out: BufferLike, seed: int, offset: int = 0, *, stream: int = 0, rng_ptr: int = 0) -> None:
    """Standard normal into ``out``."""
    _launch("normal", None, out, 0.0, 1.0, seed, offset, stream, rng_ptr=rng_ptr)


def normal(
    out: BufferLike, mean: float, std: float, seed: int, offset: int = 0, *, stream: int = 0, rng_ptr: int = 0
) -> None:
    """Normal(mean, std) into ``out``."""
    _launch("normal", None, out, float(mean), float(std), seed, offset, stream, rng_ptr=rng_ptr)


def randint(
    out: BufferLike, low: int, high: int, seed: int, offset: int = 0, *, stream: int = 0, rng_ptr: int = 0
) -> None:
    """Integers uniform in [low, high) into ``out``."""
    if high <= low:
        raise ValueError(f"randint needs low < high, got [{low}, {high})")
    _launch("randint", None, out, int(low), int(high), seed, offset, stream, rng_ptr=rng_ptr)


def bernoulli(
    p: BufferLike | float, out: BufferLike, seed: int, offset: int = 0, *, stream: int = 0, rng_ptr: int = 0
) -> None:
    """``out = rand < p`` (1 or 0 in ``out.dtype``); ``p`` is a scalar or a buffer of ``out.shape``."""
    if isinstance(p, (int, float)):
        _launch("bernoulli", None, out, float(p), 0.0, seed, offset, stream, rng_ptr=rng_ptr)
    else:
        _launch("bernoulli", p, out, 0.0, 0.0, seed, offset, stream, rng_ptr=rng_ptr)


def dropout(
    x: BufferLike,
    out: BufferLike,
    p: float,
    seed: int,
    offset: int = 0,
    *,
    mask: BufferLike | None = None,
    stream: int = 0,
    rng_ptr: int = 0,
) -> None:
    """``out = x * keep / (1 - p)`` with ``keep = rand >= p`` (``out = x * 0`` for p = 1); ``mask``, if given, gets
    ``keep`` (in its dtype: bool for torch's native_dropout mask). Calling again with the same seed and offset
    recomputes the same ``keep``, so a backward may redraw the mask instead of storing it."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    _launch("dropout", x, out, float(p), scale, seed, offset, stream, keep=mask, rng_ptr=rng_ptr)


@triton.jit
def _rng_state_kernel(dst, src, seed, offset, FROM_PTR: tl.constexpr):
    seed, offset = philox_state(src, seed, offset, FROM_PTR)
    tl.store(dst, seed)
    tl.store(dst + 1, offset)


_RNG_STATE = Kernel(_rng_state_kernel)


def write_rng_state(dst: int, seed: int, offset: int, *, src: int = 0, stream: int = 0) -> None:
    """Write (seed, offset) into the device int64[2] at ``dst``, in stream order (a kernel whose
    arguments carry the values: capture-safe, and the host may change its copy at once). With ``src``:
    (src[0], src[1] + offset) instead, a snapshot of a captured draw's state (``seed`` is ignored)."""
    key = src != 0
    fn = _RNG_STATE.cache.get(key)
    if fn is None:
        types = {"dst": "*i64", "src": "*i64" if src else "i64", "seed": "i64", "offset": "i64"}
        fn = _RNG_STATE.build(key, types, dict(FROM_PTR=key), (), num_warps=1)
    fn((1, 1, 1), stream, (dst, src, seed & (2**63 - 1), offset, key))
