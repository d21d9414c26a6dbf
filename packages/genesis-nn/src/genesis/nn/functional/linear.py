"""linear: y = x W^T + b."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, autocast_policy
from genesis_autograd import linear as _fused_linear

__all__ = ["linear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = input @ weight^T + bias.

    Args:
        input: (*, in_features).
        weight: (out_features, in_features).
        bias: (out_features,) or None.

    Returns:
        (*, out_features); under autocast, in the autocast dtype (input and weight cast to it; a float32
        bias stays float32, added before the one rounding: autocast's "linear" policy).
    """
    if input.shape[-1:] != weight.shape[-1:]:
        rows = math.prod(input.shape[:-1])
        w = "x".join(map(str, reversed(weight.shape)))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and {w})")
    if weight.ndim == 2 and input.ndim >= 1:
        # One launch, the bias in the matmul's epilogue; the Linear op applies autocast's policy itself.
        return _fused_linear(input, weight, bias)
    return _composed_linear(input, weight, bias)


@autocast_policy("lower")  # a vector weight or a 0-d input: a matmul and an add, all in the low dtype
def _composed_linear(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    out = input.matmul(weight)
    return out + bias if bias is not None else out
