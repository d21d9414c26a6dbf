"""count_nonzero, aminmax and diff as Tensor methods (issue #30), composed of reduce.py's reductions,
comparisons and views; ReduceMoreMixin holds them. aminmax and diff have gradients through the ops they
compose; count_nonzero is an integer count (none)."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tensor_base import TensorBase

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor

# torch.return_types.aminmax: a tuple with the names min and max.
aminmax_result = namedtuple("aminmax_result", ["min", "max"])


class ReduceMoreMixin(TensorBase):
    """Tensor.count_nonzero, Tensor.aminmax and Tensor.diff."""

    __slots__ = ()

    def count_nonzero(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """The number of nonzero elements over ``dim`` (all by default): an int64 tensor."""
        this: Any = self
        return (this != 0).sum(dim)

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False) -> Any:
        """(min, max) over ``dim`` (all elements by default), as a named tuple; an empty reduction is refused."""
        this: Any = self
        if dim is None and this.numel() == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
            )
        if dim is not None and this.ndim and this.shape[dim] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {dim} to have non-zero size.")
        if dim is None:
            if keepdim:
                return aminmax_result(this.amin(keepdim=True), this.amax(keepdim=True))
            return aminmax_result(this.amin(), this.amax())
        return aminmax_result(this.amin(dim, keepdim), this.amax(dim, keepdim))

    def diff(self, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None) -> Tensor:
        """The ``n``-th forward difference along ``dim`` (``prepend`` / ``append`` joined on first); bool
        tensors give their XOR, as torch."""
        this: Any = self
        if this.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise RuntimeError(f"order must be non-negative but got {n}")
        x = this
        if prepend is not None or append is not None:
            from .. import cat  # (the package's: functions sit below genesis_autograd's __init__)

            x = cat([t for t in (prepend, this, append) if t is not None], dim)
        for _ in range(n):
            size = x.shape[dim]
            if size == 0:
                break
            later, earlier = x.narrow(dim, 1, size - 1), x.narrow(dim, 0, size - 1)
            x = later.logical_xor(earlier) if x.dtype.name == "bool" else later - earlier
        return x
