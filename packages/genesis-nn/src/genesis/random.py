"""The random factories at genesis's top level, with torch's ``generator=`` keyword.

genesis_autograd's factories draw from the global generator of their device; a
``genesis.Generator`` (a cpu stream of its own, see genesis.utils.data.generator) is
swapped in around the draw, so ``genesis.rand(3, generator=g)`` gives what
``torch.rand(3, generator=g)`` gives for the same seed.
"""

from __future__ import annotations

from typing import Any

import genesis_autograd as _ag
from genesis_autograd import Tensor, as_device

from .utils.data.generator import Generator, drawing_from

__all__ = ["normal", "rand", "randint", "randn", "randperm"]


def _check(generator: Generator | None, device: Any) -> None:
    if generator is not None and device is not None and as_device(device).type != "cpu":
        raise RuntimeError(f"Expected a '{as_device(device).type}' device type for generator but found 'cpu'")


def rand(
    *size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Uniform samples on [0, 1) of shape ``size``."""
    _check(generator, device)
    with drawing_from(generator):
        return _ag.rand(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def randn(
    *size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Standard normal samples of shape ``size``."""
    _check(generator, device)
    with drawing_from(generator):
        return _ag.randn(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def randint(
    low: int = 0,
    high: Any = None,
    size: Any = (),
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
) -> Tensor:
    """Integers uniform on [low, high) (``randint(high, size)`` draws from [0, high)); int64 by default."""
    _check(generator, device)
    with drawing_from(generator):
        return _ag.randint(low, high, size, dtype=dtype, device=device)


def randperm(
    n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A random permutation of 0 .. n-1."""
    _check(generator, device)
    with drawing_from(generator):
        return _ag.randperm(n, dtype=dtype, device=device, requires_grad=requires_grad)


def normal(
    mean: Any = 0.0,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Normal samples: numbers with a ``size``, or mean / std Tensors broadcast together."""
    _check(generator, device)
    with drawing_from(generator):
        return _ag.normal(mean, std, size, dtype=dtype, device=device, requires_grad=requires_grad)
