"""LPPool1d / 2d / 3d: power-average pooling, (sum of x^p over each window) ** (1 / p)."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class _LPPoolNd(Module):
    """The power-average poolings' shared arguments, forward and extra_repr."""

    _dims = 0

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """The p-norm of each window of ``input``."""
        pool = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self._dims - 1]
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling over the last dimension of (N, C, L) or (C, L).

    Args:
        norm_type: p (1 is sum pooling; infinity would be max pooling).
        kernel_size: the window size.
        stride: the window step (default: kernel_size).
        ceil_mode: round the output size up instead of down.
    """

    _dims = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling over the last two dimensions of (N, C, H, W) or (C, H, W); arguments as
    LPPool1d's, each spatial one an int or a pair."""

    _dims = 2


class LPPool3d(_LPPoolNd):
    """Power-average pooling over the last three dimensions of (N, C, D, H, W) or (C, D, H, W); arguments as
    LPPool1d's, each spatial one an int or a triple."""

    _dims = 3
