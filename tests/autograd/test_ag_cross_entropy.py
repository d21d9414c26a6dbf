"""genesis_autograd.cross_entropy (functions/cross_entropy.py): classes in the last dim, against torch's
cross_entropy with the class dim moved to 1; values and gradients in float64, gradcheck and
gradgradcheck (the double backward goes through the Tensor-op form of the backward), dtypes."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    assert_close,
    check_forward_and_gradients,
    check_gradcheck,
    check_gradgradcheck,
    params,
    to_genesis,
    values,
)

import genesis
import genesis_autograd as ga

N = 7


def _target(rows, ignore=None):
    t = torch.randint(0, N, rows)
    if ignore is not None:
        t.view(-1)[::3] = ignore
    return t


def _weight():
    return torch.rand(N, dtype=torch.float64) + 0.5


def _case(name, rows, reduction, ignore=None, eps=0.0, weighted=False):
    target, weight = _target(rows, ignore), (_weight() if weighted else None)
    ii = -100 if ignore is None else ignore

    def fn(lib, x):
        if lib is torch:
            return torch.nn.functional.cross_entropy(
                x.movedim(-1, 1) if x.ndim > 1 else x,
                target,
                weight,
                ignore_index=ii,
                reduction=reduction,
                label_smoothing=eps,
            )
        g = genesis.tensor(target.numpy(), device=x.device)
        w = None if weight is None else genesis.tensor(weight.numpy(), device=x.device)
        return ga.cross_entropy(x, g, w, ignore_index=ii, label_smoothing=eps, reduction=reduction)

    return (name, fn, [((*rows, N), True, "any", "c")])


CASES = [
    _case("mean", (5,), "mean"),
    _case("sum-ignore", (6,), "sum", ignore=2),
    _case("none-smoothing", (4,), "none", eps=0.2),
    _case("mean-weight-ignore-smoothing", (7,), "mean", ignore=1, eps=0.3, weighted=True),
    _case("none-rows2d-weight", (2, 3), "none", weighted=True),
    _case("unbatched", (), "mean", eps=0.1),
]
PARAMS = params(CASES)


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


def _as_float(t):
    return t.detach().to(genesis.float32)


def test_bfloat16_logits_keep_their_dtype_and_autocast_returns_float32(device):
    x = values((9, N)).to(torch.bfloat16)
    target = _target((9,), ignore=3)
    tx = x.clone().requires_grad_()
    expected = torch.nn.functional.cross_entropy(tx, target, ignore_index=3, label_smoothing=0.1)
    expected.backward()
    # The fused kernel computes in float32 and rounds once: held to the float64 result on the same
    # bf16 values, rounded to bf16 (torch's own bf16 cpu path rounds its log-probabilities too).
    x64 = x.double().requires_grad_()
    exact = torch.nn.functional.cross_entropy(x64, target, ignore_index=3, label_smoothing=0.1)
    exact.backward()
    bf16 = dict(rtol=1e-2, atol=1e-5)
    gx = to_genesis(x.float(), device).to(genesis.bfloat16).requires_grad_()
    gt = genesis.tensor(target.numpy(), device=device)
    got = ga.cross_entropy(gx, gt, ignore_index=3, label_smoothing=0.1)
    got.backward()
    assert got.dtype == genesis.bfloat16 and gx.grad.dtype == genesis.bfloat16
    assert expected.dtype == torch.bfloat16 and tx.grad.dtype == torch.bfloat16  # torch keeps bf16 too
    assert_close(_as_float(got), exact.detach().to(torch.bfloat16).float(), **bf16)
    assert_close(_as_float(gx.grad), x64.grad.to(torch.bfloat16).float(), **bf16)
    # Under autocast nn.functional.cross_entropy computes in float32 and returns float32 (torch's policy);
    # the bf16 logits' gradient stays bf16. torch under autocast on cpu does the same.
    gx.grad = None
    with genesis.autocast(device, dtype=genesis.bfloat16):
        got = genesis.nn.functional.cross_entropy(gx, gt, ignore_index=3, label_smoothing=0.1)
    got.backward()
    tx.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = torch.nn.functional.cross_entropy(tx, target, ignore_index=3, label_smoothing=0.1)
    expected.backward()
    assert got.dtype == genesis.float32 and expected.dtype == torch.float32
    assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert gx.grad.dtype == genesis.bfloat16 and tx.grad.dtype == torch.bfloat16
    assert_close(_as_float(gx.grad), x64.grad.to(torch.bfloat16).float(), **bf16)


def test_bad_reduction_is_value_error():
    x = genesis.randn(3, N)
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        ga.cross_entropy(x, genesis.tensor([0, 1, 2]), reduction="avg")
