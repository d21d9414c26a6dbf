"""gumbel_softmax: differentiable samples from a categorical distribution given by logits."""

from __future__ import annotations

import warnings

from genesis_autograd import Tensor, empty, zeros_like

from ._util import torch_type_name

__all__ = ["gumbel_softmax"]


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) along ``dim``, g drawn from Gumbel(0, 1) per element.

    Args:
        logits: unnormalised log-probabilities, any shape, floating dtype.
        tau: the temperature (small: nearly one-hot; large: nearly uniform).
        hard: return one-hot vectors (the argmax of the soft sample) whose gradient is the soft
            sample's (the straight-through estimator).
        eps: deprecated, has no effect (torch warns when it is given).
        dim: the dimension that holds the categories.
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    if not logits.dtype.is_floating_point:
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a floating point "
            f"but you specified {torch_type_name(logits.dtype)}"
        )
    # -log(E) with E ~ Exp(1) is Gumbel(0, 1).
    gumbels = -empty(*logits.shape, dtype=logits.dtype, device=logits.device).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    # Straight through: the value of y_hard, the gradient of y_soft.
    return y_hard - y_soft.detach() + y_soft
