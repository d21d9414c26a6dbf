"""The random API at the Tensor level (functions/random.py, factories.py): in-place fills in the graph
(zero gradient where they wrote, refused on leaves that require grad), RNG state and seeds, randperm,
and the zero gradient of bernoulli / normal, against torch on every device."""

from __future__ import annotations

import math

import pytest
import torch
from ag_helpers import assert_close, to_genesis, values

import genesis


def test_random_inplace_on_a_leaf_that_requires_grad(device):
    x = genesis.zeros(3, 4, device=device, requires_grad=True)
    for op in (
        lambda t: t.uniform_(),
        lambda t: t.normal_(),
        lambda t: t.bernoulli_(0.5),
        lambda t: t.exponential_(),
        lambda t: t.random_(3),
    ):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            op(x)
        before = x._version_counter
        with genesis.no_grad():
            op(x)  # how nn.init fills parameters
        assert x._version_counter == before + 1
        assert x.is_leaf and x.requires_grad and x.grad_fn is None


def test_random_inplace_on_a_non_leaf_gives_zero_gradient_where_it_wrote(device):
    xt = values((3, 4)).requires_grad_()
    yt = xt * 2
    yt[1:].uniform_()
    gt = values((3, 4))
    (yt * gt).sum().backward()
    x = to_genesis(xt, device, requires_grad=True)
    y = x * 2
    version = y._version_counter
    y[1:].uniform_(0.25, 0.5)
    assert y._version_counter == version + 1
    got = torch.from_numpy(y.detach().cpu().numpy())
    assert ((got[1:] >= 0.25) & (got[1:] < 0.5)).all()
    (y * to_genesis(gt, device)).sum().backward()
    assert_close(x.grad, xt.grad)  # 2 * g in row 0, zero in the rows the draw replaced


def test_set_rng_state_replays_tensor_draws(device):
    genesis.manual_seed(2024)
    assert genesis.initial_seed() == 2024
    state = genesis.get_rng_state(device)
    assert isinstance(state, genesis.Tensor) and state.dtype == genesis.uint8
    draws = [
        genesis.rand(5, device=device),
        genesis.empty(4, device=device).normal_(),
        genesis.randperm(9, device=device),
        genesis.bernoulli(genesis.full((6,), 0.5, device=device)),
        genesis.empty(3, 3, device=device).random_(-4, 4),
    ]
    genesis.set_rng_state(state, device)
    again = [
        genesis.rand(5, device=device),
        genesis.empty(4, device=device).normal_(),
        genesis.randperm(9, device=device),
        genesis.bernoulli(genesis.full((6,), 0.5, device=device)),
        genesis.empty(3, 3, device=device).random_(-4, 4),
    ]
    for a, b in zip(draws, again):
        assert a.tolist() == b.tolist()
    genesis.manual_seed(2024)
    assert genesis.rand(5, device=device).tolist() == draws[0].tolist()
    if device == "cuda":  # torch.cuda's names: the same generator
        assert genesis.cuda.get_rng_state().tolist() == genesis.get_rng_state("cuda").tolist()
        genesis.cuda.set_rng_state(state)
        assert genesis.rand(5, device=device).tolist() == draws[0].tolist()


def test_seed_returns_a_fresh_seed_that_replays(device):
    s = genesis.seed()
    assert genesis.initial_seed() == s
    first = genesis.randn(8, device=device).tolist()
    genesis.manual_seed(s)
    assert genesis.randn(8, device=device).tolist() == first
    assert genesis.seed() != s  # 64 random bits: equal with probability 2**-64


def test_randperm_factory(device):
    genesis.seed()
    p = genesis.randperm(257, device=device)
    assert p.dtype == genesis.int64 and p.device.type == device and not p.requires_grad
    assert sorted(p.tolist()) == list(range(257))
    assert genesis.randperm(5, dtype=genesis.float32, device=device).dtype == genesis.float32


def test_bernoulli_and_normal_pass_zero_gradient_like_torch(device):
    genesis.seed()
    pt = torch.rand(5, dtype=torch.float64).requires_grad_()
    torch.bernoulli(pt).sum().backward()
    p = to_genesis(pt, device, requires_grad=True)
    b = genesis.bernoulli(p)
    assert b.requires_grad and set(b.tolist()) <= {0.0, 1.0}
    b.sum().backward()
    assert_close(p.grad, pt.grad)  # zeros
    mt, st = values((3, 1)).requires_grad_(), values((4,), "pos").requires_grad_()
    torch.normal(mt, st).sum().backward()
    m, s = to_genesis(mt, device, requires_grad=True), to_genesis(st, device, requires_grad=True)
    n = genesis.normal(m, s)
    assert tuple(n.shape) == (3, 4) and n.dtype == genesis.float64
    n.sum().backward()
    assert_close(m.grad, mt.grad)
    assert_close(s.grad, st.grad)


def test_normal_with_tensor_mean_and_std_statistics(device):
    seed = genesis.seed()
    n = 100_000
    mean = genesis.tensor([-3.0, 0.0, 5.0], dtype=genesis.float64, device=device).reshape(3, 1).expand(3, n)
    std = genesis.tensor([0.5, 1.0, 2.0], dtype=genesis.float64, device=device).reshape(3, 1)
    got = torch.from_numpy(genesis.normal(mean, std).cpu().numpy())
    for row, (mu, sigma) in enumerate([(-3.0, 0.5), (0.0, 1.0), (5.0, 2.0)]):
        assert abs(got[row].mean().item() - mu) < 6 * sigma / math.sqrt(n), seed
        assert abs(got[row].std().item() - sigma) < 6 * sigma / math.sqrt(2 * n), seed
    with pytest.raises(RuntimeError):
        torch.normal(torch.zeros(3), -torch.ones(3))
    with pytest.raises(RuntimeError, match=r"std >= 0\.0"):
        genesis.normal(genesis.zeros(3, device=device), -genesis.ones(3, device=device))
    with pytest.raises(RuntimeError, match=r"std >= 0\.0"):
        genesis.normal(0.0, -1.0, (3,), device=device)


def test_tensor_bad_random_arguments(device):
    x = genesis.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"\[from, to\)"):
        x.uniform_(1.0, 0.0)
    with pytest.raises(RuntimeError, match="bernoulli_ expects p"):
        x.bernoulli_(2.0)
