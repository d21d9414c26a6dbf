"""The convolution, pooling and normalisation functions torch also has at its top level (torch.conv2d,
torch.max_pool1d, torch.batch_norm, ...). Most are nn.functional's own; those whose top-level signature
differs from the functional one (the norms' argument order, adaptive_max_pool1d's index output) are thin
wrappers with torch's top-level signature."""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor

from .nn.functional.adaptive_pooling import adaptive_avg_pool1d, adaptive_max_pool1d_with_indices
from .nn.functional.conv import conv1d, conv2d, conv3d, conv_tbc
from .nn.functional.conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d
from .nn.functional.instance_norm import instance_norm as _instance_norm
from .nn.functional.normalization import batch_norm as _batch_norm
from .nn.functional.normalization import group_norm as _group_norm
from .nn.functional.normalization import layer_norm as _layer_norm
from .nn.functional.pooling import avg_pool1d, max_pool1d_with_indices
from .nn.functional.pooling import max_pool1d as _max_pool1d
from .nn.functional.pooling import max_pool2d as _max_pool2d
from .nn.functional.pooling import max_pool3d as _max_pool3d

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "avg_pool1d",
    "batch_norm",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool3d",
]


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
    """torch.max_pool1d: the max of each window of (N, C, L) or (C, L) input (values only)."""
    return _max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
    """torch.max_pool2d: the max of each window of (N, C, H, W) or (C, H, W) input (values only)."""
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
    """torch.max_pool3d: the max of each window of (N, C, D, H, W) or (C, D, H, W) input (values only)."""
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """torch.adaptive_max_pool1d: the values and the indices of adaptive max pooling to ``output_size``."""
    return adaptive_max_pool1d_with_indices(input, output_size)


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Tensor:
    """torch.batch_norm (weight and bias before the running statistics): F.batch_norm."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Tensor:
    """torch.instance_norm (weight and bias before the running statistics): F.instance_norm."""
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    """torch.group_norm: F.group_norm."""
    return _group_norm(input, num_groups, weight, bias, eps)


def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    """torch.layer_norm: F.layer_norm."""
    return _layer_norm(input, normalized_shape, weight, bias, eps)
