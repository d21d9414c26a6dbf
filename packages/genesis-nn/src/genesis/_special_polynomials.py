"""torch.special's orthogonal polynomials: Chebyshev T / U / V / W (and shifted to [0, 1]), Hermite H / He,
Laguerre L, Legendre P, each p_n(x) for a degree ``n`` (a tensor or a number) by its three-term recurrence.

All degrees are evaluated in one sweep up to the largest: step k computes p_k everywhere and keeps it
where n == k. As torch, a negative degree gives 0 and the results carry no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from genesis_autograd import Tensor, int64, no_grad, ones_like, tensor

from ._torch_shape import broadcast_shapes

Number = int | float

# One recurrence (p_0 = 1 for every family): (p_1(x), step(k, x, p_k, p_{k-1}) -> p_{k+1}).
Recurrence = tuple[Callable[[Tensor], Any], Callable[[int, Tensor, Any, Any], Any]]


def _chebyshev(first: Callable[[Tensor], Any]) -> Recurrence:
    return (first, lambda k, x, p, q: 2 * x * p - q)


_RECURRENCES: dict[str, Recurrence] = {
    "chebyshev_t": _chebyshev(lambda x: x),
    "chebyshev_u": _chebyshev(lambda x: 2 * x),
    "chebyshev_v": _chebyshev(lambda x: 2 * x - 1),
    "chebyshev_w": _chebyshev(lambda x: 2 * x + 1),
    "hermite_h": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_he": (lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_l": (lambda x: 1 - x, lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_p": (lambda x: x, lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
}


def _evaluate(kind: str, input: Tensor | Number, n: Tensor | Number, shifted: bool = False) -> Tensor:
    """p_n(x) for every broadcast pair (x, n), in the promoted floating dtype of x and n."""
    x = input if isinstance(input, Tensor) else tensor(input, device=n.device)  # type: ignore[union-attr]
    deg = n if isinstance(n, Tensor) else tensor(n, device=x.device)
    with no_grad():
        x = x.detach()
        if not x.dtype.is_floating_point:
            x = x.float()
        if deg.dtype.is_floating_point:
            x = x + deg * 0  # torch promotes with a floating degree tensor
        deg = deg.detach().to(int64)
        if shifted:
            x = 2 * x - 1
        p1, step = _RECURRENCES[kind]
        shape = broadcast_shapes(tuple(x.shape), tuple(deg.shape))
        x, deg = x.expand(*shape), deg.expand(*shape)
        prev = ones_like(x)  # p_0 = 1 for every family
        out = prev.where(deg == 0, 0.0)
        top = int(deg.max().item()) if deg.numel() else 0
        if top >= 1:
            cur = p1(x)
            out = cur.where(deg == 1, out)
            for k in range(1, top):
                prev, cur = cur, step(k, x, cur, prev)
                out = cur.where(deg == k + 1, out)
        return out.contiguous()


def chebyshev_polynomial_t(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The Chebyshev polynomial of the first kind T_n(input)."""
    return _evaluate("chebyshev_t", input, n)


def chebyshev_polynomial_u(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The Chebyshev polynomial of the second kind U_n(input)."""
    return _evaluate("chebyshev_u", input, n)


def chebyshev_polynomial_v(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The Chebyshev polynomial of the third kind V_n(input)."""
    return _evaluate("chebyshev_v", input, n)


def chebyshev_polynomial_w(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The Chebyshev polynomial of the fourth kind W_n(input)."""
    return _evaluate("chebyshev_w", input, n)


def shifted_chebyshev_polynomial_t(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """T_n(2 input - 1): the first kind on [0, 1]."""
    return _evaluate("chebyshev_t", input, n, shifted=True)


def shifted_chebyshev_polynomial_u(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """U_n(2 input - 1): the second kind on [0, 1]."""
    return _evaluate("chebyshev_u", input, n, shifted=True)


def shifted_chebyshev_polynomial_v(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """V_n(2 input - 1): the third kind on [0, 1]."""
    return _evaluate("chebyshev_v", input, n, shifted=True)


def shifted_chebyshev_polynomial_w(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """W_n(2 input - 1): the fourth kind on [0, 1]."""
    return _evaluate("chebyshev_w", input, n, shifted=True)


def hermite_polynomial_h(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The physicists' Hermite polynomial H_n(input)."""
    return _evaluate("hermite_h", input, n)


def hermite_polynomial_he(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The probabilists' Hermite polynomial He_n(input)."""
    return _evaluate("hermite_he", input, n)


def laguerre_polynomial_l(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The Laguerre polynomial L_n(input)."""
    return _evaluate("laguerre_l", input, n)


def legendre_polynomial_p(input: Tensor | Number, n: Tensor | Number) -> Tensor:
    """The Legendre polynomial P_n(input)."""
    return _evaluate("legendre_p", input, n)
