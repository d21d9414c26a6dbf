"""Issue #30's products and reductions as Tensor methods and top-level functions, against torch on both
devices: values, gradients (torch's autograd on the same float64 inputs) and torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import genesis

rng = np.random.default_rng()


def _leaves(device, *shapes):
    values = [rng.standard_normal(s) for s in shapes]
    ts = [torch.tensor(v, requires_grad=True) for v in values]
    gs = [genesis.tensor(v, device=device, requires_grad=True) for v in values]
    return ts, gs


def _close(got, expected) -> None:
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)


CASES = {
    "mm": ((3, 4), (4, 2)),
    "bmm": ((2, 3, 4), (2, 4, 5)),
    "mv": ((3, 4), (4,)),
    "dot": ((5,), (5,)),
    "vdot": ((5,), (5,)),
    "inner": ((2, 3, 4), (5, 4)),
    "outer": ((3,), (4,)),
    "ger": ((3,), (4,)),
    "cross": ((4, 3), (4, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_products_and_their_gradients(device, name):
    (ta, tb), (ga, gb) = _leaves(device, *CASES[name])
    kwargs = {"dim": 1} if name == "cross" else {}
    expected, got = getattr(ta, name)(tb, **kwargs), getattr(ga, name)(gb, **kwargs)
    _close(got, expected)
    if hasattr(genesis, name):
        _close(getattr(genesis, name)(ga, gb, **kwargs), expected)
    seed = rng.standard_normal(tuple(expected.shape))
    expected.backward(torch.tensor(seed))
    got.backward(genesis.tensor(seed, device=device))
    _close(ga.grad, ta.grad)
    _close(gb.grad, tb.grad)


SCALED = {
    "addmm": ((3, 2), (3, 4), (4, 2)),
    "addbmm": ((3, 5), (2, 3, 4), (2, 4, 5)),
    "baddbmm": ((2, 3, 5), (2, 3, 4), (2, 4, 5)),
    "addmv": ((3,), (3, 4), (4,)),
    "addr": ((3, 4), (3,), (4,)),
}


@pytest.mark.parametrize("name", list(SCALED))
def test_scaled_sums_gradients_and_inplace(device, name):
    (tx, ta, tb), (gx, ga, gb) = _leaves(device, *SCALED[name])
    expected = getattr(torch, name)(tx, ta, tb, beta=0.5, alpha=2.0)
    got = getattr(genesis, name)(gx, ga, gb, beta=0.5, alpha=2.0)
    _close(got, expected)
    _close(getattr(gx, name)(ga, gb, beta=0.5, alpha=2.0), expected)
    expected.sum().backward()
    got.sum().backward()
    for g, t in ((gx, tx), (ga, ta), (gb, tb)):
        _close(g.grad, t.grad)
    t_in, g_in = tx.detach().clone(), gx.detach().clone()
    getattr(t_in, name + "_")(ta.detach(), tb.detach(), alpha=3)
    getattr(g_in, name + "_")(ga.detach(), gb.detach(), alpha=3)
    _close(g_in, t_in)


@pytest.mark.parametrize("dims", [2, 1, 0, ([0, 2], [1, 0])])
def test_tensordot(device, dims):
    (ta, tb), (ga, gb) = _leaves(device, (2, 3, 4), (3, 4, 2) if dims != ([0, 2], [1, 0]) else (4, 2, 3))
    if dims == 1:
        (ta, tb), (ga, gb) = _leaves(device, (2, 3, 4), (4, 5))
    expected, got = torch.tensordot(ta, tb, dims), genesis.tensordot(ga, gb, dims)
    _close(got, expected)
    expected.sum().backward()
    got.sum().backward()
    _close(ga.grad, ta.grad)


def test_errors_match_torch(device):
    a = genesis.ones(3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"inner\(\) the last dimension must match"):
        a.inner(genesis.ones(4, 5, device=device))
    with pytest.raises(RuntimeError, match="size mismatch, got input \\(3\\), mat \\(3x4\\), vec \\(5\\)"):
        genesis.addmv(genesis.ones(3, device=device), a, genesis.ones(5, device=device))
    with pytest.raises(RuntimeError, match="addr: Expected 1-D argument vec1, but got 2-D"):
        genesis.addr(a, genesis.ones(3, 1, device=device), genesis.ones(4, device=device))
    with pytest.raises(RuntimeError, match=r"linalg\.cross: inputs dimension 0 must have length 3\. Got 4 and 4"):
        genesis.cross(genesis.ones(4, 3, device=device), genesis.ones(4, 3, device=device), dim=0)
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0, but got dims=-1"):
        genesis.tensordot(a, a, -1)
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 2D tensors"):
        a.vdot(a)


def test_cross_default_dim_warns_like_torch(device):
    (ta, tb), (ga, gb) = _leaves(device, (3, 2), (3, 2))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        got = genesis.cross(ga, gb)
    # torch warns once per process (TORCH_WARN_ONCE): after the cpu case its cuda case sees no warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.cross(ta, tb)
    _close(got, expected)


def test_reductions(device):
    values = rng.standard_normal((3, 4))
    values[0, 1] = values[2, 2] = 0.0
    t = torch.tensor(values, requires_grad=True)
    g = genesis.tensor(values, device=device, requires_grad=True)
    _close(genesis.count_nonzero(g), torch.count_nonzero(t))
    _close(g.count_nonzero(1), t.count_nonzero(1))
    assert genesis.count_nonzero(g, 0).dtype == genesis.int64
    for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        (gmin, _), (tmin, tmax) = genesis.aminmax(g, **kwargs), torch.aminmax(t, **kwargs)
        _close(gmin, tmin)
        _close(g.aminmax(**kwargs).max, tmax)
    for fn in ("var_mean", "std_mean"):
        for kwargs in ({}, {"dim": 1, "correction": 0}, {"dim": (0, 1), "keepdim": True}):
            (gv, gm), (tv, tm) = getattr(genesis, fn)(g, **kwargs), getattr(torch, fn)(t, **kwargs)
            _close(gv, tv)
            _close(gm, tm)
    for p, kwargs in ((2, {}), ("fro", {"dim": 1}), (float("inf"), {"dim": 0, "keepdim": True}), (1, {"dim": 1})):
        _close(genesis.norm(g, p, **kwargs), torch.norm(t, p, **kwargs))
    genesis.norm(g, 3, 1).sum().backward()
    torch.norm(t, 3, 1).sum().backward()
    _close(g.grad, t.grad)
    with pytest.raises(RuntimeError, match="matrix norm"):
        genesis.norm(g, "nuc")
    with pytest.raises(RuntimeError, match="aminmax\\(\\): cannot compute aminmax over an empty dimension"):
        genesis.aminmax(genesis.ones(0, 3, device=device))
    with pytest.raises(IndexError, match="aminmax: Expected reduction dim 1 to have non-zero size"):
        genesis.aminmax(genesis.ones(2, 0, device=device), dim=1)


def test_diff_and_closeness_methods(device):
    values = rng.standard_normal((3, 5))
    t = torch.tensor(values, requires_grad=True)
    g = genesis.tensor(values, device=device, requires_grad=True)
    expected, got = t.diff(n=2, dim=1), g.diff(n=2, dim=1)
    _close(got, expected)
    expected.sum().backward()
    got.sum().backward()
    _close(g.grad, t.grad)
    mask = genesis.tensor([True, False, False, True], device=device)
    _close(mask.diff(), torch.tensor([True, False, False, True]).diff())
    other = g.detach() + 1e-9
    assert g.allclose(other) and not g.allclose(other + 1)
    _close(g.isclose(other, rtol=0, atol=1e-10), t.isclose(t.detach() + 1e-9, rtol=0, atol=1e-10))
    assert g.equal(g.detach().clone()) and not g.equal(other)
    with pytest.raises(RuntimeError, match="did not match"):
        g.isclose(g.float())
