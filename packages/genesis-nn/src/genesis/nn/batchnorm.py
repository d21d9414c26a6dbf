"""The batch norms: _NormBase (the parameters, running statistics and their resets, shared with the instance
norms, as in torch), _BatchNorm (batch statistics in training, running ones in eval) and BatchNorm1d / 2d / 3d.
"""

from __future__ import annotations

from typing import Any

from genesis_autograd import Tensor, empty, ones, tensor, zeros

from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


class _NormBase(Module):
    """torch's common base of the batch and instance norms: ``weight`` / ``bias`` (with ``affine``) and the
    buffers ``running_mean``, ``running_var`` and ``num_batches_tracked`` (with ``track_running_stats``; None
    otherwise), their resets, and the repr. Subclasses define ``_check_input_dim`` and ``forward``.

    Args:
        num_features: C, the channels normalised one by one.
        eps: added to the variance.
        momentum: the weight of a new batch in the running statistics (None: their cumulative average).
        affine: learn ``weight`` (ones at start) and ``bias`` (zeros) per channel.
        track_running_stats: keep the running statistics.
        device, dtype: where and in which dtype the parameters and buffers are made (num_batches_tracked is
            always int64).
    """

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
        """Reset running_mean to 0, running_var to 1 and num_batches_tracked to 0 (with track_running_stats)."""
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
        raise NotImplementedError

    def _plan_load(self, state_dict: dict, prefix: str, *args: Any, **kwargs: Any) -> None:
        # torch's rule for checkpoints from before num_batches_tracked existed (state-dict version < 2, which
        # is every genesis state dict's, as they carry no version): a missing counter keeps its current value.
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and self.num_batches_tracked is not None and key not in state_dict:
            state_dict[key] = self.num_batches_tracked
        super()._plan_load(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    """Per-channel normalisation of (N, C, *) with running statistics folded in while training (momentum=None
    gives their cumulative average) and used in eval; ``_expected_dims`` lists the accepted input ranks."""

    _expected_dims: tuple[int, ...] = ()

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._expected_dims:
            wanted = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"expected {wanted} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input`` per channel (batch statistics in training, running ones in eval)."""
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
