"""Padding modules: ConstantPad / ZeroPad / ReflectionPad / ReplicationPad / CircularPad in 1, 2 and
3 dims, each a call of F.pad with its mode.

``padding`` is an int (the same amount on every side) or a tuple of 2 * dims amounts, (left, right)
from the last dim backwards, as torch's.
"""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor

from . import functional as F
from .module import Module

Padding = int | Sequence[int]


def _amounts(padding: Padding, dims: int) -> tuple:
    """An int repeated 2 * dims times, a sequence as a tuple (its length is checked by F.pad)."""
    if isinstance(padding, Sequence):
        return tuple(padding)
    return (padding,) * (2 * dims)


class _PadNd(Module):
    """One padding mode over ``_dims`` dims; subclasses set the mode and the number of dims."""

    _mode = "constant"
    _dims = 1

    def __init__(self, padding: Padding) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._dims)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` padded by F.pad with this module's mode."""
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Constant padding with a fill ``value``."""

    def __init__(self, padding: Padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """``input`` padded with ``value``."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant. Args: padding (int or (left, right)), value."""


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with a constant. Args: padding (int or (left, right, top, bottom)), value."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with a constant. Args: padding (int or 6 amounts, last dim first), value."""

    _dims = 3


class _ZeroPadding(_ConstantPadNd):
    """Constant padding with zeros; mixed in before a ConstantPad class, so a ZeroPad is one."""

    def __init__(self, padding: Padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadding, ConstantPad1d):
    """Pad the last dim with zeros. Args: padding (int or (left, right))."""


class ZeroPad2d(_ZeroPadding, ConstantPad2d):
    """Pad the last 2 dims with zeros. Args: padding (int or (left, right, top, bottom))."""


class ZeroPad3d(_ZeroPadding, ConstantPad3d):
    """Pad the last 3 dims with zeros. Args: padding (int or 6 amounts, last dim first)."""


class ReflectionPad1d(_PadNd):
    """Pad the last dim of (N, C, W) or (C, W) with its reflection (the edge not repeated)."""

    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last 2 dims of (N, C, H, W) or (C, H, W) with their reflection."""

    _mode, _dims = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Pad the last 3 dims of (N, C, D, H, W) or (C, D, H, W) with their reflection."""

    _mode, _dims = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Pad the last dim of (N, C, W) or (C, W) by repeating its edge values."""

    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last 2 dims of (N, C, H, W) or (C, H, W) by repeating their edge values."""

    _mode, _dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Pad the last 3 dims of (N, C, D, H, W) or (C, D, H, W) by repeating their edge values."""

    _mode, _dims = "replicate", 3


class _CircularPadNd(_PadNd):
    """Circular padding, which checks the input's rank itself (ValueError, as torch's modules)."""

    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        """``input`` padded by wrapping around."""
        if input.ndim not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {input.ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pad the last dim of (N, C, W) or (C, W) by wrapping around (the other end's values)."""


class CircularPad2d(_CircularPadNd):
    """Pad the last 2 dims of (N, C, H, W) or (C, H, W) by wrapping around."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last 3 dims of (N, C, D, H, W) or (C, D, H, W) by wrapping around."""

    _dims = 3
