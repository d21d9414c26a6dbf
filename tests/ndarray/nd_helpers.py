"""Shared helpers of the genesis_ndarray parity tests: torch <-> NDArray and per-dtype tolerances."""

from __future__ import annotations

import pytest
import torch

import genesis_ndarray as nd

# Per-dtype tolerances: torch.testing's defaults for float32/float64/int, widened
# for the 16-bit floats to about two units in the last place (an elementwise op
# computed in float32 and rounded once may differ from torch by one ulp).
TOL = {
    torch.float64: dict(rtol=1e-7, atol=1e-7),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float16: dict(rtol=2e-3, atol=1e-4),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-3),
}


def to_torch(a: nd.NDArray) -> torch.Tensor:
    """A torch CPU copy of an NDArray on any device (bfloat16 included)."""
    return a.to("cpu").native.clone()


def from_torch(t: torch.Tensor, device) -> nd.NDArray:
    """An NDArray on ``device`` holding a copy of ``t`` (never sharing t's memory)."""
    return nd.from_torch(t.detach().clone(), device)


def random_tensor(shape, dtype=torch.float32, low=None, high=None, nonzero=False) -> torch.Tensor:
    """Fresh random values (never all zeros): normal floats, or integers in [low, high)."""
    if dtype == torch.bool:
        t = torch.rand(shape) > 0.5
        return t
    if dtype.is_floating_point:
        t = torch.randn(shape, dtype=torch.float64)
        if low is not None:  # a positive range: uniform in [low, high)
            t = torch.rand(shape, dtype=torch.float64) * (high - low) + low
        if nonzero:
            t = torch.where(t.abs() < 0.1, t.sign() * 0.1 + (t == 0) * 0.1, t)
        return t.to(dtype)
    lo = -9 if low is None else low
    hi = 10 if high is None else high
    if dtype == torch.uint8:
        lo = max(lo, 0)
    t = torch.randint(lo, hi, shape, dtype=torch.int64)
    if nonzero:
        t = torch.where(t == 0, torch.ones_like(t), t)
    return t.to(dtype)


def assert_same(actual: nd.NDArray, expected: torch.Tensor, exact_dtype: bool = True, **tol) -> None:
    """Values, shape and dtype of ``actual`` equal torch's result ``expected``."""
    got = to_torch(actual)
    assert tuple(actual.shape) == tuple(expected.shape), (actual.shape, tuple(expected.shape))
    if exact_dtype:
        assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
    if not tol and expected.dtype in TOL:
        tol = TOL[expected.dtype]
    if not expected.dtype.is_floating_point and not tol:
        tol = dict(rtol=0, atol=0)
    torch.testing.assert_close(got, expected, equal_nan=True, check_dtype=exact_dtype, **tol)


def transposed(t: torch.Tensor, device) -> nd.NDArray:
    """A non-contiguous NDArray equal to t (2-d): t.T stored contiguously, viewed back through .T."""
    a = from_torch(t.T.contiguous(), device).T
    assert not a.is_contiguous()
    return a


def raises_like(torch_fn, fn, match=None) -> None:
    """fn raises the exception class that torch_fn raises."""
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(type(expected.value), match=match):
        fn()
