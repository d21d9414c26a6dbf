"""Strided addressing shared by every kernel family: one flat index -> one element offset.

A launcher first simplifies the iteration space (``buffer.collapse``), then passes
the sizes of dims 1..7 and each operand's 8 strides as plain integer arguments
(padded with 1 and 0), plus a constexpr ``RANK``. The kernel unravels a flat,
row-major index over that space innermost dim first; dims beyond ``RANK`` compile
away. Shapes and strides are runtime values, so a new shape never recompiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import triton
import triton.language as tl

from .buffer import INT32_LIMIT, MAX_RANK, collapse, extent, numel


@triton.jit
def offset_of(i, S1, S2, S3, S4, S5, S6, S7, t0, t1, t2, t3, t4, t5, t6, t7, RANK: tl.constexpr):
    """Element offset of flat index ``i`` for an operand with strides ``t0..t7``."""
    off = i * 0
    if RANK > 7:
        off += (i % S7) * t7
        i = i // S7
    if RANK > 6:
        off += (i % S6) * t6
        i = i // S6
    if RANK > 5:
        off += (i % S5) * t5
        i = i // S5
    if RANK > 4:
        off += (i % S4) * t4
        i = i // S4
    if RANK > 3:
        off += (i % S3) * t3
        i = i // S3
    if RANK > 2:
        off += (i % S2) * t2
        i = i // S2
    if RANK > 1:
        off += (i % S1) * t1
        i = i // S1
    return off + i * t0


@dataclass(frozen=True)
class Layout:
    """A simplified iteration space for ``k`` operands (operand 0 is the output)."""

    n: int  # elements
    rank: int  # after collapsing; >= 1
    contiguous: bool  # rank 1 and unit stride for every operand: the vectorised path
    int64: bool  # some offset or index reaches 2^31: index in int64
    sizes: tuple[int, ...]  # dims 1..7, padded with 1
    strides: tuple[tuple[int, ...], ...]  # per operand, 8 each, padded with 0


_layouts: dict[tuple, Layout] = {}


def layout(shape: tuple[int, ...], strides: list[tuple[int, ...]], reorder: bool = True) -> Layout:
    """The cached simplified layout of one elementwise iteration space.

    With ``reorder`` False the flat index stays the row-major logical index of ``shape``.
    """
    key = (tuple(shape), reorder, *strides)
    hit = _layouts.get(key)
    if hit is not None:
        return hit
    n = numel(shape)
    cshape, cstrides = collapse(tuple(shape), list(strides), reorder)
    if not cshape:  # one element (or all dims of size 1)
        cshape, cstrides = (1,), [(1,) for _ in strides]
    rank = len(cshape)
    if rank > MAX_RANK:
        raise ValueError(f"rank {rank} after collapsing exceeds the supported {MAX_RANK}")
    contiguous = rank == 1 and all(st[0] == 1 for st in cstrides)
    big = max([n] + [extent(cshape, st) for st in cstrides]) >= INT32_LIMIT - 65536
    sizes = tuple(cshape[1:]) + (1,) * (MAX_RANK - rank)
    padded = tuple(tuple(st) + (0,) * (MAX_RANK - rank) for st in cstrides)
    result = Layout(n, rank, contiguous, big, sizes, padded)
    if len(_layouts) > 4096:
        _layouts.clear()
    _layouts[key] = result
    return result


def stride_types(prefix: str, int_type: str) -> dict[str, str]:
    return {f"{prefix}{d}": int_type for d in range(MAX_RANK)}


def size_types(int_type: str) -> dict[str, str]:
    return {f"S{d}": int_type for d in range(1, MAX_RANK)}
