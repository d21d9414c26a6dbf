"""Batched matmul ``out[b] = a[b] @ b[b]`` over any strides (batch stride 0 broadcasts).

A classic Triton tiled GEMM: each program owns a ``BLOCK_M x BLOCK_N`` tile of one
batch, walks K in ``BLOCK_K`` steps with ``tl.dot`` accumulating in float32 (float64
for float64), and programs are grouped along M (``GROUP_M``) so neighbouring
programs reuse the same B panel from L2. float32 is exact IEEE (``input_precision
="ieee"``, FMA path) unless ``allow_tf32``; float16/bfloat16 use the tensor cores
(wgmma on Hopper) with float32 accumulation.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import INT32_LIMIT, BufferLike, dtype_info, extent
from .elementwise import cast_to, fill
from .runtime import INTERPRET, Kernel, cdiv, next_pow2, ptr_type

# The interpreter's dot reads bfloat16 storage as integers; upcast there (exact, same products).
_UPCAST_HALF_DOT = tl.constexpr(INTERPRET)


@triton.jit
def _matmul_kernel(
    a,
    b,
    out,
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
    ACC: tl.constexpr,
    PRECISION: tl.constexpr,
    INT64: tl.constexpr,
    A_K_CONTIG: tl.constexpr,
    B_N_CONTIG: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: GROUP_M row-tiles share each column sweep, so B tiles stay in L2.
    per_group = GROUP_M * grid_n
    group = pid // per_group
    first_m = group * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % size_m
    pid_n = (pid % per_group) // size_m
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
    for k0 in range(0, K, BLOCK_K):
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
    o = out + batch * sob + rm[:, None] * som + rn[None, :] * son
    tl.store(o, cast_to(acc, out.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


_MATMUL = Kernel(_matmul_kernel)


def _config(dtype: str, tf32: bool, M: int, N: int, K: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) by dtype; shrunk for small problems."""
    if dtype in ("float16", "bfloat16"):
        bm, bn, bk, w, s = 128, 128, 64, 8, 3
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


def matmul(a: BufferLike, b: BufferLike, out: BufferLike, *, allow_tf32: bool = False, stream: int = 0) -> None:
    """``out (B, M, N) = a (B, M, K) @ b (B, K, N)``; any strides, including batch stride 0."""
    if len(a.shape) != 3 or len(b.shape) != 3 or len(out.shape) != 3:
        raise ValueError("matmul takes rank-3 buffers (B, M, K) @ (B, K, N) -> (B, M, N)")
    B, M, K = a.shape
    if tuple(b.shape[:2]) != (B, K) or tuple(out.shape) != (B, M, b.shape[2]):
        raise ValueError(f"matmul shapes do not match: {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(out.shape)}")
    N = b.shape[2]
    if B * M * N == 0:
        return
    if K == 0:
        fill(out, 0, stream=stream)
        return
    if a.dtype != b.dtype or not dtype_info(a.dtype).is_float:
        raise TypeError(f"matmul needs matching float inputs, got {a.dtype} and {b.dtype}")
    acc = "float64" if a.dtype == "float64" else "float32"
    tf32 = allow_tf32 and a.dtype == "float32"
    precision = "tf32" if tf32 else "ieee"
    bm, bn, bk, warps, stages = _config(a.dtype, tf32, M, N, K)
    big = max(extent(tuple(t.shape), tuple(t.strides)) for t in (a, b, out)) >= INT32_LIMIT - 65536
    a_k = a.strides[2] == 1
    b_n = b.strides[2] == 1
    # Divisibility by 16 of the pointers and of the row/batch strides is part of the key: with it
    # the compiler can prove each row of a tile starts 16-byte aligned and use vector (and async) copies.
    strides = dict(
        zip(("sab", "sam", "sak", "sbb", "sbk", "sbn", "sob", "som", "son"), (*a.strides, *b.strides, *out.strides))
    )
    aligned = tuple(
        [n for n, t in (("a", a), ("b", b), ("out", out)) if t.ptr % 16 == 0]
        + [n for n in ("sab", "sam", "sbb", "sbk", "sob", "som") if strides[n] % 16 == 0]
    )
    key = (a.dtype, out.dtype, precision, big, a_k, b_n, bm, bn, bk, aligned)
    fn = _MATMUL.cache.get(key)
    if fn is None:
        it = "i64" if big else "i32"
        types = {
            "a": ptr_type(a.dtype),
            "b": ptr_type(b.dtype),
            "out": ptr_type(out.dtype),
            **{n: it for n in ("M", "N", "K", "sab", "sam", "sak", "sbb", "sbk", "sbn", "sob", "som", "son")},
        }
        consts = dict(
            ACC=dtype_info(acc).tl,
            PRECISION=precision,
            INT64=big,
            A_K_CONTIG=a_k,
            B_N_CONTIG=b_n,
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=8,
        )
        fn = _MATMUL.build(key, types, consts, aligned, num_warps=warps, num_stages=stages)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    grid = (cdiv(M, bm) * cdiv(N, bn), B, 1)
    fn(grid, stream, (a.ptr, b.ptr, out.ptr, M, N, K, *a.strides, *b.strides, *out.strides, *fn._consts))  # type: ignore[attr-defined]
