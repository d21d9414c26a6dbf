"""InstanceNorm1d / 2d / 3d: per-(sample, channel) normalisation, optionally affine and with running
statistics (torch's defaults: neither)."""

from __future__ import annotations

import warnings

from genesis_autograd import Tensor

from . import functional as F
from .batchnorm import _NormBase


class _InstanceNorm(_NormBase):
    """The instance norms' shared forward: the parameters and buffers are _NormBase's (as BatchNorm's, same
    names and extra_repr), but the statistics are each plane's own, and num_batches_tracked is never advanced."""

    _no_batch_dims = 0  # the input's ndim when unbatched

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (self._no_batch_dims, self._no_batch_dims + 1):
            raise ValueError(
                f"expected {self._no_batch_dims}D or {self._no_batch_dims + 1}D input (got {input.ndim}D input)"
            )

    def forward(self, input: Tensor) -> Tensor:
        """Normalise each (sample, channel) plane of ``input``."""
        self._check_input_dim(input)
        feature_dim = input.ndim - self._no_batch_dims
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features ({self.num_features}), "
                    f"but got: {input.shape[feature_dim]}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence this warning "
                "by not passing in num_features, which is not used because affine=False",
                stacklevel=2,
            )
        unbatched = input.ndim == self._no_batch_dims
        out = F.instance_norm(
            input.unsqueeze(0) if unbatched else input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or unbatched (C, L) input: each (sample, channel) row normalised
    by its own mean and biased variance.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: the running statistics' update factor (None: 0).
        affine: learn ``weight`` (ones at start) and ``bias`` (zeros) per channel.
        track_running_stats: keep running_mean / running_var (updated in training, used in eval).
        device, dtype: where and in which dtype the parameters and buffers are made.

    Shape: input (N, C, L) or (C, L); output the same shape.
    """

    _no_batch_dims = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or unbatched (C, H, W) input: each (sample, channel) plane
    normalised by its own mean and biased variance.

    Args: as InstanceNorm1d's.

    Shape: input (N, C, H, W) or (C, H, W); output the same shape.
    """

    _no_batch_dims = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or unbatched (C, D, H, W) input: each (sample, channel)
    volume normalised by its own mean and biased variance.

    Args: as InstanceNorm1d's.

    Shape: input (N, C, D, H, W) or (C, D, H, W); output the same shape.
    """

    _no_batch_dims = 4
