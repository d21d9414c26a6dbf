"""Adaptive pooling to a fixed output size over 1, 2 or 3 spatial dims, with torch's window bounds: output
cell i of an axis of size L covers floor(i * L / O) .. ceil((i + 1) * L / O) - 1. Average pooling is one
averaging matrix per axis; max pooling gathers each axis' windows (padded to the longest by repeating
their last element, which cannot change a maximum) and reduces them."""

from __future__ import annotations

import math

import numpy as np

from genesis_autograd import Tensor, arange, tensor

from ._util import ntuple
from .pooling import batched

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "averaging_matrix",
]


def _bounds(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def averaging_matrix(size: int, out: int, like: Tensor) -> Tensor:
    """(out, size): row i averages input positions floor(i * size / out) .. ceil((i + 1) * size / out) - 1."""
    rows = np.zeros((out, size), dtype=np.float64)
    for i, (start, end) in enumerate(_bounds(size, out)):
        rows[i, start:end] = 1.0 / (end - start)
    # Through a float64 numpy array: genesis.tensor rounds a list of Python floats to the default dtype first.
    return tensor(rows, dtype=like.dtype, device=like.device)


def _output_sizes(input: Tensor, nd: int, output_size) -> list[int]:
    sizes = ntuple(output_size, nd, "output_size")
    return [input.shape[input.ndim - nd + k] if s is None else int(s) for k, s in enumerate(sizes)]


def _adaptive_avg(name: str, nd: int, input: Tensor, output_size) -> Tensor:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    outs = _output_sizes(input, nd, output_size)
    ins = list(input.shape[input.ndim - nd :])
    if outs == ins:
        return input * 1.0
    if all(o > 0 and i % o == 0 for i, o in zip(ins, outs)):  # regular windows: the reshape-and-mean path
        split = [d for i, o in zip(ins, outs) for d in (o, i // o)]
        return input.reshape(*input.shape[: input.ndim - nd], *split).mean(tuple(range(-2 * nd + 1, 0, 2)))
    out = input
    for k, (size, o) in enumerate(zip(ins, outs)):
        axis = input.ndim - nd + k
        if size != o:
            out = out.movedim(axis, -1).matmul(averaging_matrix(size, o, input).mT).movedim(-1, axis)
    return out


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of (N, C, L) or (C, L) to length ``output_size``, with torch's window bounds."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a given (OH, OW) (None keeps that input size), with torch's window bounds."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to (OD, OH, OW) (None keeps that input size)."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _window_table(size: int, out: int) -> np.ndarray:
    """(out, longest window) input positions of each output cell's window, the short ones padded with
    their last position."""
    bounds = _bounds(size, out)
    longest = max(end - start for start, end in bounds)
    return np.array([[min(start + j, end - 1) for j in range(longest)] for start, end in bounds], dtype=np.int64)


def _adaptive_max(name: str, nd: int, input: Tensor, output_size, return_indices: bool):
    x, unbatched = batched(input, nd, f"{name}()")
    outs = _output_sizes(x, nd, output_size)
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"{name}(): output_size must be greater than zero, but got {outs}")
    ins = list(x.shape[2:])
    tables = [tensor(_window_table(size, o), dtype="int64", device=x.device) for size, o in zip(ins, outs)]
    longest = [t.shape[1] for t in tables]
    gathered = x
    for k, table in enumerate(tables):  # axis 2 + 2k: (O, longest) after the earlier axes were split
        axis = 2 + 2 * k
        gathered = gathered.index_select(axis, table.reshape(-1))
        gathered = gathered.reshape(*gathered.shape[:axis], outs[k], longest[k], *gathered.shape[axis + 1 :])
    order = (0, 1) + tuple(range(2, 2 + 2 * nd, 2)) + tuple(range(3, 3 + 2 * nd, 2))
    values, arg = gathered.permute(*order).reshape(*x.shape[:2], *outs, math.prod(longest)).max(-1)
    if unbatched:
        values, arg = values.squeeze(0), arg.squeeze(0)
    if not return_indices:
        return values
    flat, plane, rest = None, 1, arg
    for k in reversed(range(nd)):
        offset, rest = rest % longest[k], rest // longest[k]
        shape = [1] * nd
        shape[k] = outs[k]
        cell = arange(outs[k], device=x.device).reshape(shape) * longest[k] + offset
        coordinate = tables[k].reshape(-1).index_select(0, cell.reshape(-1)).reshape(cell.shape)
        flat = coordinate * plane if flat is None else flat + coordinate * plane
        plane *= ins[k]
    return values, flat


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """adaptive_max_pool1d's values and each maximum's position in its input row."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, True)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of (N, C, L) or (C, L) to length ``output_size`` (torch's window bounds); with
    return_indices also each maximum's position in its row."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """adaptive_max_pool2d's values and each maximum's flat position in its (H * W) input plane."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, True)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of (N, C, H, W) or (C, H, W) to (OH, OW) (None keeps that input size); with
    return_indices also each maximum's flat position in its (H * W) input plane."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """adaptive_max_pool3d's values and each maximum's flat position in its (D * H * W) input volume."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, True)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to (OD, OH, OW); with return_indices also each
    maximum's flat position in its (D * H * W) input volume."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)
