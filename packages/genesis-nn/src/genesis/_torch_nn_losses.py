"""The losses torch also has at its top level (torch.ctc_loss, torch.kl_div, ...): the nn.functional
losses with torch's top-level signature, where ``reduction`` is torch's integer enum (0 none, 1 mean, 2 sum).

Called without a reduction, torch 2.13's top-level forms return the unreduced loss (its Python binding's
default, whatever the schema's ``Mean`` says); these do the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor

from .nn.functional import loss as _loss
from .nn.functional import loss_ctc, loss_margin
from .nn.functional.loss_likelihood import poisson_nll_loss as _poisson_nll_loss

__all__ = [
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "ctc_loss",
    "hinge_embedding_loss",
    "kl_div",
    "margin_ranking_loss",
    "poisson_nll_loss",
    "triplet_margin_loss",
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(value: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"argument 'reduction' must be int, not {type(value).__name__}")
    if value not in _REDUCTIONS:
        raise ValueError(f"{value} is not a valid value for reduction")
    return _REDUCTIONS[value]


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: int = 0,
    zero_infinity: bool = False,
) -> Tensor:
    """torch.ctc_loss: nn.functional.ctc_loss with an integer reduction."""
    return loss_ctc.ctc_loss(
        log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity
    )


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """torch.cosine_embedding_loss: nn.functional.cosine_embedding_loss with an integer reduction."""
    return loss_margin.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0) -> Tensor:
    """torch.hinge_embedding_loss: nn.functional.hinge_embedding_loss with an integer reduction."""
    return loss_margin.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """torch.margin_ranking_loss: nn.functional.margin_ranking_loss with an integer reduction."""
    return loss_margin.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int) -> Tensor:
    """torch.poisson_nll_loss (every argument required, as torch's)."""
    return _poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = 0,
) -> Tensor:
    """torch.triplet_margin_loss: nn.functional.triplet_margin_loss with an integer reduction."""
    return loss_margin.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction)
    )


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False) -> Tensor:
    """torch.kl_div: pointwise KL divergence; reduction 1 divides by every element (no 'batchmean' here)."""
    name = _reduction(reduction)
    loss = _loss.kl_div(input, target, reduction="none", log_target=log_target)
    return loss.mean() if name == "mean" else loss.sum() if name == "sum" else loss


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int = 0,
) -> Tensor:
    """torch.binary_cross_entropy_with_logits: the nn.functional form with an integer reduction."""
    return _loss.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction(reduction), pos_weight=pos_weight
    )
