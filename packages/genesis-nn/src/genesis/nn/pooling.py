"""Pooling layers: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class MaxPool2d(Module):
    """The maximum of each kernel window over the last two dimensions.

    Args:
        kernel_size: the window size (an int or (kh, kw)).
        stride: the window step (default: kernel_size).
        padding: implicit -inf padding on both sides.
        dilation: the spacing between window elements.
        return_indices: also return each maximum's flat position in its (H * W) input plane.
        ceil_mode: round the output size up instead of down.

    Shape: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) or (C, H_out, W_out), with
    H_out = floor((H + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1) (ceil with ceil_mode).
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False, ceil_mode: bool = False
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        return F.max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool2d(Module):
    """The mean of each kernel window over the last two dimensions.

    Args:
        kernel_size: the window size (an int or (kh, kw)).
        stride: the window step (default: kernel_size).
        padding: implicit zero padding on both sides.
        ceil_mode: round the output size up instead of down.
        count_include_pad: count the zero padding in the divisor.
        divisor_override: divide by this instead of the window size.

    Shape: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) or (C, H_out, W_out), with
    H_out = floor((H + 2 * padding - kernel) / stride + 1) (ceil with ceil_mode).
    """

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed output size, whatever the input size (torch's window bounds).

    Args:
        output_size: (H_out, W_out), or one int for both; None keeps that input size.

    Shape: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) or (C, H_out, W_out).
    """

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
