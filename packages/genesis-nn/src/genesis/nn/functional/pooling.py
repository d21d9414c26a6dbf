"""Pooling over (N, C, H, W) or unbatched (C, H, W): max_pool2d and avg_pool2d reduce each window of the
(padded) input's windows view; adaptive_avg_pool2d is two averaging matrices, one per axis."""

from __future__ import annotations

import numpy as np

from genesis_autograd import Tensor, arange, ones, tensor

from ._util import ntuple
from .conv import windows
from .padding import pad as _pad

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "max_pool2d"]


def _pool_geometry(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool):
    """kernel, stride, padding, dilation as pairs, the output size, and the extra bottom/right padding
    that ceil_mode's last, partial windows need."""
    kernel = ntuple(kernel_size, 2, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else ntuple(stride, 2)
    padding, dilation = ntuple(padding, 2, "padding"), ntuple(dilation, 2, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should be greater than zero")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    sizes, extra = [], []
    for size, k, s, p, d in zip(input.shape[-2:], kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        numerator = size + 2 * p - span
        out = (-(-numerator // s) if ceil_mode else numerator // s) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # the last window must start inside the input or its left padding
        sizes.append(out)
        extra.append(max(0, (out - 1) * s + span - (size + 2 * p)))
    if min(sizes) < 1:
        c, h, w = input.shape[-3:]
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{sizes[0]}x{sizes[1]}). "
            "Output size is too small"
        )
    return kernel, stride, padding, dilation, sizes, extra


def _batched(input: Tensor, name: str) -> tuple[Tensor, bool]:
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{name}: Expected 3D or 4D tensor, but got {list(input.shape)}")
    return (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)


def max_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The max of each window (padding counts as -inf); with return_indices also each max's flat position
    in its (H * W) input plane. The gradient goes to the first maximum of each window, as torch's."""
    x, unbatched = _batched(input, "max_pool2d")
    kernel, stride, padding, dilation, (oh, ow), extra = _pool_geometry(
        x, kernel_size, stride, padding, dilation, ceil_mode
    )
    if any(padding) or any(extra):
        x = _pad(x, [padding[1], padding[1] + extra[1], padding[0], padding[0] + extra[0]], value=float("-inf"))
    win = windows(x, kernel, dilation, stride)
    values, arg = win.reshape(*win.shape[:4], kernel[0] * kernel[1]).max(-1)
    if unbatched:
        values, arg = values.squeeze(0), arg.squeeze(0)
    if not return_indices:
        return values
    dev = arg.device
    rows = arange(oh, device=dev).reshape(oh, 1) * stride[0] - padding[0] + (arg // kernel[1]) * dilation[0]
    cols = arange(ow, device=dev).reshape(1, ow) * stride[1] - padding[1] + (arg % kernel[1]) * dilation[1]
    return values, rows * input.shape[-1] + cols


def avg_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean of each window. The divisor counts the zero padding when count_include_pad, but never
    the part of a ceil_mode window beyond it (torch's rule), or is divisor_override."""
    x, unbatched = _batched(input, "avg_pool2d")
    kernel, stride, padding, dilation, _, extra = _pool_geometry(x, kernel_size, stride, padding, 1, ceil_mode)
    amounts = [padding[1], padding[1] + extra[1], padding[0], padding[0] + extra[0]]
    if any(amounts):
        x = _pad(x, amounts)
    sums = windows(x, kernel, dilation, stride).sum((-2, -1))
    if divisor_override is not None:
        out = sums / divisor_override
    else:
        h, w = x.shape[-2] - padding[0] * 2 - extra[0], x.shape[-1] - padding[1] * 2 - extra[1]
        counted = ones(1, 1, h, w, dtype=x.dtype, device=x.device)
        if any(padding):
            counted = _pad(
                counted, [padding[1], padding[1], padding[0], padding[0]], value=1.0 if count_include_pad else 0.0
            )
        if any(extra):
            counted = _pad(counted, [0, extra[1], 0, extra[0]])
        out = sums / windows(counted, kernel, dilation, stride).sum((-2, -1))
    return out.squeeze(0) if unbatched else out


def averaging_matrix(size: int, out: int, like: Tensor) -> Tensor:
    """(out, size): row i averages input positions floor(i * size / out) .. ceil((i + 1) * size / out) - 1."""
    rows = []
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        rows.append([1.0 / (end - start) if start <= j < end else 0.0 for j in range(size)])
    # Through a float64 numpy array: genesis.tensor rounds a list of Python floats to the default dtype first.
    return tensor(np.array(rows, dtype=np.float64), dtype=like.dtype, device=like.device)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a given (OH, OW) (None keeps that input size), with torch's window bounds."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    h, w = input.shape[-2:]
    oh, ow = ntuple(output_size, 2, "output_size")
    oh, ow = h if oh is None else oh, w if ow is None else ow
    if (oh, ow) == (h, w):
        return input * 1.0
    if h % oh == 0 and w % ow == 0:  # regular windows: the reshape-and-mean path
        x = input.reshape(*input.shape[:-2], oh, h // oh, ow, w // ow)
        return x.mean((-3, -1))
    x = input.matmul(averaging_matrix(w, ow, input).mT)  # (..., H, OW)
    return averaging_matrix(h, oh, input).matmul(x)  # (..., OH, OW)
