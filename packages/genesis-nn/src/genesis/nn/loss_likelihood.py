"""Likelihood loss modules (torch's): Poisson and Gaussian negative log-likelihoods and CTC."""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor

from .functional import loss_ctc, loss_likelihood
from .loss import _Loss

__all__ = ["CTCLoss", "GaussianNLLLoss", "PoissonNLLLoss"]


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of targets drawn from Poisson(rate).

    Args:
        log_input: the input is log(rate) (loss exp(input) - target input), else the rate
            (input - target log(input + eps)).
        full: add Stirling's approximation of log(target!).
        eps: keeps the log finite when log_input is False.
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return loss_likelihood.poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of targets drawn from Normal(input, var): 0.5 (log var + (input - target)^2 / var).

    Args:
        full: add the constant 0.5 log(2 pi).
        eps: the variance's lower clamp.
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        return loss_likelihood.gaussian_nll_loss(
            input, target, var, full=self.full, eps=self.eps, reduction=self.reduction
        )


class CTCLoss(_Loss):
    """Connectionist temporal classification: -log of the probability of every alignment of a target.

    Args:
        blank: the blank class.
        reduction: ``"mean"`` (losses divided by their target lengths, then averaged), ``"sum"`` or ``"none"``.
        zero_infinity: impossible alignments give 0 and no gradient.

    Shape: log_probs (T, N, C) or (T, C); targets (N, S) or concatenated (sum(target_lengths)); lengths (N).
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(
        self,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor | Sequence[int],
        target_lengths: Tensor | Sequence[int],
    ) -> Tensor:
        return loss_ctc.ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity
        )
