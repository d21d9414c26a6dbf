"""Normalisation layers: LayerNorm, RMSNorm, GroupNorm, BatchNorm1d / BatchNorm2d / BatchNorm3d (the
instance, local-response and synchronised norms have files of their own)."""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor, empty, ones, tensor, zeros

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


class _BatchNorm(Module):
    """Per-channel normalisation of (N, C, *) with running statistics (running_mean, running_var,
    num_batches_tracked buffers) folded in while training; momentum=None gives their cumulative average."""

    _expected_dims: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype="int64", device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Reset running_mean to 0, running_var to 1 and num_batches_tracked to 0."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, weight to ones and bias to zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._expected_dims:
            wanted = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"expected {wanted} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        # Batch statistics in training, and in eval when there are no running ones to use.
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation per channel of (N, C) or (N, C, L) input.

    In training mode each channel is normalised with the batch's mean and biased variance, and the running
    statistics are updated (with the unbiased variance); in eval mode the running statistics are used.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: the weight of the new batch in the running statistics; None for their cumulative average.
        affine: learn ``weight`` (ones at start) and ``bias`` (zeros) per channel.
        track_running_stats: keep the buffers running_mean, running_var and num_batches_tracked.
        device, dtype: where and in which dtype the parameters are made.

    Shape: input (N, C) or (N, C, L); output the same shape.
    """

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation per channel of (N, C, H, W) input (see BatchNorm1d for the arguments).

    In training mode each channel is normalised with the batch's statistics and the running ones are updated;
    in eval mode the running statistics are used.

    Shape: input (N, C, H, W); output the same shape.
    """

    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation per channel of (N, C, D, H, W) input.

    Args: as BatchNorm1d's.

    In training mode each channel is normalised with the batch's statistics and the running ones are updated;
    in eval mode the running statistics are used.

    Shape: input (N, C, D, H, W); output the same shape.
    """

    _expected_dims = (5,)
