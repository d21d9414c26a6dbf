"""Upsample: F.interpolate as a layer; UpsamplingNearest2d and UpsamplingBilinear2d, its fixed-mode forms."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class Upsample(Module):
    """Resize the spatial dimensions (F.interpolate as a layer).

    Args:
        size: the output spatial size; or give ``scale_factor``.
        scale_factor: the multiplier for each spatial size.
        mode: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (3-D input), ``"bilinear"`` (4-D input),
            ``"trilinear"`` (5-D input), ``"bicubic"`` (4-D input) or ``"area"``.
        align_corners: for the linear modes, align the corner pixels of input and output.
        recompute_scale_factor: compute the sampling from the output size rather than from scale_factor.

    Shape: (N, C, d1, ...) -> (N, C, o1, ...).
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.size = size
        self.scale_factor: tuple[float, ...] | float | None
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W) input (Upsample with mode="nearest").

    Args:
        size: the output (H, W); or give ``scale_factor``.
        scale_factor: the multiplier for H and W.
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) input with aligned corners (Upsample with mode="bilinear",
    align_corners=True).

    Args:
        size: the output (H, W); or give ``scale_factor``.
        scale_factor: the multiplier for H and W.
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
