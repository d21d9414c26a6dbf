"""nn.init against torch.nn.init: the same gains, fans, bounds and distributions (compared by statistics on
large draws), in place and outside the graph; the generator argument; the errors."""

from __future__ import annotations

import math

import pytest
import torch
from nn_helpers import to_torch

import genesis
import genesis.nn as nn
from genesis.nn import init

GAINS = [
    ("linear", None),
    ("conv2d", None),
    ("sigmoid", None),
    ("tanh", None),
    ("relu", None),
    ("leaky_relu", None),
    ("leaky_relu", 0.2),
    ("leaky_relu", 3),
    ("selu", None),
]


@pytest.mark.parametrize("nonlinearity,param", GAINS)
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(nonlinearity, param)


def test_gain_and_fan_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity softsign"):
        init.calculate_gain("softsign")
    with pytest.raises(ValueError, match="negative_slope yes not a valid number"):
        init.calculate_gain("leaky_relu", "yes")
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
        init.xavier_uniform_(genesis.empty(5))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_normal_(genesis.empty(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(genesis.empty(2, 2, 2))
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(genesis.empty(4))


SHAPE = (96, 40, 3, 3)  # fan_in 360, fan_out 864; 34,560 values: tight enough statistics
FAN_IN, FAN_OUT = 360, 864


def _stats(fill, lib):
    t = lib.empty(*SHAPE)
    fill(lib.nn.init, t)
    values = to_torch(t) if lib is genesis else t
    return values.mean().item(), values.std().item(), values.min().item(), values.max().item()


# (id, fill(init, tensor), the support by torch's rules: a uniform draw's bound (filled to both ends), a
# truncated normal's (low, high), or None for unbounded draws)
FILLS = [
    ("uniform", lambda I, t: I.uniform_(t, -0.5, 0.5), 0.5),
    ("normal", lambda I, t: I.normal_(t, 0.5, 2.0), None),
    ("trunc-normal", lambda I, t: I.trunc_normal_(t, 0.2, 1.5, a=-1.0, b=2.5), (-1.0, 2.5)),
    ("trunc-normal-one-sided", lambda I, t: I.trunc_normal_(t, std=0.02, a=0.0, b=1.0), (0.0, 1.0)),
    ("xavier-uniform", lambda I, t: I.xavier_uniform_(t, gain=2.0), 2.0 * math.sqrt(6 / (FAN_IN + FAN_OUT))),
    ("xavier-normal", lambda I, t: I.xavier_normal_(t), None),
    ("kaiming-uniform", lambda I, t: I.kaiming_uniform_(t, a=math.sqrt(5)), 1 / math.sqrt(FAN_IN)),
    (
        "kaiming-uniform-fan-out-relu",
        lambda I, t: I.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
        math.sqrt(6 / FAN_OUT),
    ),
    ("kaiming-normal", lambda I, t: I.kaiming_normal_(t, a=0.1), None),
    ("kaiming-normal-fan-out", lambda I, t: I.kaiming_normal_(t, mode="fan_out", nonlinearity="tanh"), None),
]


@pytest.mark.parametrize("fill,bounds", [pytest.param(f, b, id=n) for n, f, b in FILLS])
def test_distribution_matches_torch(fill, bounds):
    genesis.manual_seed(1)
    torch.manual_seed(2)  # independent draws: the comparison is of distributions, not of streams
    mean, std, lo, hi = _stats(fill, genesis)
    tmean, tstd, _, _ = _stats(fill, torch)
    # 34,560 draws: the sample mean is within 4 standard errors, the std within 3 %
    assert abs(mean - tmean) < 4 * tstd * (2 / math.prod(SHAPE)) ** 0.5 and abs(std - tstd) < 0.03 * tstd
    if bounds is not None:
        uniform = isinstance(bounds, float)
        low, high = (-bounds, bounds) if uniform else bounds
        assert low <= lo and hi <= high
        if uniform:
            assert lo - low < 0.01 * (high - low) and high - hi < 0.01 * (high - low)


def test_constant_ones_zeros_eye():
    t = genesis.empty(3, 4)
    assert to_torch(init.constant_(t, 0.25)).eq(0.25).all()
    assert to_torch(init.ones_(t)).eq(1).all() and not to_torch(init.zeros_(t)).any()
    assert torch.equal(to_torch(init.eye_(t)), torch.eye(3, 4))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 3)])
def test_orthogonal(shape):
    w = to_torch(init.orthogonal_(genesis.empty(*shape), gain=2.0)).double().reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    torch.testing.assert_close(gram, 4 * torch.eye(min(rows, cols), dtype=torch.float64), rtol=0, atol=1e-5)


def test_init_is_in_place_and_outside_the_graph():
    layer = nn.Linear(4, 3)
    w = layer.weight
    for fill in (init.xavier_normal_, init.kaiming_uniform_, init.trunc_normal_, init.orthogonal_, init.zeros_):
        assert fill(w) is w
        assert w.is_leaf and w.grad_fn is None and w.requires_grad
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(genesis.empty(0, 3))


class StateGenerator:
    """What the generator argument needs: torch.Generator's get_state / set_state."""

    def __init__(self, state):
        self.state = state

    def get_state(self):
        return self.state

    def set_state(self, state):
        self.state = state


def test_generator_argument_draws_from_the_given_state():
    genesis.manual_seed(7)
    start = genesis.get_rng_state()
    gen_a, gen_b = StateGenerator(start), StateGenerator(start)
    genesis.manual_seed(123)
    global_before = genesis.get_rng_state()
    a = to_torch(init.normal_(genesis.empty(50), generator=gen_a))
    b = to_torch(init.normal_(genesis.empty(50), generator=gen_b))
    assert torch.equal(a, b)  # the same generator state, the same draw
    assert torch.equal(to_torch(genesis.get_rng_state()), to_torch(global_before))  # global stream untouched
    c = to_torch(init.normal_(genesis.empty(50), generator=gen_a))
    assert not torch.equal(a, c)  # the generator advanced
    genesis.manual_seed(7)
    assert torch.equal(to_torch(genesis.randn(50)), a)
