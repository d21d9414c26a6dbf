"""Loss modules: each holds its reduction (and weights, as buffers) and calls nn.functional."""

from __future__ import annotations

import warnings

from genesis_autograd import Tensor

from . import functional as F
from .functional._util import legacy_reduction
from .module import Module


class _Loss(Module):
    """Base of the loss modules (torch.nn.modules.loss._Loss): holds ``reduction``, taking torch's
    deprecated ``size_average`` / ``reduce`` spellings of it (with torch's warning)."""

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    """A loss with a ``weight`` buffer (None or a tensor), as torch.nn.modules.loss._WeightedLoss."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """The mean (or sum) absolute error |input - target|.

    Args:
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        size_average, reduce: torch's deprecated spellings of ``reduction``.

    Shape: input (*), target the same shape; output a scalar, or input's shape with reduction="none".
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """The mean (or sum) squared error (input - target)^2.

    Args:
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        size_average, reduce: torch's deprecated spellings of ``reduction``.

    Shape: input (*), target the same shape; output a scalar, or input's shape with reduction="none".
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input - target.

    Args:
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        size_average, reduce: torch's deprecated spellings of ``reduction``.
        beta: where the quadratic part turns linear (0: plain L1).

    Shape: input (*), target the same shape; output a scalar, or input's shape with reduction="none".
    """

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), for d = input - target.

    Args:
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        delta: where the quadratic part turns linear.

    Shape: input (*), target the same shape; output a scalar, or input's shape with reduction="none".
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence, target * (log(target) - input), with ``input`` log-probabilities.

    Args:
        reduction: ``"mean"`` (default), ``"batchmean"`` (the sum over the batch size: the divergence proper),
            ``"sum"`` or ``"none"``.
        size_average, reduce: torch's deprecated spellings of ``reduction``.
        log_target: ``target`` holds log-probabilities too.

    Shape: input (*), target the same shape; output a scalar, or input's shape with reduction="none".
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class NLLLoss(_WeightedLoss):
    """The negative log-likelihood -input[n, target[n]] of class indices, for log-probabilities
    (LogSoftmax's output).

    Args:
        weight: (C,) a weight per class, or None.
        ignore_index: a target value that contributes nothing (nor to the mean's divisor).
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        size_average, reduce: torch's deprecated spellings of ``reduction``.

    Shape: input (N, C) or (N, C, d1, ...), target (N) or (N, d1, ...) int64 in [0, C); output a scalar, or
    the target's shape with reduction="none".
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """torch's deprecated name of NLLLoss (for (N, C, H, W) inputs); constructing one warns, as torch."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
            "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and classes: log_softmax over the class dimension, then
    NLLLoss. Targets are class indices, or class probabilities shaped like the input.

    Args:
        weight: (C,) a weight per class, or None.
        ignore_index: a class-index target that contributes nothing (nor to the mean's divisor).
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        size_average, reduce: torch's deprecated spellings of ``reduction``.
        label_smoothing: in [0, 1], the share of the uniform distribution mixed into the target.

    Shape: input (N, C), (C,) or (N, C, d1, ...) logits; target (N), () or (N, d1, ...) int64 in [0, C), or
    probabilities of the input's shape; output a scalar, or per sample with reduction="none".
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class BCELoss(_WeightedLoss):
    """Binary cross entropy -(t log x + (1 - t) log(1 - x)) for probabilities x in [0, 1]; each log is
    clamped at -100, as torch's.

    Args:
        weight: a weight that broadcasts with the loss, or None.
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        size_average, reduce: torch's deprecated spellings of ``reduction``.

    Shape: input (*), target the same shape; output a scalar, or input's shape with reduction="none".
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of sigmoid(input), computed stably from the logits.

    Args:
        weight: a weight that broadcasts with the loss, or None.
        reduction: ``"mean"`` (default), ``"sum"``, or ``"none"`` for the per-element loss.
        size_average, reduce: torch's deprecated spellings of ``reduction``.
        pos_weight: a weight of the positive term that broadcasts with the target (one per class), or None.

    Shape: input (*), target the same shape; output a scalar, or input's shape with reduction="none".
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )
