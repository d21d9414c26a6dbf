"""Transposed convolutions as the gradient of a convolution: each input position's channels are
multiplied by the weight into a column of output contributions (one matmul per group), and the
columns are overlap-added into the output (col2im, fold.overlap_add). No zeros are inserted, so the
work is that of the forward convolution whatever the stride.
"""

from __future__ import annotations

import math

from genesis_autograd import Tensor, autocast_policy

from ._util import ntuple
from .conv import check_positive
from .fold import overlap_add

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "transposed_output_size"]


def transposed_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, output_padding: int
) -> int:
    """(size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1


def _check_output_padding(output_padding: tuple, stride: tuple, dilation: tuple) -> None:
    if all(op < s or op < d for op, s, d in zip(output_padding, stride, dilation)):
        return
    if len(stride) == 1:  # torch reports conv_transpose1d as the 2-D op over a height of one
        output_padding, stride, dilation = (0,) + output_padding, (1,) + stride, (1,) + dilation
    names = ("depth", "height", "width")[-len(stride) :]

    def listing(what: str, values: tuple) -> str:
        return " ".join(f"{what}_{n}: {v}" for n, v in zip(names, values))

    raise RuntimeError(
        "output padding must be smaller than either stride or dilation, but got "
        f"{listing('output_padding', output_padding)} {listing('stride', stride)} {listing('dilation', dilation)}"
    )


def _conv_transpose(
    name: str, nd: int, input: Tensor, weight: Tensor, bias, stride, padding, output_padding, groups, dilation
) -> Tensor:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
            f"of size: {list(input.shape)}"
        )
    unbatched = input.ndim == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    stride, dilation = ntuple(stride, nd, "stride"), ntuple(dilation, nd, "dilation")
    padding, output_padding = ntuple(padding, nd, "padding"), ntuple(output_padding, nd, "output_padding")
    check_positive(stride, dilation)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    _check_output_padding(output_padding, stride, dilation)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    in_channels, out_per_group = weight.shape[0], weight.shape[1]
    if in_channels % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
            f"got weight of size [{list(weight.shape)}] instead"
        )
    if input.shape[1] != in_channels:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(input.shape)} to "
            f"have {in_channels} channels, but got {input.shape[1]} channels instead"
        )
    kernel = tuple(weight.shape[2:])
    blocks = tuple(input.shape[2:])
    sizes = tuple(
        transposed_output_size(*args) for args in zip(blocks, kernel, stride, padding, dilation, output_padding)
    )
    if any(s < 1 for s in sizes):
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, blocks))}). Calculated output size per "
            f"channel: ({' x '.join(map(str, sizes))}). Output size is too small"
        )
    n, out_channels = input.shape[0], out_per_group * groups
    window, length = math.prod(kernel), math.prod(blocks)
    # (groups, C_out/groups * window, C_in/groups) @ (N, groups, C_in/groups, L): every input position's
    # contribution to the window of output around it.
    w = weight.reshape(groups, in_channels // groups, out_per_group * window).mT
    cols = w.matmul(input.reshape(n, groups, in_channels // groups, length))
    out = overlap_add(cols.reshape(n, out_channels, window * length), sizes, kernel, dilation, padding, stride, blocks)
    if bias is not None:
        out = out + bias.reshape(1, out_channels, *(1,) * nd)
    return out.squeeze(0) if unbatched else out


@autocast_policy("lower")
def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups=1,
    dilation=1,
) -> Tensor:
    """(N, C_in, L) with weight (C_in, C_out / groups, k) -> (N, C_out, L_out), L_out = (L - 1) * stride
    - 2 * padding + dilation * (k - 1) + output_padding + 1: the gradient of conv1d with respect to its input."""
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


@autocast_policy("lower")
def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups=1,
    dilation=1,
) -> Tensor:
    """(N, C_in, H, W) with weight (C_in, C_out / groups, kh, kw) -> (N, C_out, H_out, W_out), each output
    size as conv_transpose1d's: the gradient of conv2d with respect to its input."""
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


@autocast_policy("lower")
def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups=1,
    dilation=1,
) -> Tensor:
    """(N, C_in, D, H, W) with weight (C_in, C_out / groups, kd, kh, kw) -> (N, C_out, D_out, H_out, W_out):
    the gradient of conv3d with respect to its input."""
    return _conv_transpose(
        "conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups, dilation
    )
