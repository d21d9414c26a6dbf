"""Max and average pooling layers over 1, 2 or 3 spatial dims (MaxPool1d/2d/3d, AvgPool1d/2d/3d); the
adaptive, power-average, unpooling and fractional layers have files of their own."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .functional._util import ntuple
from .module import Module


class _MaxPoolNd(Module):
    """The max pooling layers' shared arguments, forward and extra_repr (torch keeps the arguments as given)."""

    _dims = 0

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False, ceil_mode: bool = False
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        """The max of each window (and its index with return_indices)."""
        pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[self._dims - 1]
        return pool(
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


class MaxPool1d(_MaxPoolNd):
    """The maximum of each kernel window over the last dimension.

    Args:
        kernel_size: the window size.
        stride: the window step (default: kernel_size).
        padding: implicit -inf padding on both sides (at most half the effective window).
        dilation: the spacing between window elements.
        return_indices: also return each maximum's position in its input row.
        ceil_mode: round the output size up instead of down.

    Shape: (N, C, L) or (C, L) -> (N, C, L_out) or (C, L_out), with
    L_out = floor((L + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1) (ceil with ceil_mode).
    """

    _dims = 1


class MaxPool2d(_MaxPoolNd):
    """The maximum of each kernel window over the last two dimensions.

    Args: as MaxPool1d's, each an int or a pair; return_indices gives flat positions in each (H * W) plane.

    Shape: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) or (C, H_out, W_out), each output size as
    MaxPool1d's.
    """

    _dims = 2


class MaxPool3d(_MaxPoolNd):
    """The maximum of each kernel window over the last three dimensions.

    Args: as MaxPool1d's, each an int or a triple; return_indices gives flat positions in each (D * H * W)
    volume.

    Shape: (N, C, D, H, W) or (C, D, H, W) -> (N, C, D_out, H_out, W_out) or (C, D_out, H_out, W_out).
    """

    _dims = 3


class AvgPool1d(Module):
    """The mean of each kernel window over the last dimension.

    Args:
        kernel_size: the window size.
        stride: the window step (default: kernel_size).
        padding: implicit zero padding on both sides.
        ceil_mode: round the output size up instead of down.
        count_include_pad: count the zero padding in the divisor.

    Shape: (N, C, L) or (C, L) -> (N, C, L_out) or (C, L_out), L_out = floor((L + 2 * padding - kernel)
    / stride + 1) (ceil with ceil_mode).
    """

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True
    ) -> None:
        super().__init__()
        self.kernel_size = ntuple(kernel_size, 1, "kernel_size")
        self.stride = ntuple(stride if stride is not None else kernel_size, 1, "stride")
        self.padding = ntuple(padding, 1, "padding")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """The mean of each window."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    """AvgPool2d's and AvgPool3d's shared arguments, forward and extra_repr."""

    _dims = 0

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
        """The mean of each window (or its sum over divisor_override)."""
        pool = F.avg_pool2d if self._dims == 2 else F.avg_pool3d
        return pool(
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


class AvgPool2d(_AvgPoolNd):
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

    _dims = 2


class AvgPool3d(_AvgPoolNd):
    """The mean of each kernel window over the last three dimensions.

    Args: as AvgPool2d's, each spatial one an int or a triple.

    Shape: (N, C, D, H, W) or (C, D, H, W) -> (N, C, D_out, H_out, W_out) or (C, D_out, H_out, W_out).
    """

    _dims = 3
