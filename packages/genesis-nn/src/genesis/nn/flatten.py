"""Flatten and Unflatten: reshape a range of dims into one, and one dim into several."""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor

from .module import Module


class Flatten(Module):
    """The dimensions ``start_dim`` to ``end_dim`` merged into one (Tensor.flatten as a layer).

    Args:
        start_dim: the first dimension to merge (1 keeps the batch dimension).
        end_dim: the last dimension to merge.

    Shape: (N, d1, d2, ...) -> (N, d1 * d2 * ...) with the defaults.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Dimension ``dim`` split into ``unflattened_size`` (Tensor.unflatten as a layer).

    Args:
        dim: the dimension to split.
        unflattened_size: the new sizes; their product is the size of ``dim``.

    Shape: (*, d, *) -> (*, u1, u2, ..., *) along ``dim``.
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument dim: expected an int, got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)) or not all(isinstance(s, int) for s in unflattened_size):
            raise TypeError(
                f"unflattened_size must be tuple of ints, but found element of type {type(unflattened_size).__name__}"
            )
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
