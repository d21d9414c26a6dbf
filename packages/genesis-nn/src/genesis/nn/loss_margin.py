"""Margin and embedding loss modules (torch's): each keeps its arguments and calls nn.functional."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from genesis_autograd import Tensor

from .functional import loss_margin
from .loss import _Loss, _WeightedLoss
from .module import Module

__all__ = [
    "CosineEmbeddingLoss",
    "HingeEmbeddingLoss",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
]


class CosineEmbeddingLoss(_Loss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1.

    Shape: input1, input2 (N, D) or (D); target (N) or (); output (N) or () with reduction="none".
    """

    def __init__(
        self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return loss_margin.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x for target 1, max(0, margin - x) for target -1 (x typically a distance)."""

    def __init__(
        self, margin: float = 1.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return loss_margin.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -target (x1 - x2) + margin) for targets 1 (x1 ranks first) or -1."""

    def __init__(
        self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return loss_margin.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss between scores (N, C) and target class lists (N, C), each ended by -1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return loss_margin.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-versus-all logistic loss per class for 0/1 targets (N, C), averaged over the classes."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return loss_margin.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: sum over i != y of max(0, margin - x[y] + x[i])^p / C.

    Args:
        p: 1 or 2.
        margin: the margin.
        weight: (C,) a weight per target class, or None.
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead")
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return loss_margin.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )


class SoftMarginLoss(_Loss):
    """Two-class logistic loss log(1 + exp(-y x)) for targets 1 or -1."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return loss_margin.soft_margin_loss(input, target, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) with the pairwise p-norm distance d.

    Args:
        margin: > 0.
        p: the norm's degree.
        eps: added to the difference before the norm (torch's pairwise_distance).
        swap: use min(d(a, n), d(p, n)) as the negative distance.
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return loss_margin.triplet_margin_loss(
            anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps, swap=self.swap,
            reduction=self.reduction,
        )  # fmt: skip


def _default_distance() -> Callable[[Tensor, Tensor], Tensor]:
    """torch's default, a PairwiseDistance module, where genesis.nn has one; else the same function."""
    nn = importlib.import_module("genesis.nn")  # at call time: genesis.nn is complete by then
    module_class = getattr(nn, "PairwiseDistance", None)
    return module_class() if module_class is not None else loss_margin._pairwise_distance


class TripletMarginWithDistanceLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) for any distance function d (PairwiseDistance by default).

    Args:
        distance_function: a callable of two tensors, or None.
        margin: > 0.
        swap: use min(d(a, n), d(p, n)) as the negative distance.
    """

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.distance_function: Callable[[Tensor, Tensor], Tensor] | Module = (
            distance_function if distance_function is not None else _default_distance()
        )
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return loss_margin.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function, margin=self.margin,
            swap=self.swap, reduction=self.reduction,
        )  # fmt: skip
