"""torch's window functions: bartlett_window, blackman_window, hamming_window, hann_window, kaiser_window.

Each is a formula over n = 0 .. L-1 with denominator N - 1, where N = L + 1 for a periodic window (one
period of a longer symmetric one, as spectral analysis wants) and N = L otherwise; one element is 1.
"""

from __future__ import annotations

import math
from typing import Any

from genesis_autograd import Tensor, arange, float64, get_default_dtype, ones, zeros

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _window(name: str, length: int, periodic: bool, dtype: Any, device: Any, requires_grad: bool, body: Any) -> Tensor:
    """The window ``body(n, denominator)`` over n = 0 .. length-1, computed in float64 and cast."""
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={length}")
    dtype = get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if length == 0:
        return zeros(0, dtype=dtype, device=device, requires_grad=requires_grad)
    if length == 1:
        return ones(1, dtype=dtype, device=device, requires_grad=requires_grad)
    n = arange(length, dtype=float64, device=device)
    w = body(n, float(length if periodic else length - 1)).to(dtype)
    return w.requires_grad_(requires_grad) if requires_grad else w


def _cosine_sum(n: Tensor, denominator: float, coefficients: tuple[float, ...]) -> Tensor:
    """sum_k (-1)^k a_k cos(2 pi k n / denominator)."""
    out = n * 0 + coefficients[0]
    for k, a in enumerate(coefficients[1:], start=1):
        out = out + ((-1) ** k * a) * (n * (2 * math.pi * k / denominator)).cos()
    return out


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hann window 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window(
        "hann_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, d: _cosine_sum(n, d, (0.5, 0.5)),
    )  # fmt: skip


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hamming window alpha - beta cos(2 pi n / (N - 1))."""
    return _window(
        "hamming_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, d: _cosine_sum(n, d, (alpha, beta)),
    )  # fmt: skip


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Blackman window 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window(
        "blackman_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, d: _cosine_sum(n, d, (0.42, 0.5, 0.08)),
    )  # fmt: skip


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The triangular Bartlett window 1 - |2 n / (N - 1) - 1|."""
    return _window(
        "bartlett_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, d: 1 - (n * (2 / d) - 1).abs(),
    )  # fmt: skip


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Kaiser window I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)."""

    def body(n: Tensor, d: float) -> Tensor:
        r = n * (2 / d) - 1
        inner = (1 - r * r).clamp(0, None).sqrt() * beta
        return inner.i0() / (inner * 0 + beta).i0()

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, body)
