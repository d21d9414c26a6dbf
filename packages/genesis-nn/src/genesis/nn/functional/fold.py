"""col2im: the overlap-add of sliding-window columns back into an image, for F.fold and the transposed
convolutions. Every (kernel offset, window) pair of a column tensor lands on one position of the
padded output; those flat positions are computed once per geometry on the host, and one index_add
sums the columns into them (its gradient is the matching index_select, i.e. im2col again).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from genesis_autograd import Tensor, tensor, zeros

from ._util import ntuple
from .conv import check_positive

__all__ = ["fold", "overlap_add"]


@lru_cache(maxsize=256)
def _flat_positions(
    padded: tuple[int, ...], kernel: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...], blocks
) -> np.ndarray:
    """For each (kernel offset, block) in (k1, .., kd, b1, .., bd) row-major order, its flat index in
    the padded output."""
    dims = len(kernel)
    flat = np.zeros([*kernel, *blocks], dtype=np.int64)
    plane = 1  # the flat stride of this axis in the padded output
    for axis in reversed(range(dims)):
        pos = np.arange(kernel[axis]).reshape(-1, 1) * dilation[axis] + np.arange(blocks[axis]) * stride[axis]
        shape = [1] * (2 * dims)
        shape[axis], shape[dims + axis] = kernel[axis], blocks[axis]
        flat = flat + (pos * plane).reshape(shape)
        plane *= padded[axis]
    return flat.reshape(-1)


def overlap_add(
    cols: Tensor,
    output_size: tuple[int, ...],
    kernel: tuple[int, ...],
    dilation: tuple[int, ...],
    padding: tuple[int, ...],
    stride: tuple[int, ...],
    blocks: tuple[int, ...],
) -> Tensor:
    """(N, C, prod(kernel) * prod(blocks)) columns -> (N, C, *output_size): each column summed into its
    window of the zero-padded output, the padding then cut away."""
    n, c = cols.shape[0], cols.shape[1]
    padded = tuple(o + 2 * p for o, p in zip(output_size, padding))
    index = _flat_positions(padded, kernel, dilation, stride, tuple(blocks))
    target = zeros(n * c, math.prod(padded), dtype=cols.dtype, device=cols.device)
    out = target.index_add(1, tensor(index, dtype="int64", device=cols.device), cols.reshape(n * c, -1))
    out = out.reshape(n, c, *padded)
    for axis, (o, p) in enumerate(zip(output_size, padding)):
        if p:
            out = out.narrow(2 + axis, p, o)
    return out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im, the inverse layout of F.unfold: (N, C * kh * kw, L) columns summed into (N, C, H, W)
    (overlapping windows add up), as torch.nn.functional.fold. Unbatched (C * kh * kw, L) input gives
    (C, H, W)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
            f"dimensions for input, but got: {list(input.shape)}"
        )
    unbatched = input.ndim == 2
    if unbatched:
        input = input.unsqueeze(0)
    size, kernel = ntuple(output_size, 2, "output_size"), ntuple(kernel_size, 2, "kernel_size")
    dilation, padding, stride = ntuple(dilation, 2, "dilation"), ntuple(padding, 2, "padding"), ntuple(stride, 2)
    check_positive(stride, dilation)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_size={kernel}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"padding should be non-negative, but got padding={padding}")
    n, ck, length = input.shape
    window = kernel[0] * kernel[1]
    if ck % window:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={ck} and kernel_size={kernel}."
        )
    blocks = tuple(
        (o + 2 * p - (d * (k - 1) + 1)) // s + 1 for o, p, d, k, s in zip(size, padding, dilation, kernel, stride)
    )
    if any(b < 1 for b in blocks) or blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
            f"stride={stride}, expected size of input's dimension 2 to match the calculated number of "
            f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={length}."
        )
    out = overlap_add(input.reshape(n, ck // window, window * length), size, kernel, dilation, padding, stride, blocks)
    return out.squeeze(0) if unbatched else out
