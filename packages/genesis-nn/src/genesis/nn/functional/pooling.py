"""Max and average pooling over 1, 2 or 3 spatial dims of (N, C, *) or unbatched (C, *) input: each
reduces every window of the (padded) input's windows view (Tensor.unfold, so the gradient is the
windows' overlap-add); max pooling's indices are flat positions in each input plane (volume).
The adaptive poolings are in adaptive_pooling.py."""

from __future__ import annotations

import math
from collections.abc import Sequence

from genesis_autograd import Tensor, arange, ones

from ._util import ntuple
from .conv import windows
from .padding import pad as _pad

__all__ = [
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
]


def batched(input: Tensor, nd: int, name: str) -> tuple[Tensor, bool]:
    """(N, C, *spatial) and whether the input was unbatched (C, *spatial); torch's error otherwise."""
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    return (input.unsqueeze(0), True) if input.ndim == nd + 1 else (input, False)


def _pool_geometry(name: str, nd: int, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool):
    """kernel, stride, padding, dilation as nd-tuples, the output sizes, and the extra trailing padding that
    ceil_mode's last, partial windows need."""
    kernel = ntuple(kernel_size, nd, "kernel_size")
    no_stride = stride is None or (isinstance(stride, Sequence) and len(stride) == 0)
    stride = kernel if no_stride else ntuple(stride, nd, "stride")
    padding, dilation = ntuple(padding, nd, "padding"), ntuple(dilation, nd, "dilation")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{name}: kernel_size must be greater than zero, but got {kernel}")
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
    for size, k, s, p, d in zip(input.shape[-nd:], kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        numerator = size + 2 * p - span
        out = (-(-numerator // s) if ceil_mode else numerator // s) + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # the last window must start inside the input or its left padding
        sizes.append(out)
        extra.append(max(0, (out - 1) * s + span - (size + 2 * p)))
    if min(sizes) < 1:
        c = input.shape[-nd - 1]
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, (c, *input.shape[-nd:])))}). Calculated output size: "
            f"({'x'.join(map(str, (c, *sizes)))}). Output size is too small"
        )
    return kernel, stride, padding, dilation, sizes, extra


def _pad_amounts(padding: tuple, extra: list) -> list[int]:
    """F.pad amounts (last axis first): padding on both sides plus ceil_mode's extra on the right."""
    return [a for p, e in reversed(list(zip(padding, extra))) for a in (p, p + e)]


def _max_pool(name: str, nd: int, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = batched(input, nd, name)
    kernel, stride, padding, dilation, sizes, extra = _pool_geometry(
        name, nd, x, kernel_size, stride, padding, dilation, ceil_mode
    )
    amounts = _pad_amounts(padding, extra)
    if any(amounts):
        x = _pad(x, amounts, value=float("-inf"))
    win = windows(x, kernel, dilation, stride)
    values, arg = win.reshape(*win.shape[: 2 + nd], math.prod(kernel)).max(-1)
    if unbatched:
        values, arg = values.squeeze(0), arg.squeeze(0)
    if not return_indices:
        return values
    # Each maximum's kernel offset (row-major in arg) -> its input coordinate per axis -> a flat position.
    flat, plane, rest = None, 1, arg
    for axis in reversed(range(nd)):
        offset, rest = rest % kernel[axis], rest // kernel[axis]
        shape = [1] * nd
        shape[axis] = sizes[axis]
        starts = arange(sizes[axis], device=arg.device).reshape(shape) * stride[axis] - padding[axis]
        term = (starts + offset * dilation[axis]) * plane
        flat = term if flat is None else flat + term
        plane *= input.shape[input.ndim - nd + axis]
    return values, flat


def max_pool1d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices=True
):
    """max_pool1d's values and each maximum's position in its input row."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices=False
):
    """The max of each window of (N, C, L) or (C, L) input (padding counts as -inf); with return_indices
    also each max's position in its row. The gradient goes to the first maximum of each window."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices=True
):
    """max_pool2d's values and each maximum's flat position in its (H * W) input plane."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices=False
):
    """The max of each window (padding counts as -inf); with return_indices also each max's flat position
    in its (H * W) input plane. The gradient goes to the first maximum of each window, as torch's."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices=True
):
    """max_pool3d's values and each maximum's flat position in its (D * H * W) input volume."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False, return_indices=False
):
    """The max of each window of (N, C, D, H, W) or (C, D, H, W) input; with return_indices also each max's
    flat position in its (D * H * W) input volume."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(
    name: str, nd: int, input: Tensor, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
) -> Tensor:
    x, unbatched = batched(input, nd, name)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    kernel, stride, padding, dilation, _, extra = _pool_geometry(
        name, nd, x, kernel_size, stride, padding, 1, ceil_mode
    )
    amounts = _pad_amounts(padding, extra)
    if any(amounts):
        x = _pad(x, amounts)
    window_dims = tuple(range(-nd, 0))
    sums = windows(x, kernel, dilation, stride).sum(window_dims)
    if divisor_override is not None:
        out = sums / divisor_override
    else:
        # The divisor counts the padding when count_include_pad, never ceil_mode's part beyond it (torch's rule).
        inner = input.shape[input.ndim - nd :]
        counted = ones(1, 1, *inner, dtype=x.dtype, device=x.device)
        if any(padding):
            counted = _pad(counted, _pad_amounts(padding, [0] * nd), value=1.0 if count_include_pad else 0.0)
        if any(extra):
            counted = _pad(counted, [a for e in reversed(extra) for a in (0, e)])
        out = sums / windows(counted, kernel, dilation, stride).sum(window_dims)
    return out.squeeze(0) if unbatched else out


def avg_pool1d(
    input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True
) -> Tensor:
    """The mean of each window of (N, C, L) or (C, L) input (zero padding counted when count_include_pad)."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


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
    return _avg_pool(
        "avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


def avg_pool3d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean of each window of (N, C, D, H, W) or (C, D, H, W) input, with avg_pool2d's divisor rules."""
    return _avg_pool(
        "avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )
