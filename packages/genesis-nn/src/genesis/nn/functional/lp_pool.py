"""Power-average pooling: lp_pool1d / 2d / 3d, torch's composition (the p-th root of the sum of x^p
over each window, computed as avg_pool of x^p times the window size)."""

from __future__ import annotations

import math

from genesis_autograd import Tensor

from ._util import ntuple
from .pooling import avg_pool1d, avg_pool2d, avg_pool3d

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _lp_pool(nd: int, input: Tensor, norm_type: float, kernel_size, stride, ceil_mode: bool) -> Tensor:
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    kernel = ntuple(kernel_size, nd, "kernel_size")
    out = pool(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    # sign * relu(abs) as torch: a negative mean (odd p) keeps its sign, and the root of it is NaN as torch's.
    return (out.sign() * out.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """(sum of x^p over each window of (N, C, L) or (C, L) input) ** (1 / p), p = ``norm_type``."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """(sum of x^p over each window of (N, C, H, W) or (C, H, W) input) ** (1 / p), p = ``norm_type``."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """(sum of x^p over each window of (N, C, D, H, W) or (C, D, H, W) input) ** (1 / p), p = ``norm_type``."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)
