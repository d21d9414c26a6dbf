"""The indexed-elementwise kernel: one kernel for every op that reads or writes through index buffers.

It walks an iteration space (the index's shape for gather/scatter, the output's for index_select,
...) through the shared strided addressing (``strided.offset_of``); up to four index buffers are
read at each point, and each index picks a position along one *indexed dim* of the indexed side
(the source for ``take``, the destination for ``put`` and ``add``), whose own strides are zero on
those dims in the iteration space. ``add`` accumulates with atomics, so duplicate indices are
correct; float16/bfloat16 and 8/16-bit integer destinations accumulate in a float32 / int32 copy in
per-stream scratch that is cast back afterwards (one rounding at the end; no 16-bit atomics, no CAS
loops).

Every index is bounds-checked on the device: an out-of-range index is skipped (never read or
written) and recorded, per index buffer, with ``atomic_max``/``atomic_min`` in a small per-stream
error block. The launcher reads that block back after the launch (which waits for the stream) and
raises :class:`IndexError` naming the largest offending value, the dim and its size; the block is
then cleared, so the next launch starts clean. While a CUDA graph is captured nothing may wait: the
kernel records into a flag the graph owns instead, and the graph's next ``replay()`` raises the
IndexError (``capture.py``); the kernel itself stays memory-safe either way. Negative indices wrap
only where torch allows them (``index_put``).

Known ranges. A caller that knows, on the host, bounds of an index buffer's values (an index uploaded
from host data, an ``arange``) passes them as ``ranges``: when every index buffer is known to lie in
range, the launch records into a per-stream *sink* block that nobody reads and does not wait for the
stream (the kernel still skips any out-of-range index, so a wrong bound can never make it read or
write out of bounds); when the first index buffer not known to fit has *exact* bounds (both attained),
the host raises the very IndexError the device would have reported, before launching anything.

Shared by two families: ``index.py`` (gather, scatter, index_select, index_add, embedding) and
``getitem.py`` (index_put); each builds its iteration space and calls :func:`launch`.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import triton
import triton.language as tl

from genesis_storage.device import current_device

from . import capture, sync_debug
from . import runtime as rt
from .buffer import MAX_RANK, Buffer, BufferLike, dtype_info, numel
from .elementwise import cast_to, copy
from .runtime import Kernel, cdiv, ptr_type
from .strided import layout, offset_of, size_types, stride_types

MAX_INDICES = 4
_BLOCK = 1024

# ----------------------------------------------------------------------------------------------
# Error block
# ----------------------------------------------------------------------------------------------

_ERR_SLOTS = 2 * MAX_INDICES  # per index buffer: largest too-large value + 1, smallest too-small value
# (device, stream) -> (address the kernel writes, host address the launcher reads, keep-alive)
_errors: dict[tuple[int, int], tuple[int, int, Any]] = {}


def _error_block(stream: int) -> tuple[int, int]:
    """A zeroed block of ``_ERR_SLOTS`` int64 private to ``stream``: (device address, host address).

    On the GPU it lives in pinned host memory mapped into the device, so reading it back costs a
    stream synchronisation and a host load, not a copy: the kernel's (rare) atomics go to the host.
    """
    key = (current_device(), stream)  # keyed like runtime.scratch: no driver call per launch
    entry = _errors.get(key)
    if entry is None:
        if rt.INTERPRET:
            host = np.zeros(_ERR_SLOTS, dtype=np.int64)
            entry = (host.ctypes.data, host.ctypes.data, host)
        else:
            rt.cuda().ensure_context()  # a thread that has made no driver call yet has no context
            host_ptr, dev_ptr = rt.cuda().mapped(8 * _ERR_SLOTS)  # never freed: one per stream
            entry = (dev_ptr, host_ptr, None)
        _errors[key] = entry
    return entry[0], entry[1]


_sinks: dict[tuple[int, int], tuple[int, Any]] = {}


def _sink_block(stream: int) -> int:
    """A block like ``_error_block``'s that is never read: launches whose indices are known in range
    record into it (they record nothing, unless a caller's bounds were wrong). Private to ``stream``."""
    key = (current_device(), stream)
    entry = _sinks.get(key)
    if entry is None:
        if rt.INTERPRET:
            host = np.zeros(_ERR_SLOTS, dtype=np.int64)
            entry = (host.ctypes.data, host)
        else:
            rt.cuda().ensure_context()
            entry = (rt.cuda().mapped(8 * _ERR_SLOTS)[1], None)  # never freed: one per stream
        _sinks[key] = entry
    return entry[0]


# Host-known bounds of one index buffer's values: (lowest, highest, exact: both are attained).
KnownRange = tuple[int, int, bool]


def known_in_range(
    indices: list[tuple[BufferLike, tuple[int, ...], int, int, int]],
    ranges: list[KnownRange | None] | None,
    neg: bool = False,
) -> bool:
    """True when the host knows every index of every buffer is in range (no device check needed).

    Raises the IndexError the device check would report when the first buffer not known to fit has
    exact bounds (the device reports the first bad buffer: its largest too-large value, else its
    smallest too-small one; both are the exact bounds then). False: the device must check.
    """
    if not ranges or len(ranges) != len(indices):
        return False
    for (_, _, dim, size, _), known in zip(indices, ranges):
        if known is None:
            return False
        lo, hi, exact = known
        if (-size if neg else 0) <= lo and hi < size:
            continue
        if exact:
            value = hi if hi >= size else lo
            raise IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}")
        return False
    return True


def _raise_if_bad(host: int, dims: list[tuple[int, int]], stream: int) -> None:
    """Wait for ``stream``, read the error block; raise IndexError for the first index buffer with a bad value."""
    if not rt.INTERPRET:
        rt.cuda().synchronize(stream)
    raw = np.frombuffer(ctypes.string_at(host, 8 * _ERR_SLOTS), dtype=np.int64)
    if not raw.any():
        return
    ctypes.memset(host, 0, 8 * _ERR_SLOTS)  # the stream is idle: no kernel can be writing it now
    raise _bounds_error(raw, dims)


def _bounds_error(raw: np.ndarray, dims: list[tuple[int, int]], op: str | None = None) -> IndexError:
    """torch's IndexError for the first index buffer whose slots in ``raw`` record a bad value."""
    where = f" (in a replay of a CUDA graph that captured {op})" if op else ""
    for j, (dim, size) in enumerate(dims):
        hi, lo = int(raw[2 * j]), int(raw[2 * j + 1])
        if hi or lo:
            value = hi - 1 if hi else lo
            return IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}{where}")
    return IndexError(f"index out of bounds{where}")


def _captured_error_block(op: str, dims: list[tuple[int, int]]) -> int:
    """Under capture: a flag owned by the graph, checked at its next replay (no wait now)."""
    return capture.graph_error_flag(_ERR_SLOTS, lambda raw: _bounds_error(raw, dims, op))


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
def _index_kernel(
    dst,
    src,
    err,
    idx0,
    idx1,
    idx2,
    idx3,
    value,
    alpha,
    skip,
    n,
    size0,
    size1,
    size2,
    size3,
    stride0,
    stride1,
    stride2,
    stride3,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    d0,
    d1,
    d2,
    d3,
    d4,
    d5,
    d6,
    d7,
    s0,
    s1,
    s2,
    s3,
    s4,
    s5,
    s6,
    s7,
    a0,
    a1,
    a2,
    a3,
    a4,
    a5,
    a6,
    a7,
    b0,
    b1,
    b2,
    b3,
    b4,
    b5,
    b6,
    b7,
    c0,
    c1,
    c2,
    c3,
    c4,
    c5,
    c6,
    c7,
    e0,
    e1,
    e2,
    e3,
    e4,
    e5,
    e6,
    e7,
    MODE: tl.constexpr,
    NIDX: tl.constexpr,
    NEG: tl.constexpr,
    SRC_SCALAR: tl.constexpr,
    SKIP: tl.constexpr,
    ACC: tl.constexpr,
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
):
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


def launch(
    mode: str,
    dst: BufferLike,
    src: BufferLike | float | int | bool | None,
    indices: list[tuple[BufferLike, tuple[int, ...], int, int, int]],
    shape: tuple[int, ...],
    dst_dims: tuple[int, ...],
    src_strides: tuple[int, ...],
    *,
    neg: bool = False,
    alpha: float | int = 1,
    skip: int | None = None,
    op: str = "index",
    ranges: list[KnownRange | None] | None = None,
    stream: int,
) -> None:
    """One indexed elementwise launch over ``shape``; ``op`` names it in errors raised at a graph's replay.
    ``ranges``: host-known bounds of each index buffer's values, or None (see the module docstring).

    ``indices``: (index buffer, its strides over ``shape``, logical dim, size of that dim, its stride on the
    indexed side). ``dst_dims`` names, for each dim of ``shape``, the destination dim it walks (-1: none, as
    for the destination's indexed dims under ``put``/``add``); ``src_strides`` are over ``shape``.
    """
    if len(indices) > MAX_INDICES:
        raise NotImplementedError(f"at most {MAX_INDICES} index buffers, got {len(indices)}")
    for ib, *_ in indices:
        _check_index_dtype(ib)
    if numel(shape) == 0:
        return
    known = known_in_range(indices, ranges, neg)  # before any work: it may raise
    dshape, dstrides = shape1(dst)
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
        types = {
            "dst": ptr_type(target.dtype),
            "src": scalar if src_scalar else ptr_type(sdt),
            "err": "*i64",
            "value": scalar,
            "alpha": scalar,
            "skip": "i64",
            "n": it,
            **size_types(it),
        }
        for j in range(MAX_INDICES):
            types[f"idx{j}"] = ptr_type(idt[j]) if j < k else "i64"
            types[f"size{j}"] = "i64"
            types[f"stride{j}"] = "i64"
        for p in "dsabce":
            types.update(stride_types(p, it))
        consts = dict(
            MODE=mode,
            NIDX=k,
            NEG=neg,
            SRC_SCALAR=src_scalar,
            SKIP=skip is not None,
            ACC=dtype_info(acc).tl,
            RANK=lay.rank,
            INT64=lay.int64,
            BLOCK=_BLOCK,
        )
        fn = _INDEX.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    conv = float if cdt_f else int
    lst = lay.strides  # not `st`: that name is the index loop's tuple of strides above
    idx_ptrs: list[int] = []
    sizes: list[int] = []
    istrides: list[int] = []
    ist: list[int] = []
    for j in range(MAX_INDICES):
        if j < k:
            b, _, _, size, stride = indices[j]
            idx_ptrs.append(b.ptr)
            sizes.append(size)
            istrides.append(stride)
            ist.extend(lst[2 + j])
        else:
            idx_ptrs.append(0)
            sizes.append(0)
            istrides.append(0)
            ist.extend((0,) * MAX_RANK)
    dims = [(d, s) for _, _, d, s, _ in indices]
    captured = capture.capturing()
    # Eager: the per-stream block, read after the launch (IndexError at the call). Captured: nothing
    # may wait, so a flag owned by the graph records the bad index and the next replay() raises it.
    # Known in range: the sink, nothing to read back.
    if known:
        err, err_host = _sink_block(stream), 0
    else:
        if not captured:  # the eager check below waits for the stream
            sync_debug.check(f"{op} (bounds check of an index of unknown range)")
        err, err_host = (_captured_error_block(op, dims), 0) if captured else _error_block(stream)
    value = conv(src) if src_scalar else 0  # type: ignore[arg-type]
    fn(
        (cdiv(lay.n, _BLOCK), 1, 1),
        stream,
        (
            target.ptr,
            0 if src_scalar else src.ptr,  # type: ignore[union-attr]
            err,
            *idx_ptrs,
            value,
            conv(alpha),
            0 if skip is None else int(skip),
            lay.n,
            *sizes,
            *istrides,
            *lay.sizes,
            *lst[0],
            *lst[1],
            *ist,
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )
    if wide is not None:
        copy(wide, Buffer(dst.ptr, dshape, shape1(dst)[1], dst.dtype), stream=stream)
    if not (captured or known):
        _raise_if_bad(err_host, dims, stream)


def wrap_dim(dim: int, rank: int) -> int:
    r = max(rank, 1)
    if not -r <= dim < r:
        raise IndexError(f"dim {dim} out of range for rank {rank}")
    return dim % r


def shape1(b: BufferLike) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape and strides with rank 0 promoted to rank 1 (as torch's gather/scatter treat scalars)."""
    return (tuple(b.shape), tuple(b.strides)) if b.shape else ((1,), (0,))


def with_size(t: tuple[int, ...], d: int, v: int) -> tuple[int, ...]:
    return t[:d] + (v,) + t[d + 1 :]
