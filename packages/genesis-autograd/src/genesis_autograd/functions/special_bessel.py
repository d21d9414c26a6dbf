"""torch.special's Bessel and Airy functions (genesis_kernels/special_bessel.py): J0, J1, Y0, Y1, K0, K1, the
scaled K0 / K1 and Ai. torch gives them no derivative: their results never require grad, here likewise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..tensor import Tensor


def _unrecorded(op: str, x: Any) -> Tensor:
    """The elementwise kernel ``op`` of x, outside the graph (integer inputs give the default float dtype)."""
    return x._result_type(x.data.unary(op))


def bessel_j0(x: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0."""
    return _unrecorded("bessel_j0", x)


def bessel_j1(x: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1."""
    return _unrecorded("bessel_j1", x)


def bessel_y0(x: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 0 (-inf at 0, NaN below)."""
    return _unrecorded("bessel_y0", x)


def bessel_y1(x: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 1 (-inf at 0, NaN below)."""
    return _unrecorded("bessel_y1", x)


def modified_bessel_k0(x: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 0 (inf at 0, NaN below)."""
    return _unrecorded("modified_bessel_k0", x)


def modified_bessel_k1(x: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 1 (inf at 0, NaN below)."""
    return _unrecorded("modified_bessel_k1", x)


def scaled_modified_bessel_k0(x: Tensor) -> Tensor:
    """exp(x) K0(x)."""
    return _unrecorded("scaled_modified_bessel_k0", x)


def scaled_modified_bessel_k1(x: Tensor) -> Tensor:
    """exp(x) K1(x)."""
    return _unrecorded("scaled_modified_bessel_k1", x)


def airy_ai(x: Tensor) -> Tensor:
    """The Airy function Ai."""
    return _unrecorded("airy_ai", x)
