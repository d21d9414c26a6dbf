"""Piecewise-linear activation modules: Hardtanh and ReLU6, Hardsigmoid, Hardswish, Hardshrink,
Softshrink and Threshold, each a call of nn.functional."""

from __future__ import annotations

import warnings

from genesis_autograd import Tensor

from . import functional as F
from .activation import _inplace_repr
from .module import Module


class Hardtanh(Module):
    """x clamped to [min_val, max_val] elementwise.

    Args:
        min_val: the lower bound.
        max_val: the upper bound (above min_val).
        inplace: write the result into the input.
        min_value, max_value: deprecated spellings of min_val and max_val.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn(
                "keyword argument `min_value` is deprecated and rename to `min_val`", FutureWarning, stacklevel=2
            )
            min_val = min_value
        if max_value is not None:
            warnings.warn(
                "keyword argument `max_value` is deprecated and rename to `max_val`", FutureWarning, stacklevel=2
            )
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        assert self.max_val > self.min_val  # torch's check, and its exception class

    def forward(self, input: Tensor) -> Tensor:
        """hardtanh of ``input``."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_repr(self.inplace, first=False)}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6) elementwise (Hardtanh(0, 6)).

    Args:
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6 elementwise: 0 below -3, 1 above 3, linear between.

    Args:
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """hardsigmoid of ``input``."""
        return F.hardsigmoid(input, self.inplace)


class Hardswish(Module):
    """x * relu6(x + 3) / 6 elementwise.

    Args:
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """hardswish of ``input``."""
        return F.hardswish(input, self.inplace)


class Hardshrink(Module):
    """x where |x| > lambd, else 0, elementwise.

    Args:
        lambd: the half-width of the zeroed band.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """hardshrink of ``input``."""
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Module):
    """x - lambd above lambd, x + lambd below -lambd, 0 between, elementwise.

    Args:
        lambd: the half-width of the zeroed band (at least 0).

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """softshrink of ``input``."""
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Threshold(Module):
    """x where x > threshold, else ``value``, elementwise.

    Args:
        threshold: the value to compare with.
        value: what replaces the elements not above the threshold.
        inplace: write the result into the input.

    Shape: input (*), any shape; output the same shape.
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        """threshold of ``input``."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_repr(self.inplace, first=False)}"
