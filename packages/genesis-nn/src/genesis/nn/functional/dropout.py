"""dropout: zero elements with probability p while training, scale the rest by 1 / (1 - p)."""

from __future__ import annotations

from genesis_autograd import Tensor, empty, is_grad_enabled

__all__ = ["dropout"]


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """While ``training``, zero each element with probability ``p`` and scale the others by
    1 / (1 - p); otherwise return ``input`` unchanged.

    Args:
        input: any shape.
        p: the probability of zeroing an element.
        training: apply dropout (False: the identity).
        inplace: write the result into ``input``.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    # With inplace, the product reads a clone when it is recorded (it saves its operand, which the write
    # would change under it).
    source = input.clone() if inplace and input.requires_grad and is_grad_enabled() else input
    if p == 1.0:
        out = source * 0.0
    else:
        # One mask tensor, already scaled, so the graph holds a single product.
        mask = empty(*input.shape, dtype=input.dtype, device=input.device).bernoulli_(1.0 - p)
        out = source * mask.mul_(1.0 / (1.0 - p))
    return input.copy_(out) if inplace else out
