"""Negative log-likelihood losses of regression targets: Poisson (counts) and Gaussian (values with a
predicted variance), with torch's arguments, checks and numerics."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, autocast_policy, full_like, no_grad

from ._util import legacy_reduction
from ._util import reduce as _reduce

__all__ = ["gaussian_nll_loss", "poisson_nll_loss"]


@autocast_policy("float32")
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-log Poisson(target; rate), up to the target-only term unless ``full``.

    Args:
        log_input: ``input`` is log(rate): the loss is exp(input) - target * input; otherwise input is the
            rate itself: input - target * log(input + eps).
        full: add Stirling's approximation of log(target!), target log(target) - target + 0.5 log(2 pi target),
            where target > 1 (0 elsewhere), as torch.
        eps: keeps log(input + eps) finite when log_input is False.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        above_one = target > 1
        safe = target.where(above_one, 2.0)  # the masked-out entries' logs stay finite (no 0 * inf in backward)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + stirling.where(above_one, 0.0)
    return _reduce(loss, reduction)


def _gaussian_var(input: Tensor, var: Tensor | float) -> Tensor:
    """var checked (non-negative) and shaped to broadcast with input, by torch's rules: the same shape,
    one dimension short (then unsqueezed at the end), or one mismatched dimension of size 1."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        return full_like(input, var)
    if var.numel() and (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) == tuple(input.shape):
        return var
    if tuple(input.shape[:-1]) == tuple(var.shape):
        return var.unsqueeze(-1)
    if input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
        return var
    raise ValueError("var is of incorrect size")


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """0.5 (log(var) + (input - target)^2 / var), var clamped at ``eps`` (the clamp is not differentiated,
    as torch's); ``full`` adds 0.5 log(2 pi).

    Shape: input (N, *) or (*); target like input (or broadcasting to it); var like input, one dimension
    short, with one dimension of size 1 (homoscedastic), or a float.
    """
    var = _gaussian_var(input, var)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not valid")
    # torch clamps a clone of var in place under no_grad: the value is clamped, the gradient is var's own.
    with no_grad():
        lift = var.clamp_min(eps) - var
    var = var + lift
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
