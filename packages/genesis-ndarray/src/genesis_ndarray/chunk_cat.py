"""Many arrays into and out of the chunked row layout of sharded data parallelism, one call each way.

FSDP shards an array of shape ``(D0, *rest)`` by rows over ``num_chunks`` ranks: each rank holds
``ceil(D0 / num_chunks)`` rows of it (the last ranks' rows past ``D0`` are padding). Laid out for the
collectives, ``num_chunks`` flat shards follow one another, each holding its rows of every array in turn:
``S = sum_i ceil(D0_i / num_chunks) * prod(rest_i)`` elements a shard.

- ``chunk_cat(out, arrays, num_chunks)`` writes that layout into ``out`` (``num_chunks * S`` elements), cast
  to ``out``'s dtype, padding zero: torch's ``_chunk_cat`` along dim 0, the reduce-scatter's input.
- ``chunk_split(src, num_chunks, out)`` is its inverse: each array of ``out`` gets its rows back (the
  all-gather's output copied out into the unsharded parameters).

cuda: one genesis_kernels.chunk_cat launch each way, whatever the number of arrays; cpu: torch's copies.
Neither reads anything back to the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # ndarray.py imports this module for its methods
    from .ndarray import NDArray


def slot_sizes(shapes: Sequence[tuple[int, ...]], num_chunks: int, what: str) -> list[int]:
    """Each array's slot in a shard (``ceil(D0 / num_chunks) * prod(rest)`` elements), for arrays of these
    shapes over ``num_chunks`` chunks; the slots follow one another, so ``S`` is their sum."""
    if num_chunks.__class__ is not int or num_chunks < 1:
        raise RuntimeError(f"{what}: expected a positive int num_chunks, got {num_chunks!r}")
    sizes = []
    for shape in shapes:
        if not shape:
            raise RuntimeError(f"{what} expects non-scalar input tensors (got a 0-d one)")
        row = 1
        for s in shape[1:]:
            row *= s
        sizes.append(-(-shape[0] // num_chunks) * row)
    return sizes


def _check(chunked: NDArray, arrays: Sequence[NDArray], num_chunks: int, what: str) -> None:
    if not arrays:
        raise RuntimeError(f"{what} expects a non-empty input tensor list")
    dtype = arrays[0].dtype
    for a in arrays:
        if a.device is not chunked.device and a.device != chunked.device:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, "
                f"{chunked.device} and {a.device}! ({what})"
            )
        if a.dtype is not dtype:
            raise RuntimeError(f"{what} expects all tensors in one dtype, got {dtype.name} and {a.dtype.name}")
    need = num_chunks * sum(slot_sizes([a.shape for a in arrays], num_chunks, what))
    have = chunked.numel()
    if have != need:
        raise RuntimeError(
            f"{what}: the chunked array has {have} elements ({list(chunked.shape)}), but {len(arrays)} tensors of "
            f"shapes {[list(a.shape) for a in arrays]} in {num_chunks} chunks need {need}"
        )


def chunk_cat(out: NDArray, arrays: Sequence[NDArray], num_chunks: int) -> NDArray:
    """Write ``arrays`` (one dtype, at least one dimension each) into ``out`` in the chunked row layout, cast to
    ``out``'s dtype, padding zero. Returns ``out``."""
    _check(out, arrays, num_chunks, "chunk_cat")
    out._ops["chunk_cat"](out._data, [a._data for a in arrays], num_chunks)
    return out


def chunk_split(src: NDArray, num_chunks: int, out: Sequence[NDArray]) -> None:
    """Each array of ``out`` (one dtype) gets its rows back from ``src``, in the chunked row layout of
    ``chunk_cat``, cast to its dtype."""
    _check(src, out, num_chunks, "chunk_split")
    src._ops["chunk_split"](src._data, num_chunks, [o._data for o in out])
