"""LinearCrossEntropyLoss: a Linear head and cross entropy in one module (torch 2.13's), computed by
nn.functional.linear_cross_entropy (in chunks, when given LinearCrossEntropyOptions)."""

from __future__ import annotations

import math

from genesis_autograd import Tensor

from .functional.linear_cross_entropy import LinearCrossEntropyOptions, linear_cross_entropy
from .linear import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``self.linear(input)``: the head's weight is stored flat, (C * prod(out_features),
    in_features), as torch's, and reshaped to (C, *out_features, in_features) in forward.

    Args:
        in_features: the input's last dimension.
        num_classes: C.
        out_features: (d1, ..., dK) for a K-dimensional loss.
        bias: the head has a bias.
        reduction, weight, ignore_index, label_smoothing: as CrossEntropyLoss's (ignore_index None: -100).
        options: LinearCrossEntropyOptions to compute in chunks, or None.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device=None,
        dtype=None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: LinearCrossEntropyOptions | None = None,
    ) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(
            in_features, math.prod(out_features, start=num_classes), bias=bias, device=device, dtype=dtype
        )
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        weight = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        bias = None if self.linear.bias is None else self.linear.bias.reshape((self.num_classes, *self.out_features))
        return linear_cross_entropy(
            input,
            weight,
            target,
            linear_bias=bias,
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
            options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
            f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}"
        )
