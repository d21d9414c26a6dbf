"""MaxUnpool1d / 2d / 3d: max pooling's partial inverse, from its values and indices."""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor

from . import functional as F
from .functional._util import ntuple
from .module import Module


class _MaxUnpoolNd(Module):
    """The unpooling layers' shared arguments, forward and extra_repr."""

    _dims = 0

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        nd = self._dims
        self.kernel_size = ntuple(kernel_size, nd, "kernel_size")
        self.stride = ntuple(stride if stride is not None else kernel_size, nd, "stride")
        self.padding = ntuple(padding, nd, "padding")

    def forward(self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """Scatter ``input`` to the positions ``indices`` names in a zero output (``output_size`` picks among
        the sizes the pooling may have come from)."""
        unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self._dims - 1]
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: (N, C, L) values and their indices -> (N, C, L_out), zero elsewhere.

    Args:
        kernel_size: the pooling's window size.
        stride: the pooling's step (default: kernel_size).
        padding: the pooling's padding.

    Shape: L_out = (L - 1) * stride - 2 * padding + kernel_size, or forward's output_size.
    """

    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d: (N, C, H, W) values and their indices -> (N, C, H_out, W_out); arguments
    as MaxUnpool1d's, each an int or a pair."""

    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d: (N, C, D, H, W) values and their indices -> (N, C, D_out, H_out,
    W_out); arguments as MaxUnpool1d's, each an int or a triple."""

    _dims = 3
