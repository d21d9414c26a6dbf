"""The KV-cache write: the new keys and values of every sequence stored at its own position, in one launch.

For every row (batch b, head h, new token t):

``slot = clamp(positions[b] + t, 0, max_len - 1)``;  ``keys[b, h, slot, :] = k_new[b, h, t, :]`` and the same
for the values, cast to the caches' dtype.

Operands: the caches ``keys`` / ``values`` are contiguous (batch, heads, max_len, head_dim) of one shape and
dtype; ``k_new`` / ``v_new`` are (batch, heads, T, head_dim) with any strides each (k comes out of the rotary
kernel contiguous, v is a transposed view of its projection, (batch, T, heads, head_dim) in memory);
``positions`` is an int32 / int64 (batch,) buffer on the device, read by the kernel: no host read, fixed
shapes, so the launch can be captured in a CUDA graph and a replay writes at the positions of the day.

Clamping may send several tokens of a sequence to one slot (the first or the last): the last of them in
token order writes it, as a sequence of writes would, so the result never depends on the programs' order.

One program per block of rows, each row a full head_dim vector: with head_dim's stride 1 (a constexpr flag)
and 16-element-divisible strides (Triton's divisibility attributes, set by the launcher) loads and stores
vectorise to 16 bytes.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info
from .elementwise import cast_to
from .runtime import Kernel, PlanTable, cdiv, next_pow2, ptr_type

_ROW_ELEMENTS = 2048  # elements of one tensor a program moves: rows per program = this / head_dim
_PROGRAMS = 128  # fewer rows per program while there would be fewer programs than this (decode: few rows)
_MIN_ELEMENTS = 512  # but no fewer elements than this: a thread's share stays a whole 16-byte vector


@triton.jit
def _kv_cache_write_kernel(
    kc, vc, kn, vn, pos, R, H, T, M,
    skb, skh, skt, skd, svb, svh, svt, svd, sp,
    D: tl.constexpr, K_UNIT: tl.constexpr, V_UNIT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    live = r < R
    t = r % T
    bh = r // T  # b * H + h: the cache's row block of this (sequence, head)
    b = bh // H
    h = bh % H
    u = tl.load(pos + b * sp, mask=live, other=0).to(tl.int64) + t
    slot = tl.minimum(tl.maximum(u, 0), M - 1)
    # A slot shared through the clamp is written by its last token only (t + 1 lands elsewhere unless clamped).
    live = live & ((t == T - 1) | ((u >= 0) & (u < M - 1)))
    d = tl.arange(0, BLOCK_D)
    mask = live[:, None] & (d < D)[None, :]
    dst = ((bh * M + slot) * D)[:, None] + d[None, :]
    kd = d if K_UNIT else d * skd
    vd = d if V_UNIT else d * svd
    k = tl.load(kn + (b * skb + h * skh + t * skt)[:, None] + kd[None, :], mask=mask)
    v = tl.load(vn + (b * svb + h * svh + t * svt)[:, None] + vd[None, :], mask=mask)
    tl.store(kc + dst, cast_to(k, kc.dtype.element_ty), mask=mask)
    tl.store(vc + dst, cast_to(v, vc.dtype.element_ty), mask=mask)


_KERNEL = Kernel(_kv_cache_write_kernel)
_STRIDES = ("skb", "skh", "skt", "skd", "svb", "svh", "svt", "svd")

# layout (shapes, strides, dtypes, whether the pointers are 16-byte aligned) -> (launch, grid, size and stride
# arguments, constexpr tail): the checks and the plan run once per layout, a call only reads pointers.
_Plan = tuple
_PLANS = PlanTable(256)  # a decode loop meets a few layouts


def _check(keys: BufferLike, values: BufferLike, k_new: BufferLike, v_new: BufferLike, positions: BufferLike) -> None:
    shape = tuple(keys.shape)
    if len(shape) != 4 or tuple(values.shape) != shape or values.dtype != keys.dtype:
        raise ValueError(f"kv_cache_write: keys and values must be caches of one 4-D shape and dtype, got "
                         f"{tuple(keys.shape)} {keys.dtype} and {tuple(values.shape)} {values.dtype}")  # fmt: skip
    for name, cache in (("keys", keys), ("values", values)):
        want = (shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1)
        if any(n > 1 and s != w for n, s, w in zip(shape, cache.strides, want)):
            raise ValueError(f"kv_cache_write: the {name} cache must be contiguous, got strides {tuple(cache.strides)}")
    if shape[2] == 0:
        raise ValueError(f"kv_cache_write: the caches have no slot to write (max_len 0), shape {shape}")
    new = tuple(k_new.shape)
    if len(new) != 4 or tuple(v_new.shape) != new or new[:2] != shape[:2] or new[3] != shape[3]:
        raise ValueError(f"kv_cache_write: new keys and values must be ({shape[0]}, {shape[1]}, T, {shape[3]}), got "
                         f"{tuple(k_new.shape)} and {tuple(v_new.shape)}")  # fmt: skip
    if positions.dtype not in ("int32", "int64") or tuple(positions.shape) != (shape[0],):
        raise ValueError(f"kv_cache_write: positions must be int32 / int64 ({shape[0]},), got "
                         f"{tuple(positions.shape)} {positions.dtype}")  # fmt: skip
    for name, b in (("keys", keys), ("k_new", k_new), ("v_new", v_new)):
        if not dtype_info(b.dtype).is_float:
            raise TypeError(f"kv_cache_write: {name} must be a float buffer, got {b.dtype}")


def _plan(keys: BufferLike, values: BufferLike, k_new: BufferLike, v_new: BufferLike, positions: BufferLike,
          aligned: bool) -> _Plan:  # fmt: skip
    _check(keys, values, k_new, v_new, positions)
    B, H, M, D = keys.shape
    T = k_new.shape[2]
    rows = B * H * T
    block_d = next_pow2(D)
    most, least = max(1, _ROW_ELEMENTS // block_d), max(1, _MIN_ELEMENTS // block_d)
    block_r = min(most, max(least, next_pow2(cdiv(rows, _PROGRAMS))))
    warps = 4 if block_r * block_d >= 4 * _MIN_ELEMENTS else 2  # 8+ elements a thread: 16-byte vectors
    k_unit, v_unit = k_new.strides[3] == 1 or D == 1, v_new.strides[3] == 1 or D == 1
    strides = (*k_new.strides, *v_new.strides)
    consts = {"D": D, "K_UNIT": k_unit, "V_UNIT": v_unit, "BLOCK_R": block_r, "BLOCK_D": block_d}
    # Strides divisible by 16 make every row's start 16-element aligned: the loads vectorise.
    divisible = [n for n, s in zip(_STRIDES, strides) if s % 16 == 0]
    ptrs = ("kc", "vc", "kn", "vn") if aligned else ()
    key = (keys.dtype, k_new.dtype, v_new.dtype, positions.dtype, *consts.values(), warps, ptrs, tuple(divisible))
    fn = _KERNEL.cache.get(key)
    if fn is None:
        types = {"kc": ptr_type(keys.dtype), "vc": ptr_type(values.dtype), "kn": ptr_type(k_new.dtype)}
        types.update({"vn": ptr_type(v_new.dtype), "pos": ptr_type(positions.dtype)})
        types.update({n: "i32" for n in ("R", "H", "T", "M")})
        types.update({n: "i64" for n in (*_STRIDES, "sp")})
        fn = _KERNEL.build(key, types, consts, (*ptrs, *divisible), num_warps=warps)
    tail = tuple(consts[k] for k in _KERNEL.arg_names if k in _KERNEL.constexpr_names)
    programs = cdiv(rows, block_r) if D else 0
    return fn, (programs, 1, 1), (rows, H, T, M, *strides, positions.strides[0], *tail)


def kv_cache_write(
    keys: BufferLike,
    values: BufferLike,
    k_new: BufferLike,
    v_new: BufferLike,
    positions: BufferLike,
    *,
    stream: int = 0,
) -> None:
    """Write ``k_new`` / ``v_new`` (batch, heads, T, head_dim) into the contiguous caches ``keys`` / ``values``
    (batch, heads, max_len, head_dim) at slots ``clamp(positions[b] + t, 0, max_len - 1)``, in one launch.

    ``positions``: int32 / int64 (batch,), read on the device. Where the clamp sends several tokens to one
    slot, the last of them writes it. Values are cast to the caches' dtype."""
    kc, vc, kn, vn = keys.ptr, values.ptr, k_new.ptr, v_new.ptr
    aligned = (kc | vc | kn | vn) % 16 == 0
    key = (keys.shape, keys.strides, values.shape, values.strides, keys.dtype, values.dtype, k_new.shape,
           k_new.strides, k_new.dtype, v_new.shape, v_new.strides, v_new.dtype, positions.shape, positions.strides,
           positions.dtype, aligned)  # fmt: skip
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.put(key, _plan(keys, values, k_new, v_new, positions, aligned))
    fn, grid, args = plan
    if grid[0]:
        fn(grid, stream, (kc, vc, kn, vn, positions.ptr, *args))
