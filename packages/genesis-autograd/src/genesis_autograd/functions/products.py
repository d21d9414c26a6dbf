"""Products of fixed rank as Tensor methods (issue #30): mm, bmm, mv, dot, vdot, inner, outer / ger, the
scaled sums addmm, addbmm, addmv, addr, baddbmm (and their in-place forms), tensordot and cross.

Each checks its operands as torch does (same error class and message), then composes matmul, sums and
elementwise ops that already have gradients, so autograd needs nothing new. ProductsMixin holds them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..tensor_base import Scalar, TensorBase

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def _rank(name: str, t: Any, ndim: int, what: str) -> None:
    if t.ndim != ndim:
        raise RuntimeError(f"{name} must be a {what}")


def _same_length(a: Any, b: Any) -> None:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    n, m = a.shape[0], b.shape[0]
    if n != m:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of "
            f"elements, but got {n} and {m} elements respectively"
        )


def _scaled_sum(input: Any, product: Any, beta: Scalar, alpha: Scalar) -> Any:
    """beta * input + alpha * product, input broadcast; with beta 0 input is ignored (its NaN does not spread)."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled + input.expand(*product.shape) * 0 if input.requires_grad else scaled
    return scaled + (input if beta == 1 else input * beta)


def _me(x: object) -> Any:
    """A mixin's self as the Tensor it is part of, for the type checker (which sees the mixin alone)."""
    return x


class ProductsMixin(TensorBase):
    """Tensor's fixed-rank products and scaled sums of products."""

    __slots__ = ()

    def mm(self, mat2: Tensor) -> Tensor:
        """The product of two matrices (no broadcasting, unlike matmul)."""
        _rank("self", self, 2, "matrix")
        _rank("mat2", mat2, 2, "matrix")
        return self @ mat2

    def bmm(self, mat2: Tensor) -> Tensor:
        """Batched matrix products of two 3-D tensors with the same batch size (no broadcasting)."""
        _rank("batch1", self, 3, "3D tensor")
        _rank("batch2", mat2, 3, "3D tensor")
        b, _, k = self.shape
        if tuple(mat2.shape[:2]) != (b, k):
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] "
                f"but got: [{mat2.shape[0]}, {mat2.shape[1]}]."
            )
        return self @ mat2

    def mv(self, vec: Tensor) -> Tensor:
        """A matrix times a vector."""
        if self.ndim != 2 or vec.ndim != 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self.ndim}, {vec.ndim}")
        return self @ vec

    def dot(self, tensor: Tensor) -> Tensor:
        """The inner product of two 1-D tensors of the same length (a 0-d tensor)."""
        _same_length(self, tensor)
        return (_me(self) * tensor).sum()

    def vdot(self, other: Tensor) -> Tensor:
        """dot with the first operand conjugated: the same as dot for genesis' real dtypes."""
        return self.dot(other)

    def inner(self, other: Tensor) -> Tensor:
        """The sum of products over the last dims of both: shape self.shape[:-1] + other.shape[:-1]; a
        0-d operand multiplies."""
        if self.ndim == 0 or other.ndim == 0:
            return _me(self) * other
        if self.shape[-1] != other.shape[-1]:
            raise RuntimeError(
                "inner() the last dimension must match on both input tensors but got shapes "
                f"{list(self.shape)} and {list(other.shape)}"
            )
        return self.tensordot(other, ([self.ndim - 1], [other.ndim - 1]))

    def outer(self, vec2: Tensor) -> Tensor:
        """The outer product of two 1-D tensors: ``out[i, j] = self[i] * vec2[j]``."""
        for name, t in (("self", self), ("vec2", vec2)):
            if t.ndim != 1:
                raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
        return _me(self).unsqueeze(1) * vec2.unsqueeze(0)

    ger = outer

    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)``, self broadcast to the product's shape."""
        return _scaled_sum(self, mat1.mm(mat2), beta, alpha)

    def baddbmm(self, batch1: Tensor, batch2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        """``beta * self + alpha * (batch1 @ batch2)`` over a batch of matrices."""
        return _scaled_sum(self, batch1.bmm(batch2), beta, alpha)

    def addbmm(self, batch1: Tensor, batch2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        """``beta * self + alpha * sum_b(batch1[b] @ batch2[b])``: the batch's products summed into one matrix."""
        _rank("batch1", batch1, 3, "3D tensor")
        _rank("batch2", batch2, 3, "3D tensor")
        if batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
            raise RuntimeError(
                f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                f"{batch2.shape[1]}x{batch2.shape[2]})"
            )
        return _scaled_sum(self, (batch1 @ batch2).sum(0), beta, alpha)

    def addmv(self, mat: Tensor, vec: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        """``beta * self + alpha * (mat @ vec)``."""
        if mat.ndim != 2 or vec.ndim != 1 or self.ndim > 1:
            raise RuntimeError(f"vector + matrix @ vector expected, got {self.ndim}, {mat.ndim}, {vec.ndim}")
        if mat.shape[1] != vec.shape[0] or (self.ndim == 1 and self.shape[0] not in (1, mat.shape[0])):
            raise RuntimeError(
                f"size mismatch, got input ({self.shape[0] if self.ndim else 1}), "
                f"mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})"
            )
        return _scaled_sum(self, mat @ vec, beta, alpha)

    def addr(self, vec1: Tensor, vec2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        """``beta * self + alpha * outer(vec1, vec2)``."""
        for name, t in (("vec1", vec1), ("vec2", vec2)):
            if t.ndim != 1:
                raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {t.ndim}-D")
        return _scaled_sum(self, vec1.outer(vec2), beta, alpha)

    def tensordot(self, other: Tensor, dims: int | Sequence[Any] = 2) -> Tensor:
        """Contract ``dims`` (a count: self's last and other's first dims; or two lists of dims) by one matmul."""
        if isinstance(dims, int):
            if dims < 0:
                raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
            if dims > min(self.ndim, other.ndim):
                raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
            dims_a, dims_b = list(range(self.ndim - dims, self.ndim)), list(range(dims))
        else:
            da, db = dims
            dims_a = [da] if isinstance(da, int) else list(da)
            dims_b = [db] if isinstance(db, int) else list(db)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
        dims_a = [d % self.ndim for d in dims_a] if self.ndim else dims_a
        dims_b = [d % other.ndim for d in dims_b] if other.ndim else dims_b
        for x, y in zip(dims_a, dims_b):
            if self.shape[x] != other.shape[y]:
                raise RuntimeError(
                    f"contracted dimensions need to match, but first has size {self.shape[x]} in dim {x} and "
                    f"second has size {other.shape[y]} in dim {y}"
                )
        free_a = [d for d in range(self.ndim) if d not in dims_a]
        free_b = [d for d in range(other.ndim) if d not in dims_b]
        k = 1
        for d in dims_a:
            k *= self.shape[d]
        a: Any = _me(self).permute(*free_a, *dims_a).reshape(-1, k)
        b: Any = other.permute(*dims_b, *free_b).reshape(k, -1)
        shape = [self.shape[d] for d in free_a] + [other.shape[d] for d in free_b]
        return (a @ b).reshape(shape)

    def cross(self, other: Tensor, dim: int | None = None) -> Tensor:
        """The 3-D cross product along ``dim`` (a dim of size 3; by default the first such, as torch, which
        warns that the default will change); the two broadcast."""
        if self.ndim != other.ndim:
            raise RuntimeError(
                f"linalg.cross: inputs must have the same number of dimensions. Got {self.ndim} and {other.ndim}"
            )
        a: Any = self
        b: Any = other
        if dim is None:
            warnings.warn(
                "Using torch.cross without specifying the dim arg is deprecated. Please either pass the dim "
                "explicitly or simply use torch.linalg.cross.",
                UserWarning,
                stacklevel=2,
            )
            dim = next((d for d in range(self.ndim) if self.shape[d] == 3 and other.shape[d] == 3), None)
            if dim is None:
                raise RuntimeError("no dimension of size 3 in input")
        if self.shape[dim] != 3 or other.shape[dim] != 3:
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got {self.shape[dim]} and {other.shape[dim]}"
            )

        def part(t: Any, i: int) -> Any:
            return t.narrow(dim, i, 1)

        from .. import cat  # (the package's cat: functions sit below genesis_autograd's __init__)

        return cat(
            [
                part(a, 1) * part(b, 2) - part(a, 2) * part(b, 1),
                part(a, 2) * part(b, 0) - part(a, 0) * part(b, 2),
                part(a, 0) * part(b, 1) - part(a, 1) * part(b, 0),
            ],
            dim,
        )

    # ------------------------------------------------------------- in-place forms
    def addmm_(self, mat1: Tensor, mat2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        return self._math_inplace("addmm", mat1, mat2, beta=beta, alpha=alpha)

    def addbmm_(self, batch1: Tensor, batch2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        return self._math_inplace("addbmm", batch1, batch2, beta=beta, alpha=alpha)

    def baddbmm_(self, batch1: Tensor, batch2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        return self._math_inplace("baddbmm", batch1, batch2, beta=beta, alpha=alpha)

    def addmv_(self, mat: Tensor, vec: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        return self._math_inplace("addmv", mat, vec, beta=beta, alpha=alpha)

    def addr_(self, vec1: Tensor, vec2: Tensor, *, beta: Scalar = 1, alpha: Scalar = 1) -> Tensor:
        return self._math_inplace("addr", vec1, vec2, beta=beta, alpha=alpha)
