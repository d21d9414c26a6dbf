"""Activations and the softmax family. Each is the library's own op where one exists
(Tensor.relu / gelu / silu / softmax ...), otherwise a short composition."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import genesis_autograd
from genesis_autograd import Tensor, autocast_policy, is_grad_enabled

if TYPE_CHECKING:
    from genesis_autograd import DType

__all__ = [
    "geglu",
    "gelu",
    "glu",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "mish",
    "relu",
    "relu6",
    "relu_",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "swiglu",
    "tanh",
    "tanhshrink",
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
    """max(x, 0) elementwise.

    Args:
        input: any shape.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """In-place :func:`relu`: ``input`` is overwritten with max(x, 0) and returned."""
    return input.relu_()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) elementwise (``hardtanh(input, 0, 6)``).

    Args:
        input: any shape.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val] elementwise.

    Args:
        input: any shape.
        min_val: the lower bound.
        max_val: the upper bound.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(lambda t: t.clamp(min_val, max_val), input, inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`: ``input`` is overwritten with x clamped to [min_val, max_val]."""
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x (the slope is also the gradient at 0, as torch's).

    Args:
        input: any shape.
        negative_slope: the slope for negative inputs.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    return _apply(lambda t: t.where(t > 0, t * negative_slope), input, inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`: ``input`` is overwritten and returned."""
    return leaky_relu(input, negative_slope, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """GELU, x * Phi(x) with Phi the standard normal CDF, elementwise.

    Args:
        input: any shape.
        approximate: ``"none"`` (exact, with erf) or ``"tanh"`` (the tanh approximation).
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return input.gelu(approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """SiLU (swish), x * sigmoid(x) elementwise.

    Args:
        input: any shape.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    return _apply(Tensor.silu, input, inplace)


@autocast_policy("float32")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (torch's rule). The exp sees
    the input clamped at the threshold, so the branch not taken never overflows (no inf * 0 in backward)."""
    scaled = input * beta
    soft = scaled.clamp_max(threshold).exp().log1p() / beta
    return input.where(scaled > threshold, soft)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Mish, x * tanh(softplus(x)) elementwise.

    Args:
        input: any shape.
        inplace: write the result into ``input`` (the gradient still flows).
    """
    return _apply(lambda t: t * softplus(t).tanh(), input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    """The logistic sigmoid 1 / (1 + exp(-x)) elementwise."""
    return input.sigmoid()


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-input)


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent elementwise."""
    return input.tanh()


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x) elementwise."""
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|) elementwise."""
    return input / (input.abs() + 1)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: a * sigmoid(b), where a and b are the two halves of ``input`` along ``dim``;
    one fused op each way, reading both halves in place.

    Shape: (*, 2n, *) -> (*, n, *) along ``dim``.
    """
    return genesis_autograd.glu(input, dim)


def swiglu(gate: Tensor, up: Tensor) -> Tensor:
    """SwiGLU, ``silu(gate) * up``: one fused op each way. A Genesis extension: torch has no
    ``F.swiglu`` (there it is ``F.silu(gate) * up``).

    Args:
        gate, up: tensors that broadcast together, as for ``*`` (typically the two halves of one
            projection, ``x.chunk(2, -1)``, which are read in place).
    """
    return genesis_autograd.swiglu(gate, up)


def geglu(gate: Tensor, up: Tensor, approximate: str = "none") -> Tensor:
    """GeGLU, ``gelu(gate, approximate) * up``: one fused op each way. A Genesis extension: torch has
    no ``F.geglu`` (there it is ``F.gelu(gate, approximate=...) * up``).

    Args:
        gate, up: tensors that broadcast together, as for ``*``.
        approximate: ``"none"`` (exact, with erf) or ``"tanh"``.
    """
    return genesis_autograd.geglu(gate, up, approximate)


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | str | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``: the slices along dim sum to 1.

    Args:
        input: any shape.
        dim: the dimension to normalise (None: torch's deprecated implicit choice, with a warning).
        dtype: cast ``input`` to this dtype first.
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype=dtype)
    return input.softmax(dim)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | str | None = None) -> Tensor:
    """``softmax(-input, dim)``: the smallest elements get the largest weights.

    Args:
        input: any shape.
        dim: the dimension to normalise (None: torch's deprecated implicit choice, with a warning).
        dtype: cast ``input`` to this dtype first.
    """
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    if dtype is not None:
        input = input.to(dtype=dtype)
    return (-input).softmax(dim)


def log_softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: DType | str | None = None
) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably; the input of nll_loss.

    Args:
        input: any shape.
        dim: the dimension to normalise (None: torch's deprecated implicit choice, with a warning).
        dtype: cast ``input`` to this dtype first.
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    if dtype is not None:
        input = input.to(dtype=dtype)
    return input.log_softmax(dim)
