"""FractionalMaxPool2d / 3d: max pooling over windows at pseudo-random, increasing positions."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .functional._util import ntuple
from .module import Module


class _FractionalMaxPoolNd(Module):
    """The fractional max poolings' shared checks and forward; ``_random_samples`` (a buffer, as torch's)
    fixes the windows, else each call draws new ones."""

    _dims = 0

    def __init__(
        self,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        nd, name = self._dims, type(self).__name__
        self.kernel_size = ntuple(kernel_size, nd, "kernel_size")
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = ntuple(output_size, nd, "output_size") if output_size is not None else None
        self.output_ratio = ntuple(output_ratio, nd, "output_ratio") if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        """The max of each fractional window (and its index with return_indices)."""
        pool = F.fractional_max_pool2d if self._dims == 2 else F.fractional_max_pool3d
        return pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) input (Graham, 2014).

    Args:
        kernel_size: the window size (an int or a pair).
        output_size: (H_out, W_out); or give output_ratio.
        output_ratio: the output size as a fraction of the input's, in (0, 1).
        return_indices: also return each maximum's flat position in its (H * W) plane.
        _random_samples: (N, C, 2) samples in [0, 1) that fix the windows.
    """

    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) input; arguments as FractionalMaxPool2d's,
    each an int or a triple, with _random_samples (N, C, 3)."""

    _dims = 3
