"""Fold (col2im) and Unfold (im2col): F.fold and F.unfold as layers."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class Fold(Module):
    """Sum sliding-window columns (N, C * kh * kw, L) into an (N, C, H, W) image, overlaps adding up.

    Args:
        output_size: (H, W) of the image.
        kernel_size: the window size.
        dilation: the spacing between window elements.
        padding: zero padding (cut from the result) on both sides.
        stride: the window step.

    Shape: (N, C * prod(kernel_size), L) or unbatched (C * prod(kernel_size), L) -> (N, C, H, W) or (C, H, W).
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """F.fold of ``input`` with the layer's geometry."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    """Lay every sliding window of an (N, C, H, W) input out as a column: (N, C * kh * kw, L).

    Args:
        kernel_size: the window size.
        dilation: the spacing between window elements.
        padding: zero padding on both sides.
        stride: the window step.

    Shape: (N, C, H, W) or (C, H, W) -> (N, C * prod(kernel_size), L) or (C * prod(kernel_size), L).
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """F.unfold of ``input`` with the layer's geometry."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
