"""Indexing kernels: gather, scatter, index_select/add/put, embedding, masked ops, nonzero.

One kernel does every "indexed elementwise" op. It walks an iteration space (the index's
shape for gather/scatter, the output's for index_select, ...) through the shared strided
addressing (``strided.offset_of``); up to four index buffers are read at each point, and
each index picks a position along one *indexed dim* of the indexed side (the source for
``take``, the destination for ``put`` and ``add``), whose own strides are zero on those
dims in the iteration space. ``add`` accumulates with atomics, so duplicate indices are
correct; float16/bfloat16 and 8/16-bit integer destinations accumulate in a float32 /
int32 copy in per-stream scratch that is cast back afterwards (one rounding at the end;
no 16-bit atomics, no CAS loops).

Every index is bounds-checked on the device: an out-of-range index is skipped (never
read or written) and recorded, per index buffer, with ``atomic_max``/``atomic_min`` in a
small per-stream error block. The launcher reads that block back after the launch (one
16-int64 D2H copy, which waits for the stream) and raises :class:`IndexError` naming the
largest offending value, the dim and its size; the block is then cleared, so the next
launch starts clean. Negative indices wrap only where torch allows them (``index_put``).

``nonzero`` and ``masked_select`` use a device-side prefix sum in three launches: count
per block, an exclusive scan of the block counts (one program), then each block writes
its elements at ``block offset + local cumsum``. ``nonzero_count`` runs the first two and
reads the total back; the caller sizes the output with it and calls ``nonzero`` /
``masked_select``, which redo the scan (cheap: it reads only the mask) and never write
past the output they are given.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import triton
import triton.language as tl

from . import runtime as rt
from .buffer import MAX_RANK, Buffer, BufferLike, dtype_info, numel
from .elementwise import cast_to, copy, where
from .runtime import Kernel, cdiv, ptr_type
from .strided import layout, offset_of, size_types, stride_types

_MAX_INDICES = 4
_BLOCK = 1024

# ----------------------------------------------------------------------------------------------
# Error block
# ----------------------------------------------------------------------------------------------

_ERR_SLOTS = 2 * _MAX_INDICES  # per index buffer: largest too-large value + 1, smallest too-small value
# (context, stream) -> (address the kernel writes, host address the launcher reads, keep-alive)
_errors: dict[tuple[int, int], tuple[int, int, Any]] = {}


def _error_block(stream: int) -> tuple[int, int]:
    """A zeroed block of ``_ERR_SLOTS`` int64 private to ``stream``: (device address, host address).

    On the GPU it lives in pinned host memory mapped into the device, so reading it back costs a
    stream synchronisation and a host load, not a copy: the kernel's (rare) atomics go to the host.
    """
    ctx = 0 if rt.INTERPRET else rt.cuda().ensure_context()
    entry = _errors.get((ctx, stream))
    if entry is None:
        if rt.INTERPRET:
            host = np.zeros(_ERR_SLOTS, dtype=np.int64)
            entry = (host.ctypes.data, host.ctypes.data, host)
        else:
            host_ptr, dev_ptr = rt.cuda().mapped(8 * _ERR_SLOTS)  # never freed: one per stream
            entry = (dev_ptr, host_ptr, None)
        _errors[(ctx, stream)] = entry
    return entry[0], entry[1]


def _raise_if_bad(host: int, dims: list[tuple[int, int]], stream: int) -> None:
    """Wait for ``stream``, read the error block; raise IndexError for the first index buffer with a bad value."""
    if not rt.INTERPRET:
        rt.cuda().synchronize(stream)
    raw = np.frombuffer(ctypes.string_at(host, 8 * _ERR_SLOTS), dtype=np.int64)
    if not raw.any():
        return
    ctypes.memset(host, 0, 8 * _ERR_SLOTS)  # the stream is idle: no kernel can be writing it now
    for j, (dim, size) in enumerate(dims):
        hi, lo = int(raw[2 * j]), int(raw[2 * j + 1])
        if hi or lo:
            value = hi - 1 if hi else lo
            raise IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}")


# ----------------------------------------------------------------------------------------------
# The indexed elementwise kernel
# ----------------------------------------------------------------------------------------------


@triton.jit
def _checked_index(idx, off, mask, size, err, J: tl.constexpr, NEG: tl.constexpr):
    """Load one index per lane; record out-of-range values in ``err``; return (index, in-range mask)."""
    ix = tl.load(idx + off, mask=mask, other=0).to(tl.int64)
    hi = mask & (ix >= size)
    if NEG:
        lo = mask & (ix < -size)
    else:
        lo = mask & (ix < 0)
    zero = tl.zeros_like(ix)
    tl.atomic_max(err + 2 * J + zero, tl.where(hi, ix, 0) + 1, mask=hi, sem="relaxed")
    tl.atomic_min(err + 2 * J + 1 + zero, tl.where(lo, ix, 0), mask=lo, sem="relaxed")
    if NEG:
        ix = tl.where(ix < 0, ix + size, ix)
    return ix, mask & ~(hi | lo)


@triton.jit
def _index_kernel(dst, src, err, idx0, idx1, idx2, idx3, value, alpha, skip, n, size0, size1, size2, size3,
                  stride0, stride1, stride2, stride3, S1, S2, S3, S4, S5, S6, S7,
                  d0, d1, d2, d3, d4, d5, d6, d7, s0, s1, s2, s3, s4, s5, s6, s7,
                  a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7,
                  c0, c1, c2, c3, c4, c5, c6, c7, e0, e1, e2, e3, e4, e5, e6, e7,
                  MODE: tl.constexpr, NIDX: tl.constexpr, NEG: tl.constexpr, SRC_SCALAR: tl.constexpr,
                  SKIP: tl.constexpr, ACC: tl.constexpr, RANK: tl.constexpr, INT64: tl.constexpr,
                  BLOCK: tl.constexpr):
    if INT64:
        i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    do = offset_of(i, S1, S2, S3, S4, S5, S6, S7, d0, d1, d2, d3, d4, d5, d6, d7, RANK)
    so = offset_of(i, S1, S2, S3, S4, S5, S6, S7, s0, s1, s2, s3, s4, s5, s6, s7, RANK)
    ia = offset_of(i, S1, S2, S3, S4, S5, S6, S7, a0, a1, a2, a3, a4, a5, a6, a7, RANK)
    ix, ok = _checked_index(idx0, ia, mask, size0, err, 0, NEG)
    if SKIP:
        ok = ok & (ix != skip)
    addr = ix * stride0
    if NIDX > 1:
        ib = offset_of(i, S1, S2, S3, S4, S5, S6, S7, b0, b1, b2, b3, b4, b5, b6, b7, RANK)
        ix1, ok1 = _checked_index(idx1, ib, mask, size1, err, 1, NEG)
        addr += ix1 * stride1
        ok = ok & ok1
    if NIDX > 2:
        ic = offset_of(i, S1, S2, S3, S4, S5, S6, S7, c0, c1, c2, c3, c4, c5, c6, c7, RANK)
        ix2, ok2 = _checked_index(idx2, ic, mask, size2, err, 2, NEG)
        addr += ix2 * stride2
        ok = ok & ok2
    if NIDX > 3:
        ie = offset_of(i, S1, S2, S3, S4, S5, S6, S7, e0, e1, e2, e3, e4, e5, e6, e7, RANK)
        ix3, ok3 = _checked_index(idx3, ie, mask, size3, err, 3, NEG)
        addr += ix3 * stride3
        ok = ok & ok3
    addr = tl.where(ok, addr, 0)
    if MODE == "take":
        v = tl.load(src + (so + addr), mask=ok, other=0)
        tl.store(dst + do, cast_to(v, dst.dtype.element_ty), mask=mask)
    else:
        if SRC_SCALAR:
            v = tl.full([BLOCK], value, value.dtype)
        else:
            v = tl.load(src + so, mask=ok, other=0)
        if MODE == "put":
            tl.store(dst + (do + addr), cast_to(v, dst.dtype.element_ty), mask=ok)
        else:
            v = cast_to(v, ACC) * alpha.to(ACC)
            tl.atomic_add(dst + (do + addr), v, mask=ok, sem="relaxed")


_INDEX = Kernel(_index_kernel)

# Destinations ``add`` accumulates in directly (Triton atomics); the rest go through a wide copy.
_ATOMIC_DTYPES = ("float32", "float64", "int32", "int64")


def _wide(dtype: str) -> str:
    if dtype == "bool":
        raise TypeError("accumulating index ops do not support bool destinations")
    return "float32" if dtype_info(dtype).is_float else "int32"


def _check_index_dtype(b: BufferLike) -> None:
    if b.dtype not in ("int64", "int32"):
        raise TypeError(f"index buffers must be int64 or int32, got {b.dtype}")


def _launch(mode: str, dst: BufferLike, src: BufferLike | float | int | bool | None,
            indices: list[tuple[BufferLike, tuple[int, ...], int, int, int]], shape: tuple[int, ...],
            dst_dims: tuple[int, ...], src_strides: tuple[int, ...], *, neg: bool = False,
            alpha: float | int = 1, skip: int | None = None, stream: int) -> None:
    """One indexed elementwise launch over ``shape``.

    ``indices``: (index buffer, its strides over ``shape``, logical dim, size of that dim, its stride on the
    indexed side). ``dst_dims`` names, for each dim of ``shape``, the destination dim it walks (-1: none, as
    for the destination's indexed dims under ``put``/``add``); ``src_strides`` are over ``shape``.
    """
    if len(indices) > _MAX_INDICES:
        raise NotImplementedError(f"at most {_MAX_INDICES} index buffers, got {len(indices)}")
    for ib, *_ in indices:
        _check_index_dtype(ib)
    if numel(shape) == 0:
        return
    dshape, dstrides = _shape1(dst)
    if not shape:
        shape, dst_dims, src_strides = (1,), (0,), (0,)
        indices = [(b, (0,), d, s, st) for b, _, d, s, st in indices]
    src_scalar = not hasattr(src, "ptr")
    wide = None
    target: BufferLike = dst
    if mode == "add" and dst.dtype not in _ATOMIC_DTYPES:
        # No 16-bit or 8-bit atomics: accumulate in a float32/int32 copy in scratch, cast back after.
        wide = Buffer(rt.scratch(numel(dshape) * 4, stream), dshape, None, _wide(dst.dtype))
        copy(Buffer(dst.ptr, dshape, dstrides, dst.dtype), wide, stream=stream)
        dstrides = wide.strides
        target = wide
    indexed = {d for _, _, d, _, _ in indices} if mode != "take" else set()
    dst_st = tuple(0 if m < 0 else dstrides[m] for m in dst_dims)
    for j, (b, st, d, size, _) in enumerate(indices):
        if d in indexed:
            indices[j] = (b, st, d, size, dstrides[d])  # the wide copy's stride on the indexed dim
    acc = target.dtype
    strides = [dst_st, (0,) * len(shape) if src_scalar else src_strides]
    strides += [st for _, st, *_ in indices]
    lay = layout(shape, strides)
    k = len(indices)
    idt = tuple(b.dtype for b, *_ in indices)
    sdt = "scalar" if src_scalar else src.dtype  # type: ignore[union-attr]
    cdt_f = dtype_info(acc).is_float
    key = (mode, target.dtype, sdt, idt, neg, skip is not None, lay.rank, lay.int64)
    fn = _INDEX.cache.get(key)
    if fn is None:
        it = "i64" if lay.int64 else "i32"
        scalar = "fp64" if cdt_f else "i64"
        types = {"dst": ptr_type(target.dtype), "src": scalar if src_scalar else ptr_type(sdt), "err": "*i64",
                 "value": scalar, "alpha": scalar, "skip": "i64", "n": it, **size_types(it)}
        for j in range(_MAX_INDICES):
            types[f"idx{j}"] = ptr_type(idt[j]) if j < k else "i64"
            types[f"size{j}"] = "i64"
            types[f"stride{j}"] = "i64"
        for p in "dsabce":
            types.update(stride_types(p, it))
        consts = dict(MODE=mode, NIDX=k, NEG=neg, SRC_SCALAR=src_scalar, SKIP=skip is not None,
                      ACC=dtype_info(acc).tl, RANK=lay.rank, INT64=lay.int64, BLOCK=_BLOCK)
        fn = _INDEX.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    conv = float if cdt_f else int
    st = lay.strides
    idx_ptrs, sizes, istrides, ist = [], [], [], []
    for j in range(_MAX_INDICES):
        if j < k:
            b, _, _, size, stride = indices[j]
            idx_ptrs.append(b.ptr)
            sizes.append(size)
            istrides.append(stride)
            ist.extend(st[2 + j])
        else:
            idx_ptrs.append(0)
            sizes.append(0)
            istrides.append(0)
            ist.extend((0,) * MAX_RANK)
    err, err_host = _error_block(stream)
    value = conv(src) if src_scalar else 0  # type: ignore[arg-type]
    fn((cdiv(lay.n, _BLOCK), 1, 1), stream,
       (target.ptr, 0 if src_scalar else src.ptr, err, *idx_ptrs, value, conv(alpha),  # type: ignore[union-attr]
        0 if skip is None else int(skip), lay.n, *sizes, *istrides, *lay.sizes, *st[0], *st[1], *ist,
        *fn._consts))  # type: ignore[attr-defined]
    if wide is not None:
        copy(wide, Buffer(dst.ptr, dshape, _shape1(dst)[1], dst.dtype), stream=stream)
    _raise_if_bad(err_host, [(d, s) for _, _, d, s, _ in indices], stream)


def _dim(dim: int, rank: int) -> int:
    r = max(rank, 1)
    if not -r <= dim < r:
        raise IndexError(f"dim {dim} out of range for rank {rank}")
    return dim % r


def _shape1(b: BufferLike) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape and strides with rank 0 promoted to rank 1 (as torch's gather/scatter treat scalars)."""
    return (tuple(b.shape), tuple(b.strides)) if b.shape else ((1,), (0,))


def _with(t: tuple[int, ...], d: int, v: int) -> tuple[int, ...]:
    return t[:d] + (v,) + t[d + 1:]


# ----------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------


def gather(x: BufferLike, dim: int, index: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``dim`` (torch.gather; no negative indices)."""
    xs, xst = _shape1(x)
    ishape, ist = _shape1(index)
    oshape = _shape1(out)[0]
    dim = _dim(dim, len(x.shape))
    if len(ishape) != len(xs):
        raise ValueError("gather: index and x must have the same number of dims")
    if oshape != ishape:
        raise ValueError(f"gather: out.shape {tuple(out.shape)} != index.shape {tuple(index.shape)}")
    for d in range(len(xs)):
        if d != dim and ishape[d] > xs[d]:
            raise ValueError(f"gather: index.size({d}) = {ishape[d]} exceeds x.size({d}) = {xs[d]}")
    _launch("take", out, x, [(index, ist, dim, xs[dim], xst[dim])], ishape, tuple(range(len(ishape))),
            _with(xst, dim, 0), stream=stream)


def _scatter(mode: str, out: BufferLike, dim: int, index: BufferLike, src: BufferLike | float | int | bool,
             stream: int) -> None:
    os_, ost = _shape1(out)
    ishape, ist = _shape1(index)
    dim = _dim(dim, len(out.shape))
    if len(ishape) != len(os_):
        raise ValueError("scatter: index and out must have the same number of dims")
    sst: tuple[int, ...] = (0,) * len(ishape)
    if hasattr(src, "ptr"):
        ss, sst = _shape1(src)  # type: ignore[arg-type]
        if len(ss) != len(ishape) or any(i > s for i, s in zip(ishape, ss)):
            raise ValueError(f"scatter: index.shape {tuple(index.shape)} exceeds src.shape {tuple(src.shape)}")
    for d in range(len(os_)):
        if d != dim and ishape[d] > os_[d]:
            raise ValueError(f"scatter: index.size({d}) = {ishape[d]} exceeds out.size({d}) = {os_[d]}")
    _launch(mode, out, src, [(index, ist, dim, os_[dim], ost[dim])], ishape,
            _with(tuple(range(len(ishape))), dim, -1), sst, stream=stream)


def scatter(out: BufferLike, dim: int, index: BufferLike, src: BufferLike | float | int | bool, *,
            stream: int = 0) -> None:
    """In place: ``out[..., index[..., i, ...], ...] = src[..., i, ...]`` (torch ``scatter_``; ``src`` may be a
    scalar). With duplicate indices the winner is unspecified, as in torch."""
    _scatter("put", out, dim, index, src, stream)


def scatter_add(out: BufferLike, dim: int, index: BufferLike, src: BufferLike, *, stream: int = 0) -> None:
    """In place: ``out[..., index[..., i, ...], ...] += src[..., i, ...]`` (torch ``scatter_add_``; atomic)."""
    _scatter("add", out, dim, index, src, stream)


def _vector_index(index: BufferLike) -> tuple[int, int]:
    """Length and stride of a 0-d or 1-d index."""
    if len(index.shape) > 1:
        raise ValueError("index must be 0-d or 1-d")
    return (index.shape[0], index.strides[0]) if index.shape else (1, 0)


def index_select(x: BufferLike, dim: int, index: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """``out = x`` with ``dim`` replaced by ``x[..., index[j], ...]`` (torch.index_select; no negative indices)."""
    xs, xst = _shape1(x)
    dim = _dim(dim, len(x.shape))
    n, istride = _vector_index(index)
    want = _with(xs, dim, n) if x.shape else tuple(index.shape)
    if tuple(out.shape) != want:
        raise ValueError(f"index_select: out.shape {tuple(out.shape)} != {want}")
    oshape = _shape1(out)[0]
    ist = tuple(istride if d == dim else 0 for d in range(len(oshape)))
    _launch("take", out, x, [(index, ist, dim, xs[dim], xst[dim])], oshape, tuple(range(len(oshape))),
            _with(xst, dim, 0), stream=stream)


def index_add(out: BufferLike, dim: int, index: BufferLike, src: BufferLike, *, alpha: float | int = 1,
              stream: int = 0) -> None:
    """In place: ``out[..., index[j], ...] += alpha * src[..., j, ...]`` (torch ``index_add_``; atomic)."""
    os_, ost = _shape1(out)
    dim = _dim(dim, len(out.shape))
    n, istride = _vector_index(index)
    ss, sst = _shape1(src)
    if ss != _with(os_, dim, n):
        raise ValueError(f"index_add: src.shape {tuple(src.shape)} != {_with(os_, dim, n)}")
    ist = tuple(istride if d == dim else 0 for d in range(len(ss)))
    _launch("add", out, src, [(index, ist, dim, os_[dim], ost[dim])], ss,
            _with(tuple(range(len(ss))), dim, -1), sst, alpha=alpha, stream=stream)


def index_put(out: BufferLike, indices: tuple[BufferLike, ...], values: BufferLike | float | int | bool, *,
              accumulate: bool = False, stream: int = 0) -> None:
    """In place: ``out[indices] = values`` (or ``+=`` with ``accumulate``), torch ``index_put_``.

    ``indices``: 1 to 4 int64/int32 buffers, already broadcast to one shape ``B``, indexing the leading
    ``len(indices)`` dims of ``out`` (permute ``out`` for other dims); negative indices count from the end.
    ``values`` has shape ``B + out.shape[len(indices):]`` (broadcast with strides 0) or is a scalar.
    """
    k = len(indices)
    if not 1 <= k <= min(_MAX_INDICES, len(out.shape)):
        raise ValueError(f"index_put takes 1 to {min(_MAX_INDICES, len(out.shape))} index buffers, got {k}")
    bshape = tuple(indices[0].shape)
    for ib in indices:
        if tuple(ib.shape) != bshape:
            raise ValueError("index_put: index buffers must be broadcast to one shape")
    tail = tuple(out.shape[k:])
    shape = bshape + tail
    if hasattr(values, "ptr"):
        if tuple(values.shape) != shape:  # type: ignore[union-attr]
            raise ValueError(f"index_put: values.shape {tuple(values.shape)} != {shape}")  # type: ignore[union-attr]
        vst = tuple(values.strides)  # type: ignore[union-attr]
    else:
        vst = (0,) * len(shape)
    nb = len(bshape)
    idx = [(ib, tuple(ib.strides) + (0,) * len(tail), j, out.shape[j], out.strides[j]) for j, ib in enumerate(indices)]
    dst_dims = (-1,) * nb + tuple(range(k, len(out.shape)))
    if accumulate:
        _launch("add", out, values, idx, shape, dst_dims, vst, neg=True, stream=stream)
    else:
        _launch("put", out, values, idx, shape, dst_dims, vst, neg=True, stream=stream)


def embedding(weight: BufferLike, indices: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """``out[*i, :] = weight[indices[*i], :]``; ``weight`` is ``(V, D)``, ``out`` is ``indices.shape + (D,)``."""
    if len(weight.shape) != 2:
        raise ValueError("embedding: weight must be 2-d")
    V, D = weight.shape
    shape = tuple(indices.shape) + (D,)
    if tuple(out.shape) != shape:
        raise ValueError(f"embedding: out.shape {tuple(out.shape)} != {shape}")
    nb = len(indices.shape)
    _launch("take", out, weight, [(indices, tuple(indices.strides) + (0,), 0, V, weight.strides[0])], shape,
            tuple(range(nb + 1)), (0,) * nb + (weight.strides[1],), stream=stream)


def embedding_backward(grad_out: BufferLike, indices: BufferLike, grad_weight: BufferLike, *,
                       padding_idx: int | None = None, stream: int = 0) -> None:
    """``grad_weight[indices[*i], :] += grad_out[*i, :]`` (atomic; zero ``grad_weight`` first for a fresh
    gradient). Rows equal to ``padding_idx`` are skipped, as torch's embedding backward."""
    if len(grad_weight.shape) != 2:
        raise ValueError("embedding_backward: grad_weight must be 2-d")
    V, D = grad_weight.shape
    shape = tuple(indices.shape) + (D,)
    if tuple(grad_out.shape) != shape:
        raise ValueError(f"embedding_backward: grad_out.shape {tuple(grad_out.shape)} != {shape}")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += V
    nb = len(indices.shape)
    _launch("add", grad_weight, grad_out, [(indices, tuple(indices.strides) + (0,), 0, V, grad_weight.strides[0])],
            shape, (-1,) * nb + (1,), tuple(grad_out.strides), skip=padding_idx, stream=stream)


def masked_fill(x: BufferLike, mask: BufferLike, value: float | int | bool, out: BufferLike, *,
                stream: int = 0) -> None:
    """``out = value where mask else x`` (``mask`` bool, broadcast to ``out.shape``); ``out`` may be ``x``."""
    if mask.dtype != "bool":
        raise TypeError(f"masked_fill: mask must be bool, got {mask.dtype}")
    where(mask, value, x, out, stream=stream)


# ----------------------------------------------------------------------------------------------
# Prefix-sum compaction: nonzero, masked_select
# ----------------------------------------------------------------------------------------------

_SCAN_BLOCK = 2048


@triton.jit
def _count_kernel(m, part, n, S1, S2, S3, S4, S5, S6, S7, m0, m1, m2, m3, m4, m5, m6, m7,
                  RANK: tl.constexpr, INT64: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if INT64:
        i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        i = pid * BLOCK + tl.arange(0, BLOCK)
    valid = i < n
    mo = offset_of(i, S1, S2, S3, S4, S5, S6, S7, m0, m1, m2, m3, m4, m5, m6, m7, RANK)
    t = (tl.load(m + mo, mask=valid, other=0) != 0) & valid
    tl.store(part + pid, tl.sum(t.to(tl.int32)).to(tl.int64))


@triton.jit
def _offsets_kernel(part, nblocks, BLOCK: tl.constexpr):
    """In place exclusive scan of ``nblocks`` counts (one program); the total goes to ``part[nblocks]``."""
    carry = tl.zeros([], tl.int64)
    for s in range(0, nblocks, BLOCK):
        j = s + tl.arange(0, BLOCK)
        c = tl.load(part + j, mask=j < nblocks, other=0)
        inc = tl.cumsum(c, 0)
        tl.store(part + j, inc - c + carry, mask=j < nblocks)
        carry += tl.sum(c)
    tl.store(part + nblocks, carry)


@triton.jit
def _compact_kernel(m, x, out, part, n, cap, os0, os1, S1, S2, S3, S4, S5, S6, S7,
                    m0, m1, m2, m3, m4, m5, m6, m7, x0, x1, x2, x3, x4, x5, x6, x7,
                    Z1, Z2, Z3, Z4, Z5, Z6, Z7, NONZERO: tl.constexpr, RANK: tl.constexpr, ZRANK: tl.constexpr,
                    INT64: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if INT64:
        i = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        i = pid * BLOCK + tl.arange(0, BLOCK)
    valid = i < n
    mo = offset_of(i, S1, S2, S3, S4, S5, S6, S7, m0, m1, m2, m3, m4, m5, m6, m7, RANK)
    t = (tl.load(m + mo, mask=valid, other=0) != 0) & valid
    ti = t.to(tl.int32)
    pos = tl.load(part + pid) + (tl.cumsum(ti, 0) - ti).to(tl.int64)
    keep = t & (pos < cap)  # never past the output the caller sized
    if NONZERO:
        # Coordinates of the row-major logical index over the original shape, innermost first.
        rem = i.to(tl.int64)
        base = out + pos * os0
        if ZRANK > 7:
            tl.store(base + 7 * os1, rem % Z7, mask=keep)
            rem = rem // Z7
        if ZRANK > 6:
            tl.store(base + 6 * os1, rem % Z6, mask=keep)
            rem = rem // Z6
        if ZRANK > 5:
            tl.store(base + 5 * os1, rem % Z5, mask=keep)
            rem = rem // Z5
        if ZRANK > 4:
            tl.store(base + 4 * os1, rem % Z4, mask=keep)
            rem = rem // Z4
        if ZRANK > 3:
            tl.store(base + 3 * os1, rem % Z3, mask=keep)
            rem = rem // Z3
        if ZRANK > 2:
            tl.store(base + 2 * os1, rem % Z2, mask=keep)
            rem = rem // Z2
        if ZRANK > 1:
            tl.store(base + os1, rem % Z1, mask=keep)
            rem = rem // Z1
        tl.store(base, rem, mask=keep)
    else:
        xo = offset_of(i, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)
        v = tl.load(x + xo, mask=keep, other=0)
        tl.store(out + pos * os0, v, mask=keep)


_COUNT = Kernel(_count_kernel)
_OFFSETS = Kernel(_offsets_kernel)
_COMPACT = Kernel(_compact_kernel)


def _scan_counts(mask: BufferLike, strides: list[tuple[int, ...]], stream: int):  # type: ignore[no-untyped-def]
    """Launch the count and offset passes; returns (layout, nblocks, scratch pointer of the offsets)."""
    lay = layout(tuple(mask.shape), strides, reorder=False)  # keep the row-major logical order
    nblocks = cdiv(lay.n, _SCAN_BLOCK)
    part = rt.scratch(8 * (nblocks + 1), stream)
    it = "i64" if lay.int64 else "i32"
    key = (mask.dtype, lay.rank, lay.int64)
    fn = _COUNT.cache.get(key)
    if fn is None:
        types = {"m": ptr_type(mask.dtype), "part": "*i64", "n": it, **size_types(it), **stride_types("m", it)}
        consts = dict(RANK=lay.rank, INT64=lay.int64, BLOCK=_SCAN_BLOCK)
        fn = _COUNT.build(key, types, consts, (), num_warps=8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn((nblocks, 1, 1), stream, (mask.ptr, part, lay.n, *lay.sizes, *lay.strides[0], *fn._consts))  # type: ignore[attr-defined]
    off = _OFFSETS.cache.get(0)
    if off is None:
        off = _OFFSETS.build(0, {"part": "*i64", "nblocks": "i32"}, dict(BLOCK=1024), (), num_warps=4)
    off((1, 1, 1), stream, (part, nblocks, 1024))
    return lay, nblocks, part


def nonzero_count(mask: BufferLike, *, stream: int = 0) -> int:
    """How many elements of ``mask`` (any dtype, any strides) are nonzero: the length of ``nonzero``'s and of
    ``masked_select``'s output. Waits for ``stream`` (the count is read back)."""
    if numel(tuple(mask.shape)) == 0:
        return 0
    _, nblocks, part = _scan_counts(mask, [tuple(mask.strides)] if mask.shape else [()], stream)
    raw = rt.read_int32(part + 8 * nblocks, 2, stream)
    return int(np.array(raw, dtype=np.int32).view(np.int64)[0])


def _compact(mask: BufferLike, x: BufferLike | None, out: BufferLike, nonzero: bool, stream: int) -> None:
    n = numel(tuple(mask.shape))
    if n == 0 or numel(tuple(out.shape)) == 0:
        return
    strides = [tuple(mask.strides)] + ([tuple(x.strides)] if x is not None else [])
    lay, nblocks, part = _scan_counts(mask, strides, stream)
    zshape = tuple(mask.shape)
    it = "i64" if lay.int64 else "i32"
    odt = out.dtype
    key = (mask.dtype, None if x is None else x.dtype, odt, nonzero, lay.rank, len(zshape), lay.int64)
    fn = _COMPACT.cache.get(key)
    if fn is None:
        types = {"m": ptr_type(mask.dtype), "x": ptr_type(x.dtype) if x is not None else "i64", "out": ptr_type(odt),
                 "part": "*i64", "n": it, "cap": "i64", "os0": "i64", "os1": "i64", **size_types(it),
                 **stride_types("m", it), **stride_types("x", it), **{f"Z{d}": "i64" for d in range(1, MAX_RANK)}}
        consts = dict(NONZERO=nonzero, RANK=lay.rank, ZRANK=max(len(zshape), 1), INT64=lay.int64,
                      BLOCK=_SCAN_BLOCK)
        fn = _COMPACT.build(key, types, consts, (), num_warps=8)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    xs = lay.strides[1] if x is not None else (0,) * MAX_RANK
    zs = tuple(zshape[1:]) + (1,) * (MAX_RANK - max(len(zshape), 1))
    os1 = out.strides[1] if len(out.shape) > 1 else 0
    fn((nblocks, 1, 1), stream,
       (mask.ptr, x.ptr if x is not None else 0, out.ptr, part, lay.n, out.shape[0], out.strides[0], os1,
        *lay.sizes, *lay.strides[0], *xs, *zs, *fn._consts))  # type: ignore[attr-defined]


def nonzero(mask: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """Row-major coordinates of the nonzero elements of ``mask``: ``out`` is int64 ``(nonzero_count(mask),
    mask.ndim)``. Elements past ``out.shape[0]`` are never written."""
    if out.dtype != "int64":
        raise TypeError("nonzero: out must be int64")
    if len(out.shape) != 2 or out.shape[1] != len(mask.shape):
        raise ValueError(f"nonzero: out must have shape (count, {len(mask.shape)}), got {tuple(out.shape)}")
    if not mask.shape:  # 0-d: one row of zero coordinates, nothing to write
        return
    _compact(mask, None, out, True, stream)


def masked_select(x: BufferLike, mask: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """``x``'s elements where ``mask`` (bool; both broadcast to one shape) is true, in row-major order, into the
    1-d ``out`` of length ``nonzero_count(mask)`` (dtype of ``x``)."""
    if mask.dtype != "bool":
        raise TypeError(f"masked_select: mask must be bool, got {mask.dtype}")
    if tuple(x.shape) != tuple(mask.shape):
        raise ValueError(f"masked_select: x.shape {tuple(x.shape)} != mask.shape {tuple(mask.shape)} (broadcast first)")
    if len(out.shape) != 1 or out.dtype != x.dtype:
        raise ValueError("masked_select: out must be 1-d with x's dtype")
    if not mask.shape:
        mask = Buffer(mask.ptr, (1,), (1,), mask.dtype)
        x = Buffer(x.ptr, (1,), (1,), x.dtype)
    _compact(mask, x, out, False, stream)


__all__ = ["embedding", "embedding_backward", "gather", "index_add", "index_put", "index_select", "masked_fill",
           "masked_select", "nonzero", "nonzero_count", "scatter", "scatter_add"]
