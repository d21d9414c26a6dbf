"""Activations and the softmax family. Each is the library's own op where one exists
(Tensor.relu / gelu / silu / softmax ...), otherwise a short composition."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from genesis_autograd import Tensor, autocast_policy, is_grad_enabled

__all__ = [
    "gelu", "glu", "hardtanh", "leaky_relu", "log_softmax", "logsigmoid", "mish", "relu", "relu6", "sigmoid",
    "silu", "softmax", "softmin", "softplus", "tanh",
]


def _apply(fn: Callable[[Tensor], Tensor], input: Tensor, inplace: bool) -> Tensor:
    """fn(input), or for inplace=True written into ``input`` (recorded as a copy, so gradients flow).
    When the write is recorded, fn reads a clone: the ops it records may save their input, which the
    write would otherwise change under them."""
    if not inplace:
        return fn(input)
    source = input.clone() if input.requires_grad and is_grad_enabled() else input
    return input.copy_(fn(source))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(lambda t: t.clamp(min_val, max_val), input, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    # x where x > 0, else slope * x: at 0 the gradient is the slope, as torch's.
    return _apply(lambda t: t.where(t > 0, t * negative_slope), input, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return input.gelu(approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _apply(Tensor.silu, input, inplace)


@autocast_policy("float32")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (torch's rule). The exp sees
    the input clamped at the threshold, so the branch not taken never overflows (no inf * 0 in backward)."""
    scaled = input * beta
    soft = scaled.clamp_max(threshold).exp().log1p() / beta
    return input.where(scaled > threshold, soft)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _apply(lambda t: t * softplus(t).tanh(), input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-input)


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def glu(input: Tensor, dim: int = -1) -> Tensor:
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} is size "
                           f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype=dtype)
    return input.softmax(dim)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    if dtype is not None:
        input = input.to(dtype=dtype)
    return (-input).softmax(dim)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype=dtype)
    return input.log_softmax(dim)
