"""Helpers shared by the distributions (torch.distributions.utils' names): parameter broadcasting,
probabilities <-> logits, lazily computed parameters."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

import genesis
from genesis import Tensor

__all__ = [
    "broadcast_all",
    "broadcast_shapes",
    "clamp_probs",
    "euler_constant",
    "lazy_property",
    "logits_to_probs",
    "probs_to_logits",
]

euler_constant = 0.57721566490153286060  # the Euler-Mascheroni constant


def broadcast_shapes(*shapes: Sequence[int]) -> genesis.Size:
    """The shape the given shapes broadcast to, by torch's rules; RuntimeError if they cannot."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size != 1 and out[i] != 1 and size != out[i]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {list(shapes)}")
            if size != 1:
                out[i] = size
    return genesis.Size(out)


def broadcast_all(*values: Tensor | float) -> tuple[Tensor, ...]:
    """Tensors and numbers broadcast to one shape; numbers become tensors of the first tensor's dtype and
    device (the default dtype if all are numbers), as torch.distributions.utils.broadcast_all."""
    if not all(isinstance(v, Tensor | Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, genesis.Tensor.")
    first = next((v for v in values if isinstance(v, Tensor)), None)
    options: dict[str, Any] = (
        {"dtype": genesis.get_default_dtype()} if first is None else {"dtype": first.dtype, "device": first.device}
    )
    tensors = [v if isinstance(v, Tensor) else genesis.tensor(v, **options) for v in values]
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t if t.shape == shape else t.expand(*shape) for t in tensors)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` rightmost dimensions (none when dim is 0)."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[: value.dim() - dim], -1).sum(-1)


def tiny(dtype: Any) -> float:
    """The smallest positive normal number of a floating dtype (torch.finfo(dtype).tiny)."""
    return {genesis.float64: 2.2250738585072014e-308, genesis.float16: 6.103515625e-05}.get(
        dtype, 1.1754943508222875e-38
    )


def eps(dtype: Any) -> float:
    """The machine epsilon of a floating dtype (torch.finfo(dtype).eps)."""
    return {genesis.float64: 2.220446049250313e-16, genesis.float16: 0.0009765625, genesis.bfloat16: 0.0078125}.get(
        dtype, 1.1920928955078125e-07
    )


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept within [eps, 1 - eps] of their dtype, so that their logarithms stay finite."""
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: the sigmoid for a binary variable, else a softmax over the last dimension."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities: log(p) - log1p(-p) for a binary variable, else log(p) (clamped away from 0)."""
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


class lazy_property:
    """A property computed once, on first access, then stored on the instance (under grad mode, so that
    a probability derived from logits keeps its graph)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        """The value for ``instance``, computed and cached on its first read."""
        if instance is None:
            return self
        with genesis.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def standard_normal(shape: Sequence[int], like: Tensor) -> Tensor:
    """N(0, 1) draws of ``shape`` in ``like``'s dtype and on its device (genesis' generator)."""
    return genesis.randn(*shape, dtype=like.dtype, device=like.device)


def standard_uniform(shape: Sequence[int], like: Tensor) -> Tensor:
    """U[0, 1) draws of ``shape`` in ``like``'s dtype and on its device (genesis' generator)."""
    return genesis.rand(*shape, dtype=like.dtype, device=like.device)
