"""Normalisation layers: LayerNorm, RMSNorm, GroupNorm (the batch, instance, local-response and synchronised
norms have files of their own)."""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor, empty

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _shape_tuple(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """(x - mean) / sqrt(var + eps) over the trailing ``normalized_shape`` dimensions (biased variance),
    then ``weight`` and ``bias`` elementwise.

    Args:
        normalized_shape: the sizes of the trailing dimensions to normalise (an int for the last one).
        eps: added to the variance.
        elementwise_affine: learn ``weight`` (ones at start) and ``bias`` (zeros).
        bias: learn the bias too (with elementwise_affine).
        device, dtype: where and in which dtype the parameters are made.

    Shape: input (*, normalized_shape); output the same shape.
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(*self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(*self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset weight to ones and bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing ``normalized_shape`` dimensions, then ``weight``.

    Args:
        normalized_shape: the sizes of the trailing dimensions to normalise (an int for the last one).
        eps: added to the mean square; None takes the dtype's machine epsilon, as torch.
        elementwise_affine: learn ``weight`` (ones at start).
        device, dtype: where and in which dtype the parameters are made.

    Shape: input (*, normalized_shape); output the same shape.
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(*self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset weight to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalise each sample over groups of channels (mean and biased variance per group), then
    ``weight`` and ``bias`` per channel.

    Args:
        num_groups: the number of groups the channels are split into.
        num_channels: C, divisible by num_groups.
        eps: added to the variance.
        affine: learn ``weight`` (ones at start) and ``bias`` (zeros) per channel.
        bias: learn the bias too (with affine).
        device, dtype: where and in which dtype the parameters are made.

    Shape: input (N, C, *); output the same shape.
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(empty(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_channels, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset weight to ones and bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )
