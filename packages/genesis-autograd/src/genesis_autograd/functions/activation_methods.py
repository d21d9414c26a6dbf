"""ActivationMethodsMixin: the activations torch also has as Tensor methods (``x.hardshrink()``,
``x.prelu(weight)``), composed of differentiable comparisons and ``where``: their gradients are those of
the compositions (the input's gradient passes where the value passes; prelu's weight gets the sum of
``x * grad`` over the negative part of each channel). genesis.nn.functional has the same functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..tensor_base import TensorBase
from .elementwise import _torch_dtype_name

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


class ActivationMethodsMixin(TensorBase):
    """Tensor's hardshrink and prelu."""

    __slots__ = ()

    def hardshrink(self, lambd: float = 0.5) -> Tensor:
        """x where |x| > lambd, else 0, elementwise; NaN stays NaN (torch.Tensor.hardshrink).

        Args:
            lambd: the half-width of the zeroed band.
        """
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f"\"hardshrink_cpu\" not implemented for '{_torch_dtype_name(self.dtype)}'")
        x = cast("Tensor", self)  # the mixin is only Tensor's base
        inside = (x >= -lambd).logical_and(x <= lambd)  # NaN is outside: it passes through, as torch's
        return x.where(inside.logical_not(), 0.0)

    def prelu(self, weight: Tensor) -> Tensor:
        """x where x > 0, else weight * x, with one slope for all (a one-element ``weight``) or one per
        channel (dim 1; a 1-D input has one channel) (torch.Tensor.prelu).

        Args:
            weight: a 0-d or 1-D tensor of 1 or C slopes, of this tensor's dtype.
        """
        if weight.ndim > 1:
            raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
        if self.dtype is not weight.dtype:
            raise RuntimeError(
                f"prelu: Type promoting not supported. Got {_torch_dtype_name(self.dtype)} and "
                f"{_torch_dtype_name(weight.dtype)}"
            )
        channels = self.shape[1] if self.ndim >= 2 else 1
        if weight.numel() not in (1, channels):
            raise RuntimeError(
                f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {weight.numel()} "
                f"and channel size = {channels}."
            )
        # one slope per channel laid along dim 1 (not broadcast from the last dim), or one for all
        slope = weight.reshape(()) if weight.numel() == 1 else weight.reshape(channels, *([1] * (self.ndim - 2)))
        x = cast("Tensor", self)  # the mixin is only Tensor's base
        return x.where(x > 0, x * slope)
