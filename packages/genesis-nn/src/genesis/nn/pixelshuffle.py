"""PixelShuffle and PixelUnshuffle: trade channels for spatial resolution, calls of nn.functional."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class PixelShuffle(Module):
    """(*, C * r^2, H, W) to (*, C, H * r, W * r), r = upscale_factor (sub-pixel convolution).

    Args:
        upscale_factor: r, a positive int.
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """pixel_shuffle of ``input``."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) to (*, C * r^2, H, W), r = downscale_factor: PixelShuffle's inverse.

    Args:
        downscale_factor: r, a positive int.
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """pixel_unshuffle of ``input``."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
