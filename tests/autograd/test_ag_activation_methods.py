"""Tensor.hardshrink and Tensor.prelu (functions/activation_methods.py) against torch's Tensor methods in
float64: values, the input's and the weight's gradients, NaN handling and torch's errors."""

from __future__ import annotations

import pytest
import torch

import genesis


def g(t, device, requires_grad=False):
    out = genesis.tensor(t.detach().numpy(), device=device)
    return out.requires_grad_(True) if requires_grad else out


def values(t):
    return torch.from_numpy(t.detach().cpu().numpy())


@pytest.mark.parametrize("lambd", [0.5, 0.2, 1.3])
def test_hardshrink_values_and_gradient(device, lambd):
    data = torch.randn(4, 5, dtype=torch.float64)
    data[0, :3] = torch.tensor([float("nan"), lambd, -lambd])  # NaN passes; the band's edges are zeroed
    t = data.clone().requires_grad_(True)
    x = g(data, device, requires_grad=True)
    w = torch.randn(4, 5, dtype=torch.float64)
    t_out, x_out = t.hardshrink(lambd), x.hardshrink(lambd)
    torch.testing.assert_close(values(x_out), t_out, equal_nan=True)
    (t_out.nan_to_num() * w).sum().backward()
    (x_out.nan_to_num() * g(w, device)).sum().backward()
    torch.testing.assert_close(values(x.grad), t.grad)


def test_hardshrink_default_and_integer_error(device):
    data = torch.randn(3, 4, dtype=torch.float64)
    torch.testing.assert_close(values(g(data, device).hardshrink()), data.hardshrink())
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        g(torch.tensor([1, 2]), device).hardshrink()


@pytest.mark.parametrize(
    "shape,nweight", [((2, 3, 4), 3), ((2, 3, 4, 2), 1), ((2, 3), 3), ((5,), 1), ((), 1), ((4, 2, 3), 2)]
)
def test_prelu_values_and_gradients(device, shape, nweight):
    data = torch.randn(shape, dtype=torch.float64)
    weight = torch.rand(nweight, dtype=torch.float64) * 0.5
    t, tw = data.clone().requires_grad_(True), weight.clone().requires_grad_(True)
    x, xw = g(data, device, requires_grad=True), g(weight, device, requires_grad=True)
    t_out, x_out = t.prelu(tw), x.prelu(xw)
    torch.testing.assert_close(values(x_out), t_out)
    w = torch.randn(shape, dtype=torch.float64)
    (t_out * w).sum().backward()
    (x_out * g(w, device)).sum().backward()
    torch.testing.assert_close(values(x.grad), t.grad)
    torch.testing.assert_close(values(xw.grad), tw.grad)


def test_prelu_scalar_weight(device):
    data, weight = torch.randn(2, 3, dtype=torch.float64), torch.tensor(0.25, dtype=torch.float64)
    torch.testing.assert_close(values(g(data, device).prelu(g(weight, device))), data.prelu(weight))


def test_prelu_errors_as_torch(device):
    x = g(torch.randn(2, 4, 3, dtype=torch.float64), device)
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 4"):
        x.prelu(g(torch.rand(3, dtype=torch.float64), device))
    with pytest.raises(RuntimeError, match="Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"):
        x.prelu(g(torch.rand(2, 2, dtype=torch.float64), device))
    with pytest.raises(RuntimeError, match=r"Type promoting not supported\. Got Double and Float"):
        x.prelu(g(torch.rand(4), device))
