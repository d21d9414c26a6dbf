"""Convolutions as im2col + matmul: the input's sliding windows (Tensor.unfold views, so their
gradient is the windows' overlap-add) are laid out as columns and multiplied by the weight
matrix, one matmul per group batch. conv1d is conv2d over a height of one; conv3d uses the same
windows over three axes. conv_tbc is conv1d on a (time, batch, channel) layout.
"""

from __future__ import annotations

import math

from genesis_autograd import Tensor, autocast_policy

from ._util import ntuple
from .padding import pad as _pad

__all__ = ["conv1d", "conv2d", "conv3d", "conv_tbc", "unfold"]


def windows(x: Tensor, kernel: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...]) -> Tensor:
    """(N, C, *spatial) -> the (N, C, *out, *kernel) view of every kernel window (no padding added):
    (N, C, OH, OW, kh, kw) for two spatial axes."""
    for axis, (k, d, s) in enumerate(zip(kernel, dilation, stride)):
        span = d * (k - 1) + 1
        x = x.unfold(2 + axis, span, s)  # the window's span becomes the last dim
        if d > 1:
            x = x[..., ::d]
    return x


def check_positive(stride: tuple, dilation: tuple) -> None:
    """torch's errors for a non-positive stride or dilation."""
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")


def same_padding(kernel: tuple, dilation: tuple) -> list[int]:
    """F.pad amounts for padding='same' (the odd extra on the right/bottom, as torch)."""
    amounts = []
    for k, d in reversed(list(zip(kernel, dilation))):
        total = d * (k - 1)
        amounts += [total // 2, total - total // 2]
    return amounts


def _conv(
    name: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, groups: int
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
    check_positive(stride, dilation)
    kernel = tuple(weight.shape[2:])
    out_channels, in_per_group = weight.shape[0], weight.shape[1]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if out_channels % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
            f"got weight of size [{list(weight.shape)}] instead"
        )
    if input.shape[1] != in_per_group * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(input.shape)} to have {in_per_group * groups} channels, but got {input.shape[1]} "
            "channels instead"
        )
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same" and any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        if padding == "same":
            input = _pad(input, same_padding(kernel, dilation))
        padding = (0,) * nd
    else:
        padding = ntuple(padding, nd, "padding")
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
        if any(padding):
            input = _pad(input, [p for p in reversed(padding) for _ in range(2)])
    spatial = tuple(input.shape[2:])
    if any(s < d * (k - 1) + 1 for s, k, d in zip(spatial, kernel, dilation)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, spatial))}). Kernel size: "
            f"({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual input size"
        )
    if nd == 1:  # a height of one
        input, weight = input.unsqueeze(2), weight.unsqueeze(2)
        kernel, stride, dilation = (1,) + kernel, (1,) + stride, (1,) + dilation
    dims = len(kernel)
    n = input.shape[0]
    win = windows(input, kernel, dilation, stride)  # (N, C, *out, *kernel)
    out_sizes = tuple(win.shape[2 : 2 + dims])
    k = in_per_group * math.prod(kernel)
    # Columns (N, groups, C/groups * prod(kernel), prod(out)): the one copy of the input that im2col makes.
    order = (0, 1) + tuple(range(2 + dims, 2 + 2 * dims)) + tuple(range(2, 2 + dims))
    cols = win.permute(*order).reshape(n, groups, k, math.prod(out_sizes))
    out = weight.reshape(groups, out_channels // groups, k).matmul(cols)  # (N, groups, O/groups, prod(out))
    out = out.reshape(n, out_channels, *out_sizes)
    if bias is not None:
        out = out + bias.reshape(1, out_channels, *(1,) * dims)
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


@autocast_policy("lower")
def conv1d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups: int = 1
) -> Tensor:
    """(N, C_in, L) with weight (C_out, C_in / groups, k) -> (N, C_out, L_out); padding int, 'same' or 'valid'."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@autocast_policy("lower")
def conv2d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups: int = 1
) -> Tensor:
    """(N, C_in, H, W) with weight (C_out, C_in / groups, kh, kw) -> (N, C_out, H_out, W_out)."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@autocast_policy("lower")
def conv3d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups: int = 1
) -> Tensor:
    """(N, C_in, D, H, W) with weight (C_out, C_in / groups, kd, kh, kw) -> (N, C_out, D_out, H_out, W_out)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """A 1-D convolution of (time, batch, C_in) input with a (k, C_in, C_out) weight and a (C_out,) bias,
    ``pad`` zero time steps on each side -> (time_out, batch, C_out), as torch.conv_tbc."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), each column one window, as torch.nn.functional.unfold."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    unbatched = input.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
    kernel, dilation = ntuple(kernel_size, 2, "kernel_size"), ntuple(dilation, 2, "dilation")
    padding, stride = ntuple(padding, 2, "padding"), ntuple(stride, 2, "stride")
    check_positive(stride, dilation)
    if any(padding):
        input = _pad(input, [padding[1], padding[1], padding[0], padding[0]])
    win = windows(input, kernel, dilation, stride)
    n, c, oh, ow = win.shape[:4]
    out = win.permute(0, 1, 4, 5, 2, 3).reshape(n, c * kernel[0] * kernel[1], oh * ow)
    return out.squeeze(0) if unbatched else out
