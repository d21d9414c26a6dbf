"""Adaptive pooling layers: AdaptiveAvgPool1d/2d/3d and AdaptiveMaxPool1d/2d/3d (a fixed output size,
whatever the input size, with torch's window bounds)."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class _AdaptiveAvgPoolNd(Module):
    """The adaptive average poolings' shared forward."""

    _dims = 0

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        """Average pooling of ``input`` to the output size."""
        pool = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[self._dims - 1]
        return pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling of (N, C, L) or (C, L) to length ``output_size``."""

    _dims = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size, whatever the input size (torch's window bounds).

    Args:
        output_size: (H_out, W_out), or one int for both; None keeps that input size.

    Shape: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) or (C, H_out, W_out).
    """

    _dims = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to (D_out, H_out, W_out) (an int for all three;
    None keeps that input size)."""

    _dims = 3


class _AdaptiveMaxPoolNd(Module):
    """The adaptive max poolings' shared forward."""

    _dims = 0

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor):
        """Max pooling of ``input`` to the output size (and the maxima's indices with return_indices)."""
        pool = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[self._dims - 1]
        return pool(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, L) or (C, L) to length ``output_size``; with return_indices also each maximum's
    position in its input row."""

    _dims = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, H, W) or (C, H, W) to (H_out, W_out) (an int for both; None keeps that input
    size); with return_indices also each maximum's flat position in its (H * W) plane."""

    _dims = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to (D_out, H_out, W_out); with return_indices also
    each maximum's flat position in its (D * H * W) volume."""

    _dims = 3
