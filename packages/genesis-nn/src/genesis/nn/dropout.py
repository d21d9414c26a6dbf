"""The dropout modules: active in training mode only, each a call of nn.functional."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class _DropoutNd(Module):
    """What the dropout modules share: the probability ``p`` (checked) and ``inplace``."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training mode, zero each element with probability ``p`` and scale the others by 1 / (1 - p);
    in eval mode, the identity.

    Args:
        p: the probability of zeroing an element.
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """dropout of ``input`` (in training mode)."""
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """In training mode, zero whole channels (1-D feature maps) with probability ``p`` and scale the
    others by 1 / (1 - p); in eval mode, the identity.

    Args:
        p: the probability of zeroing a channel.
        inplace: write the result into the input.

    Shape: input (N, C, L) or (C, L); output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """dropout1d of ``input`` (in training mode)."""
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """In training mode, zero whole channels (2-D feature maps) with probability ``p`` and scale the
    others by 1 / (1 - p); in eval mode, the identity. A 3-D input is read as (N, C, L), as torch.

    Args:
        p: the probability of zeroing a channel.
        inplace: write the result into the input.

    Shape: input (N, C, H, W); output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """dropout2d of ``input`` (in training mode)."""
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """In training mode, zero whole channels (3-D feature maps) with probability ``p`` and scale the
    others by 1 / (1 - p); in eval mode, the identity.

    Args:
        p: the probability of zeroing a channel.
        inplace: write the result into the input.

    Shape: input (N, C, D, H, W) or (C, D, H, W); output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """dropout3d of ``input`` (in training mode)."""
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Alpha dropout for SELU networks: in training mode, elements dropped with probability ``p``
    take SELU's negative saturation value and an affine map keeps zero mean and unit variance; in
    eval mode, the identity. ``inplace`` is stored but not used, as in torch.

    Args:
        p: the probability of dropping an element.
        inplace: kept for torch's signature (torch's module ignores it too).

    Shape: input (*), any shape; output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """alpha_dropout of ``input`` (in training mode)."""
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (see AlphaDropout): one draw per (sample, channel).
    ``inplace`` is stored but not used, as in torch.

    Args:
        p: the probability of dropping a channel.
        inplace: kept for torch's signature (torch's module ignores it too).

    Shape: input (N, C, *); output the same shape.
    """

    def forward(self, input: Tensor) -> Tensor:
        """feature_alpha_dropout of ``input`` (in training mode)."""
        return F.feature_alpha_dropout(input, self.p, self.training)
