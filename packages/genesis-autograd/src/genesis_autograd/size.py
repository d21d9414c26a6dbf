"""Size: the type of ``Tensor.shape`` and ``Tensor.size()``, a tuple with torch.Size's extras."""

from __future__ import annotations

import math


class Size(tuple):
    """A tuple of dimension sizes; ``numel()`` is their product, and it prints as ``genesis.Size([3, 4])``."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"genesis.Size({list(self)})"

    def __getitem__(self, index):  # a slice of a Size is a Size, as in torch
        out = tuple.__getitem__(self, index)
        return Size(out) if isinstance(index, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, other))
