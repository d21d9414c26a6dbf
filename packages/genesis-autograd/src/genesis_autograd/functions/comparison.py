"""Comparisons, logic and bitwise ops beyond elementwise.py's operators (issue #30): torch's long spellings
(greater, less_equal, not_equal, ...), the bitwise functions and shifts with their operators, every in-place
form (eq_, logical_and_, bitwise_or_, ``&=``, ``<<=``, ...) and the whole-tensor tests equal, isclose and
allclose; ComparisonMixin holds them. None has a gradient, as in torch.

An in-place comparison writes its bool result into self's dtype (1 / 0), through Tensor._math_inplace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from genesis_ndarray import get_default_dtype

from ..tensor_base import Scalar, TensorBase

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


def _me(x: object) -> Any:
    """A mixin's self as the Tensor it is part of, for the type checker (which sees the mixin alone)."""
    return x


class ComparisonMixin(TensorBase):
    """Tensor's comparison, logic and bitwise methods beyond the operators of ElementwiseMixin."""

    __slots__ = ()

    def _bitwise(self, op: str, other: object) -> Any:
        return _me(self)._no_grad_binary(op, other)

    # ------------------------------------------------------------- torch's long spellings
    def greater(self, other: Tensor | Scalar) -> Tensor:
        """self > other, elementwise: torch's alias of gt."""
        return _me(self).gt(other)

    def greater_equal(self, other: Tensor | Scalar) -> Tensor:
        """self >= other, elementwise: torch's alias of ge."""
        return _me(self).ge(other)

    def less(self, other: Tensor | Scalar) -> Tensor:
        """self < other, elementwise: torch's alias of lt."""
        return _me(self).lt(other)

    def less_equal(self, other: Tensor | Scalar) -> Tensor:
        """self <= other, elementwise: torch's alias of le."""
        return _me(self).le(other)

    def not_equal(self, other: Tensor | Scalar) -> Tensor:
        """self != other, elementwise: torch's alias of ne."""
        return _me(self).ne(other)

    # ------------------------------------------------------------- bitwise functions and operators
    def bitwise_and(self, other: Tensor | Scalar) -> Tensor:
        """Elementwise AND of integers (logical AND of bools); floating dtypes are refused."""
        return self._bitwise("bitwise_and", other)

    def bitwise_or(self, other: Tensor | Scalar) -> Tensor:
        """Elementwise OR of integers (logical OR of bools); floating dtypes are refused."""
        return self._bitwise("bitwise_or", other)

    def bitwise_xor(self, other: Tensor | Scalar) -> Tensor:
        """Elementwise XOR of integers (logical XOR of bools); floating dtypes are refused."""
        return self._bitwise("bitwise_xor", other)

    def bitwise_not(self) -> Tensor:
        """Elementwise NOT of integers (logical NOT of bools); floating dtypes are refused."""
        return self._result_type(self.data.unary("bitwise_not"))

    def bitwise_left_shift(self, other: Tensor | Scalar) -> Tensor:
        """self << other, elementwise on integers: counts past the width (or negative) give 0, as torch."""
        return self._bitwise("bitwise_left_shift", other)

    def bitwise_right_shift(self, other: Tensor | Scalar) -> Tensor:
        """self >> other, arithmetic, elementwise on integers: counts past the width give 0 or -1 by sign."""
        return self._bitwise("bitwise_right_shift", other)

    __lshift__ = bitwise_left_shift
    __rshift__ = bitwise_right_shift

    def __rand__(self, other: Scalar) -> Tensor:
        return self._bitwise("bitwise_and", other)

    def __ror__(self, other: Scalar) -> Tensor:
        return self._bitwise("bitwise_or", other)

    def __rxor__(self, other: Scalar) -> Tensor:
        return self._bitwise("bitwise_xor", other)

    def __rlshift__(self, other: Scalar) -> Tensor:
        return self._result_type(self.data._binary("bitwise_left_shift", other, reverse=True))

    def __rrshift__(self, other: Scalar) -> Tensor:
        return self._result_type(self.data._binary("bitwise_right_shift", other, reverse=True))

    # ------------------------------------------------------------- in-place forms: the result in self's dtype
    def eq_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("eq", other)

    def ne_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("ne", other)

    def lt_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("lt", other)

    def le_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("le", other)

    def gt_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("gt", other)

    def ge_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("ge", other)

    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

    def logical_and_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("logical_and", other)

    def logical_or_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("logical_or", other)

    def logical_xor_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("logical_xor", other)

    def logical_not_(self) -> Tensor:
        return self._math_inplace("logical_not")

    def bitwise_and_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("bitwise_and", other)

    def bitwise_or_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("bitwise_or", other)

    def bitwise_xor_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("bitwise_xor", other)

    def bitwise_not_(self) -> Tensor:
        return self._math_inplace("bitwise_not")

    def bitwise_left_shift_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("bitwise_left_shift", other)

    def bitwise_right_shift_(self, other: Tensor | Scalar) -> Tensor:
        return self._math_inplace("bitwise_right_shift", other)

    __iand__ = bitwise_and_
    __ior__ = bitwise_or_
    __ixor__ = bitwise_xor_
    __ilshift__ = bitwise_left_shift_
    __irshift__ = bitwise_right_shift_

    # ------------------------------------------------------------- whole-tensor tests
    def isclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
        """Elementwise ``|self - other| <= atol + rtol * |other|`` (a bool tensor, the two broadcast).

        Equal values (infinities included) are close; a finite value is never close to an infinity;
        NaNs are close to each other only with ``equal_nan``. Both tensors must have the same dtype.
        """
        if not isinstance(other, TensorBase):
            raise TypeError(f"isclose(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        if self.dtype != other.dtype:
            raise RuntimeError(f"isclose: input dtype {self.dtype} did not match other dtype {other.dtype}")
        if rtol < 0:
            raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
        if atol < 0:
            raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
        a: Any = self.detach()
        b: Any = other.detach()
        close = a == b
        if a.dtype.category == 0 or (rtol == 0 and atol == 0):
            return close
        if a.dtype.category < 2:  # integers: the tolerance is a real number, so compare in floating point
            a, b = a.to(get_default_dtype()), b.to(get_default_dtype())
        elif equal_nan:
            close = close | (a.isnan() & b.isnan())
        error = (a - b).abs()
        return close | (error.isfinite() & (error <= atol + rtol * b.abs()))

    def allclose(self, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """Whether every element of isclose(self, other, ...) is True (shapes broadcast)."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def equal(self, other: Tensor) -> bool:
        """Whether both have the same shape and the same values (a Python bool; NaN is never equal)."""
        if not isinstance(other, TensorBase):
            raise TypeError(f"equal(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        if tuple(self.shape) != tuple(other.shape):
            return False
        return bool((self.detach() == other.detach()).all().item())
