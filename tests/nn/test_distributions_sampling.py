"""genesis.distributions: sampling (shapes, support, moments with seeded draws, reproducibility),
reparameterised gradients against torch on the same noise, kl_divergence against torch, and validation
errors as torch's."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.distributions as TD
from distributions_helpers import build, close, compare_with_grads, to_genesis, to_torch

import genesis
import genesis.distributions as GD

N = 4000


def _pos(*shape):
    return torch.rand(*shape, dtype=torch.float64) + 0.5


def _probs(*shape):
    return torch.rand(*shape, dtype=torch.float64) * 0.8 + 0.1


SAMPLED = [
    ("Normal", dict(loc=torch.randn(3, dtype=torch.float64), scale=_pos(3))),
    ("Bernoulli", dict(probs=_probs(3))),
    ("Categorical", dict(probs=_pos(2, 4))),
    ("OneHotCategorical", dict(probs=_pos(2, 4))),
    ("Uniform", dict(low=-_pos(3), high=_pos(3))),
    ("Beta", dict(concentration1=_pos(3) * 2, concentration0=_pos(3))),
    ("Gamma", dict(concentration=torch.tensor([0.4, 1.0, 5.0], dtype=torch.float64), rate=_pos(3))),
    ("Exponential", dict(rate=_pos(3))),
    ("Laplace", dict(loc=torch.randn(3, dtype=torch.float64), scale=_pos(3))),
    ("LogNormal", dict(loc=torch.randn(3, dtype=torch.float64) * 0.2, scale=_pos(3) * 0.4)),
    ("Dirichlet", dict(concentration=_pos(2, 3) * 2)),
    ("Poisson", dict(rate=_pos(3) * 4)),
    ("Binomial", dict(total_count=torch.tensor([3.0, 7.0, 10.0], dtype=torch.float64), probs=_probs(3))),
    ("Geometric", dict(probs=_probs(3))),
    ("StudentT", dict(df=_pos(3) + 5, loc=torch.randn(3, dtype=torch.float64), scale=_pos(3))),
    ("MultivariateNormal", dict(loc=torch.randn(3, dtype=torch.float64), scale_tril=torch.eye(3, dtype=torch.float64) + torch.randn(3, 3, dtype=torch.float64).tril(-1) * 0.3)),  # noqa: E501
]  # fmt: skip


@pytest.mark.parametrize("name,params", SAMPLED, ids=[s[0] for s in SAMPLED])
def test_sample_shape_support_and_moments(device, name, params):
    tdist, gdist, _, _ = build(name, params, device, requires_grad=False)
    genesis.manual_seed(11)
    draws = gdist.sample((N,))
    assert tuple(draws.shape) == (N, *tdist.batch_shape, *tdist.event_shape)
    assert not draws.requires_grad
    assert bool(gdist.support.check(draws).all().item())
    genesis.manual_seed(11)
    np.testing.assert_array_equal(gdist.sample((N,)).cpu().numpy(), draws.cpu().numpy())  # the seed decides
    x = to_torch(draws).double()
    mean, var = tdist.mean, tdist.variance
    if name == "Categorical":  # class indices have no moments: compare the class frequencies
        x = torch.nn.functional.one_hot(x.long(), tdist.probs.shape[-1]).double()
        mean, var = tdist.probs, tdist.probs * (1 - tdist.probs)
    # |sample mean - mean| within 5 standard errors (the variance of the sample variance by the 4th moment)
    torch.testing.assert_close(x.mean(0), mean, rtol=0, atol=float(5 * (var / N).sqrt().max()))
    fourth = ((x - mean) ** 4).mean(0)
    torch.testing.assert_close(
        x.var(0), var, rtol=0, atol=float(5 * ((fourth - var**2).clamp(min=0) / N).sqrt().max()) + 1e-12
    )


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Laplace", "Exponential", "Cauchy", "MultivariateNormal"])
def test_rsample_gradients_match_torch_on_the_same_noise(device, name):
    """These rsamples are deterministic functions of standard noise: recover the noise from genesis' draw,
    push it through torch's formula, and compare the parameter gradients."""
    loc, scale = torch.randn(3, dtype=torch.float64), _pos(3)
    tril = torch.eye(3, dtype=torch.float64) + torch.randn(3, 3, dtype=torch.float64).tril(-1) * 0.3
    params = {
        "Normal": dict(loc=loc, scale=scale),
        "Uniform": dict(low=loc, high=loc + scale),
        "Laplace": dict(loc=loc, scale=scale),
        "Exponential": dict(rate=scale),
        "Cauchy": dict(loc=loc, scale=scale),
        "MultivariateNormal": dict(loc=loc, scale_tril=tril),
    }[name]
    _, gdist, tparams, gparams = build(name, params, device, validate_args=False)
    genesis.manual_seed(3)
    gx = gdist.rsample((4,))
    x = to_torch(gx)
    with torch.no_grad():  # the standard noise behind genesis' draw
        if name == "Normal" or name == "Cauchy" or name == "Laplace":
            noise = (x - params["loc"]) / params["scale"]
        elif name == "Uniform":
            noise = (x - params["low"]) / (params["high"] - params["low"])
        elif name == "Exponential":
            noise = x * params["rate"]
        else:
            noise = torch.linalg.solve_triangular(tril, (x - loc).unsqueeze(-1), upper=False).squeeze(-1)
    p = tparams
    tx = {
        "Normal": lambda: p["loc"] + noise * p["scale"],
        "Cauchy": lambda: p["loc"] + noise * p["scale"],
        "Laplace": lambda: p["loc"] + noise * p["scale"],
        "Uniform": lambda: p["low"] + noise * (p["high"] - p["low"]),
        "Exponential": lambda: noise / p["rate"],
        "MultivariateNormal": lambda: p["loc"] + (p["scale_tril"] @ noise.unsqueeze(-1)).squeeze(-1),
    }[name]()
    compare_with_grads(tx, gx, tparams, gparams, device)


def test_gamma_rsample_gradient_is_torchs_implicit_gradient(device):
    conc = torch.tensor([0.3, 0.8, 1.0, 2.5, 7.0, 30.0], dtype=torch.float64)
    rate = _pos(6)
    gconc, grate = to_genesis(conc, device, True), to_genesis(rate, device, True)
    genesis.manual_seed(2)
    x = GD.Gamma(gconc, grate).rsample((50,))
    dconc, drate = genesis.autograd.grad(x.sum(), [gconc, grate])
    tx = to_torch(x)
    standard = tx * rate
    expected = (torch._standard_gamma_grad(conc.expand_as(standard).contiguous(), standard) / rate).sum(0)
    close(dconc, expected, rtol=1e-3, atol=1e-6)  # torch's own derivative is an approximation to ~1e-4
    close(drate, (-tx / rate).sum(0), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["Beta", "Dirichlet", "StudentT"])
def test_implicit_rsample_gradient_of_the_mean(device, name):
    """d E[x] / d params estimated from rsample gradients against the closed form's gradient."""
    a, b = torch.tensor([1.5, 3.0], dtype=torch.float64), torch.tensor([2.0, 0.7], dtype=torch.float64)
    ga, gb = to_genesis(a, device, True), to_genesis(b, device, True)
    genesis.manual_seed(4)
    n = 20000
    if name == "Beta":
        draws, exact = GD.Beta(ga, gb).rsample((n,)), lambda a, b: a / (a + b)
    elif name == "Dirichlet":
        draws = GD.Dirichlet(genesis.stack([ga, gb], -1)).rsample((n,))[..., 0]
        exact = lambda a, b: a / (a + b)
    else:  # the mean is loc; the scale's derivative is E[t] = 0 for df > 1
        draws, exact = GD.StudentT(ga + 3, gb, 1.0).rsample((n,)), lambda a, b: b + 0 * a
    da, db = genesis.autograd.grad(draws.mean(0).sum(), [ga, gb])
    ta, tb = a.clone().requires_grad_(), b.clone().requires_grad_()
    ea, eb = torch.autograd.grad(exact(ta, tb).sum(), [ta, tb])
    close(da, ea, rtol=0, atol=0.03)  # Monte-Carlo error of a 20,000-sample mean of bounded derivatives
    close(db, eb, rtol=0, atol=0.03)


KL_PAIRS = [
    ("Normal", dict(loc=torch.randn(4), scale=_pos(4)), "Normal", dict(loc=torch.randn(4), scale=_pos(4))),
    ("Bernoulli", dict(probs=_probs(4)), "Bernoulli", dict(probs=_probs(4))),
    ("Categorical", dict(probs=_pos(2, 4)), "Categorical", dict(logits=torch.randn(2, 4))),
    ("OneHotCategorical", dict(probs=_pos(2, 4)), "OneHotCategorical", dict(probs=_pos(2, 4))),
    ("Uniform", dict(low=-_pos(4), high=_pos(4)), "Uniform", dict(low=-_pos(4) - 1, high=_pos(4) + 1)),
    ("Beta", dict(concentration1=_pos(4), concentration0=_pos(4)),
     "Beta", dict(concentration1=_pos(4), concentration0=_pos(4))),
    ("Gamma", dict(concentration=_pos(4), rate=_pos(4)), "Gamma", dict(concentration=_pos(4), rate=_pos(4))),
    ("Exponential", dict(rate=_pos(4)), "Exponential", dict(rate=_pos(4))),
    ("Exponential", dict(rate=_pos(4)), "Gamma", dict(concentration=_pos(4), rate=_pos(4))),
    ("Gamma", dict(concentration=_pos(4), rate=_pos(4)), "Exponential", dict(rate=_pos(4))),
    ("Laplace", dict(loc=torch.randn(4), scale=_pos(4)), "Laplace", dict(loc=torch.randn(4), scale=_pos(4))),
    ("Cauchy", dict(loc=torch.randn(4), scale=_pos(4)), "Cauchy", dict(loc=torch.randn(4), scale=_pos(4))),
    ("Dirichlet", dict(concentration=_pos(2, 3)), "Dirichlet", dict(concentration=_pos(2, 3))),
    ("Poisson", dict(rate=_pos(4)), "Poisson", dict(rate=_pos(4))),
    ("Geometric", dict(probs=_probs(4)), "Geometric", dict(probs=_probs(4))),
    ("Binomial", dict(total_count=5, probs=_probs(4)), "Binomial", dict(total_count=5, probs=_probs(4))),
    ("LogNormal", dict(loc=torch.randn(4), scale=_pos(4)), "LogNormal", dict(loc=torch.randn(4), scale=_pos(4))),
    ("MultivariateNormal", dict(loc=torch.randn(2, 3), scale_tril=torch.eye(3) + torch.randn(2, 3, 3).tril(-1) * 0.3),
     "MultivariateNormal", dict(loc=torch.randn(3), covariance_matrix=torch.eye(3) * 2 + 0.3)),
]  # fmt: skip


@pytest.mark.parametrize("pair", KL_PAIRS, ids=[f"{p[0]}-{p[2]}" for p in KL_PAIRS])
def test_kl_divergence_matches_torch(device, pair):
    pname, pparams, qname, qparams = pair
    as64 = lambda d: {k: v.double() if isinstance(v, torch.Tensor) else v for k, v in d.items()}
    tp, gp, tpp, gpp = build(pname, as64(pparams), device)
    tq, gq, tqp, gqp = build(qname, as64(qparams), device)
    tparams = {f"p_{k}": v for k, v in tpp.items()} | {f"q_{k}": v for k, v in tqp.items()}
    gparams = {f"p_{k}": v for k, v in gpp.items()} | {f"q_{k}": v for k, v in gqp.items()}
    compare_with_grads(TD.kl_divergence(tp, tq), GD.kl_divergence(gp, gq), tparams, gparams, device)


def test_kl_independent_and_infinities_and_unregistered(device):
    loc, scale = torch.randn(3, 4, dtype=torch.float64), _pos(3, 4)
    tp, gp = (
        TD.Independent(TD.Normal(loc, scale), 1),
        GD.Independent(GD.Normal(to_genesis(loc, device), to_genesis(scale, device)), 1),
    )
    tq, gq = (
        TD.Independent(TD.Normal(loc * 0, scale), 1),
        GD.Independent(GD.Normal(to_genesis(loc * 0, device), to_genesis(scale, device)), 1),
    )
    close(GD.kl_divergence(gp, gq), TD.kl_divergence(tp, tq))
    low, high = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.tensor([1.0, 2.0], dtype=torch.float64)
    gu = GD.Uniform(to_genesis(low, device), to_genesis(high, device))
    gv = GD.Uniform(to_genesis(low, device), to_genesis(high * 0 + 1.5, device))
    close(GD.kl_divergence(gu, gv), TD.kl_divergence(TD.Uniform(low, high), TD.Uniform(low, high * 0 + 1.5)))
    with pytest.raises(
        NotImplementedError, match=r"No KL\(p \|\| q\) is implemented for p type Normal and q type Bernoulli"
    ):
        GD.kl_divergence(GD.Normal(0.0, 1.0), GD.Bernoulli(0.5))

    class MyNormal(GD.Normal):
        pass

    @GD.register_kl(MyNormal, GD.Normal)
    def _kl(p, q):
        return genesis.zeros(())

    assert float(GD.kl_divergence(MyNormal(0.0, 1.0), GD.Normal(1.0, 1.0)).item()) == 0.0
    assert float(GD.kl_divergence(GD.Normal(0.0, 1.0), GD.Normal(1.0, 1.0)).item()) == pytest.approx(0.5)


def test_validation_errors_as_torch():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(\)\) of distribution Normal"):
        GD.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match=r"to satisfy the constraint GreaterThan\(lower_bound=0.0\)"):
        GD.Gamma(genesis.tensor([1.0, -2.0]), 1.0)
    with pytest.raises(ValueError, match=r"Expected value argument .* to be within the support \(Boolean\(\)\)"):
        GD.Bernoulli(0.3).log_prob(genesis.tensor(0.5))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        GD.MultivariateNormal(genesis.zeros(3), scale_tril=genesis.eye(3)).log_prob(genesis.zeros(4))
    with pytest.raises(ValueError, match=r"Value is not broadcastable with batch_shape\+event_shape"):
        GD.Normal(genesis.zeros(3), 1.0).log_prob(genesis.zeros(4))
    with pytest.raises(ValueError, match=re.escape("Either `probs` or `logits` must be specified, but not both.")):
        GD.Categorical(probs=genesis.ones(3), logits=genesis.zeros(3))
    with pytest.raises(ValueError, match=re.escape("`probs` parameter must be at least one-dimensional.")):
        GD.Categorical(probs=genesis.tensor(1.0))
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        GD.Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        GD.MultivariateNormal(genesis.zeros(2))
    with pytest.raises(ValueError, match="to satisfy the constraint PositiveDefinite"):
        GD.MultivariateNormal(genesis.zeros(2), covariance_matrix=genesis.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match=r"Expected reinterpreted_batch_ndims <= len\(base_distribution.batch_shape\)"):
        GD.Independent(GD.Normal(genesis.zeros(3), 1.0), 2)
    assert math.isnan(float(GD.Normal(0.0, -1.0, validate_args=False).log_prob(genesis.tensor(0.0)).item()))
    GD.Distribution.set_default_validate_args(False)
    try:
        GD.Normal(0.0, -1.0)  # no check
    finally:
        GD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        GD.Distribution.set_default_validate_args(2)
