"""Many tensors into and out of the chunked row layout of sharded data parallelism, one launch each way.

FSDP shards every parameter by rows over ``world`` ranks. A tensor of shape ``(D0, *rest)`` takes
``chunk = ceil(D0 / world)`` rows per rank: ``n = chunk * prod(rest)`` elements at offset ``off`` of each
rank's flat shard of ``S`` elements (the tensors' slots one after the other). ``world`` such shards, one
after the other, are the reduce-scatter's input and the all-gather's output.

- ``chunk_cat`` writes that layout from whole tensors, casting to the output's dtype; the rows past a
  tensor's end (its padding) are zeros. This is torch's ``_chunk_cat`` along dim 0, which its FSDP2 uses
  for the reduce-scatter's input.
- ``chunk_split`` is the inverse: each tensor's rows back out of the layout, padding dropped (the
  all-gather's output copied out into the unsharded parameters; torch's FSDP2 does it with
  ``split_with_sizes_copy``).

Without these, a step of FSDP makes one or two copies per parameter each way: a GPT-2 large has 436
parameters, so some 1,700 small launches a step, each with its host cost. Here each way is one launch per
group, whatever its size.

A launch covers many tensors through an int64 table, as the optimizer kernels do: one row per tensor
``(numel, pointer, n, off)``, then one ``(tensor, first)`` row per program. A program copies one CHUNK of
one rank's slot of one tensor, so it finds its rank with one division and no element divides.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info, is_dense, numel, tl_dtype
from .elementwise import cast_to
from .optimizer import NotDense, Upload
from .runtime import Kernel, ptr_type

BLOCK = 1024  # elements per inner step
CHUNK = 8 * BLOCK  # elements per program, within one rank's slot of one tensor
_ROW = 4  # numel, pointer, n (the slot's elements per rank), off (the slot's offset in a rank's shard)


@triton.jit
def _program(table, chunk_base, VEC: tl.constexpr, CHUNK: tl.constexpr):
    """This program's tensor pointer field, the tensor's numel, its rank ``r``, the slot's ``n`` and ``off``,
    and the first element ``c0`` of the slot it copies (``r * n + c0`` in the tensor)."""
    pid = tl.program_id(0)
    t = tl.load(table + chunk_base + 2 * pid)
    first = tl.load(table + chunk_base + 2 * pid + 1)
    row = table + t * 4
    numel = tl.multiple_of(tl.load(row), VEC)
    n = tl.multiple_of(tl.load(row + 2), VEC)
    off = tl.multiple_of(tl.load(row + 3), VEC)
    r = first // n
    return row, numel, r, n, off, tl.multiple_of(first - r * n, CHUNK)


@triton.jit
def _chunk_cat_kernel(
    table, chunk_base, dst, shard_numel,
    SRC: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    row, numel, r, n, off, c0 = _program(table, chunk_base, VEC, CHUNK)
    src = tl.load(row + 1).to(tl.pointer_type(SRC))
    src_base = tl.multiple_of(r * n + c0, VEC)  # the element of the (padded) tensor at c0
    dst_base = tl.multiple_of(r * shard_numel + off + c0, VEC)
    # The bounds as scalars, multiples of VEC, so that the masks keep the 16-byte vector accesses.
    slot_end = tl.multiple_of(n - c0, VEC)  # this rank's slot ends (its padding included)
    data_end = tl.multiple_of(tl.minimum(slot_end, numel - src_base), VEC)  # the tensor's rows end
    for k in range(0, CHUNK, BLOCK):
        c = k + tl.arange(0, BLOCK)
        v = tl.load(tl.multiple_of(src + src_base, ALIGN) + c, mask=c < data_end, other=0)
        tl.store(dst + dst_base + c, cast_to(v, dst.dtype.element_ty), mask=c < slot_end)


@triton.jit
def _chunk_split_kernel(
    table, chunk_base, src, shard_numel,
    DST: tl.constexpr, VEC: tl.constexpr, ALIGN: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    row, numel, r, n, off, c0 = _program(table, chunk_base, VEC, CHUNK)
    dst = tl.load(row + 1).to(tl.pointer_type(DST))
    dst_base = tl.multiple_of(r * n + c0, VEC)
    src_base = tl.multiple_of(r * shard_numel + off + c0, VEC)
    end = tl.multiple_of(tl.minimum(n - c0, numel - dst_base), VEC)  # the slot's or the tensor's end
    for k in range(0, CHUNK, BLOCK):
        c = k + tl.arange(0, BLOCK)
        v = tl.load(src + src_base + c, mask=c < end)
        tl.store(tl.multiple_of(dst + dst_base, ALIGN) + c, cast_to(v, DST), mask=c < end)


_CAT = Kernel(_chunk_cat_kernel)
_SPLIT = Kernel(_chunk_split_kernel)


def slot_layout(shapes: Sequence[Sequence[int]], world: int) -> tuple[list[int], list[int], int]:
    """Each tensor's slot size ``n`` (elements per rank) and offset ``off`` in a rank's shard, and the
    shard's size ``S``, for tensors of these shapes sharded by rows over ``world`` ranks."""
    sizes, offsets, total = [], [], 0
    for shape in shapes:
        if len(shape) == 0:
            raise ValueError("chunk_cat: tensors must have at least one dimension (got a 0-d tensor)")
        row = 1
        for s in shape[1:]:
            row *= s
        n = -(-shape[0] // world) * row
        sizes.append(n)
        offsets.append(total)
        total += n
    return sizes, offsets, total


@functools.lru_cache(maxsize=128)
def _program_rows(extents: tuple[tuple[int, int], ...], world: int, chunk: int) -> np.ndarray:
    """The flat ``(tensor, first)`` program rows: for each tensor ``(n, covered)``, one program per CHUNK of
    each rank's slot of ``n`` elements, for the ranks whose slot starts below ``covered`` (every rank for
    chunk_cat, whose padding is written; for chunk_split only the ranks holding some of the tensor). The
    same every step of a training loop, so built once."""
    rows = []
    for t, (n, covered) in enumerate(extents):
        if n == 0:
            continue
        starts = np.arange(0, n, chunk, dtype=np.int64)
        for r in range(world):
            if r * n >= covered:
                break
            rows.append(np.stack([np.full_like(starts, t), r * n + starts], axis=1))
    out = np.concatenate(rows).reshape(-1) if rows else np.zeros(0, dtype=np.int64)
    out.flags.writeable = False
    return out


def _alignment(offsets: Sequence[int], pointers: Sequence[int], itemsizes: Sequence[int]) -> int:
    """The VEC hint: 16 bytes' worth of the narrower dtype's elements where every element offset is a
    multiple of it and every pointer is 16-byte aligned (then the offsets are too, in either dtype), else 1."""
    vec = 16 // min(itemsizes)
    if any(p % 16 for p in pointers) or any(v % vec for v in offsets):
        return 1
    return vec


def _table(
    tensors: Sequence[BufferLike], world: int, flat: BufferLike, cover_padding: bool, what: str
) -> tuple[np.ndarray, int, int, tuple, int, int]:
    """(table, program base, programs, upload key, shard size S, VEC) of a launch, after checking that the
    tensors are contiguous and that ``flat`` holds ``world * S`` elements."""
    shapes = [tuple(t.shape) for t in tensors]
    sizes, offsets, shard = slot_layout(shapes, world)
    flat_numel = numel(tuple(flat.shape))
    if flat_numel != world * shard:
        raise ValueError(
            f"{what}: the chunked buffer has {flat_numel} elements, but {len(shapes)} tensors of shapes "
            f"{shapes} over {world} chunks need {world * shard}"
        )
    rows: list[int] = []
    numels: list[int] = []
    extents = []
    ptrs = [flat.ptr]
    for t, shape, n, off in zip(tensors, shapes, sizes, offsets):
        if not is_dense(t):
            raise NotDense(f"{what}: tensors must be contiguous (shape {shape}, strides {tuple(t.strides)})")
        count = numel(shape)
        rows += [count, t.ptr if count else 0, n, off]
        numels.append(count)
        extents.append((n, world * n if cover_padding else count))
        if count:
            ptrs.append(t.ptr)
    head = np.array(rows, dtype=np.int64)
    progs = _program_rows(tuple(extents), world, CHUNK)
    itemsizes = [dtype_info(flat.dtype).itemsize, dtype_info(tensors[0].dtype).itemsize]
    vec = _alignment([shard, *sizes, *offsets, *numels], ptrs, itemsizes)
    table = np.concatenate([head, progs])
    return table, head.size, progs.size // 2, (CHUNK, _ROW, head.tobytes()), shard, vec


def chunk_cat(tensors: Sequence[BufferLike], world: int, out: BufferLike, *, upload: Upload, stream: int = 0) -> None:
    """Write ``tensors`` into ``out`` (``world`` shards of ``S`` elements, contiguous) in the chunked row
    layout, cast to ``out``'s dtype, padding rows zero. The tensors are contiguous and share one dtype."""
    _launch(_CAT, "SRC", "dst", tensors, world, out, True, upload, stream, "chunk_cat")


def chunk_split(src: BufferLike, world: int, outs: Sequence[BufferLike], *, upload: Upload, stream: int = 0) -> None:
    """The inverse of ``chunk_cat``: each of ``outs`` (contiguous, one dtype) gets its rows back from
    ``src`` (``world`` shards of ``S`` elements, contiguous), cast to its dtype."""
    _launch(_SPLIT, "DST", "src", outs, world, src, False, upload, stream, "chunk_split")


def _launch(
    kernel: Kernel,
    many_dtype: str,
    flat_name: str,
    tensors: Sequence[BufferLike],
    world: int,
    flat: BufferLike,
    cover_padding: bool,
    upload: Upload,
    stream: int,
    what: str,
) -> None:
    """One launch of ``kernel`` between the ``tensors`` (one dtype, the constexpr ``many_dtype`` names it) and
    the chunked ``flat`` buffer (the kernel's argument ``flat_name``)."""
    if not tensors:
        return
    if not is_dense(flat):
        raise NotDense(f"{what}: the chunked buffer must be contiguous (strides {tuple(flat.strides)})")
    dtype = tensors[0].dtype
    if any(t.dtype != dtype for t in tensors):
        raise TypeError(f"{what}: expected every tensor in {dtype}, got {sorted({t.dtype for t in tensors})}")
    table, base, programs, key, shard, vec = _table(tensors, world, flat, cover_padding, what)
    if programs == 0:
        return
    consts = {many_dtype: tl_dtype(dtype), "VEC": vec, "ALIGN": 16 if vec > 1 else 1, "BLOCK": BLOCK, "CHUNK": CHUNK}
    spec = (dtype, flat.dtype, vec)
    fn = kernel.cache.get(spec)
    if fn is None:
        types = {"table": "*i64", "chunk_base": "i64", flat_name: ptr_type(flat.dtype), "shard_numel": "i64"}
        fn = kernel.build(spec, types, consts, aligned=(flat_name,) if vec > 1 else (), num_warps=4)
    fn((programs, 1, 1), stream, (upload(table, key), base, flat.ptr, shard, *consts.values()))
