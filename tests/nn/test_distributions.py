"""genesis.distributions against torch.distributions: log_prob, cdf, icdf, entropy and moments with their
parameter gradients, float64 and float32, on both devices; expand, enumerate_support, repr."""

from __future__ import annotations

import pytest
import torch
import torch.distributions as TD
from distributions_helpers import build, close, compare_with_grads, method_outputs, to_genesis

import genesis
import genesis.distributions as GD


def _pos(*shape):
    return torch.rand(*shape, dtype=torch.float64) + 0.5


def _probs(*shape):
    return torch.rand(*shape, dtype=torch.float64) * 0.8 + 0.1


def _tril(n, *batch):
    a = torch.randn(*batch, n, n, dtype=torch.float64)
    return torch.tril(a, -1) * 0.5 + torch.diag_embed(torch.rand(*batch, n, dtype=torch.float64) + 0.5)


def _cases():
    """(id, distribution name, parameters, value drawn by torch's distribution)."""
    simplex = torch.softmax(torch.randn(3, 4, dtype=torch.float64), -1)
    tril = _tril(3, 2)
    cov = tril @ tril.mT
    return [
        ("normal", "Normal", dict(loc=torch.randn(3, 4, dtype=torch.float64), scale=_pos(3, 4))),
        ("bernoulli_probs", "Bernoulli", dict(probs=_probs(3, 4))),
        ("bernoulli_logits", "Bernoulli", dict(logits=torch.randn(3, 4, dtype=torch.float64))),
        ("categorical_probs", "Categorical", dict(probs=_pos(3, 5))),
        ("categorical_logits", "Categorical", dict(logits=torch.randn(3, 5, dtype=torch.float64))),
        ("onehot", "OneHotCategorical", dict(probs=_pos(3, 5))),
        ("uniform", "Uniform", dict(low=-_pos(3, 4), high=_pos(3, 4))),
        ("beta", "Beta", dict(concentration1=_pos(3, 4) * 2, concentration0=_pos(3, 4) * 2)),
        ("gamma", "Gamma", dict(concentration=_pos(3, 4) * 3, rate=_pos(3, 4))),
        ("exponential", "Exponential", dict(rate=_pos(3, 4))),
        ("laplace", "Laplace", dict(loc=torch.randn(3, 4, dtype=torch.float64), scale=_pos(3, 4))),
        ("lognormal", "LogNormal", dict(loc=torch.randn(3, 4, dtype=torch.float64) * 0.3, scale=_pos(3, 4) * 0.5)),
        ("dirichlet", "Dirichlet", dict(concentration=_pos(3, 4) * 2)),
        ("poisson", "Poisson", dict(rate=_pos(3, 4) * 3)),
        ("binomial", "Binomial", dict(total_count=torch.full((3, 4), 6.0, dtype=torch.float64), probs=_probs(3, 4))),
        ("binomial_logits", "Binomial", dict(total_count=5, logits=torch.randn(3, 4, dtype=torch.float64))),
        ("geometric", "Geometric", dict(probs=_probs(3, 4))),
        ("studentt", "StudentT", dict(df=_pos(3, 4) * 4, loc=torch.randn(3, 4, dtype=torch.float64), scale=_pos(3, 4))),
        ("cauchy", "Cauchy", dict(loc=torch.randn(3, 4, dtype=torch.float64), scale=_pos(3, 4))),
        ("mvn_tril", "MultivariateNormal", dict(loc=torch.randn(2, 3, dtype=torch.float64), scale_tril=tril)),
        ("mvn_cov", "MultivariateNormal", dict(loc=torch.randn(3, dtype=torch.float64), covariance_matrix=cov)),
        ("mvn_prec", "MultivariateNormal", dict(loc=torch.randn(2, 3, dtype=torch.float64), precision_matrix=cov)),
        ("simplex_value", "Dirichlet", dict(concentration=simplex * 5)),
    ]


CASES = _cases()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_distribution_matches_torch(device, case, dtype):
    torch.manual_seed(hash(case[0]) % 1000)
    _, name, params = case
    params = {k: v.to(dtype) if isinstance(v, torch.Tensor) else v for k, v in params.items()}
    tdist, gdist, tparams, gparams = build(name, params, device)
    value = tdist.sample((2,))
    gvalue = to_genesis(value, device)
    assert tuple(gdist.batch_shape) == tuple(tdist.batch_shape)
    assert tuple(gdist.event_shape) == tuple(tdist.event_shape)
    assert gdist.has_rsample == tdist.has_rsample
    compared = 0
    for what, thunk in method_outputs(tdist, value).items():
        try:
            expected = thunk()
        except NotImplementedError:
            continue
        got = method_outputs(gdist, gvalue)[what]()
        if name == "Gamma" and what == "cdf":  # torch has no derivative of igamma in its first argument
            _check_gamma_cdf_concentration_grad(gdist, gparams, gvalue, dtype)
            tparams = {k: v for k, v in tparams.items() if k != "concentration"}
        compare_with_grads(expected, got, tparams, gparams, device)
        compared += 1
    assert compared >= 3


def _check_gamma_cdf_concentration_grad(gdist, gparams, gvalue, dtype):
    """d cdf / d concentration against central differences of torch's gammainc (float64)."""
    conc = gparams["concentration"]
    (grad,) = genesis.autograd.grad(gdist.cdf(gvalue).sum(), [conc], retain_graph=True)
    c = torch.from_numpy(conc.detach().cpu().numpy()).double()
    x = torch.from_numpy((gparams["rate"] * gvalue).detach().cpu().numpy()).double()
    h = 1e-6
    fd = ((torch.special.gammainc(c + h, x) - torch.special.gammainc(c - h, x)) / (2 * h)).sum(0)
    close(
        grad, fd.to(dtype), rtol=1e-5 if dtype == torch.float64 else 1e-3, atol=1e-7 if dtype == torch.float64 else 1e-5
    )


ICDF_CASES = [
    ("Normal", dict(loc=torch.randn(5, dtype=torch.float64), scale=_pos(5))),
    ("Uniform", dict(low=-_pos(5), high=_pos(5))),
    ("Exponential", dict(rate=_pos(5))),
    ("Laplace", dict(loc=torch.randn(5, dtype=torch.float64), scale=_pos(5))),
    ("Cauchy", dict(loc=torch.randn(5, dtype=torch.float64), scale=_pos(5))),
    ("LogNormal", dict(loc=torch.randn(5, dtype=torch.float64), scale=_pos(5))),
]


@pytest.mark.parametrize("name,params", ICDF_CASES, ids=[c[0] for c in ICDF_CASES])
def test_icdf_matches_torch(device, name, params):
    tdist, gdist, tparams, gparams = build(name, params, device)
    q = torch.rand(5, dtype=torch.float64) * 0.9 + 0.05
    compare_with_grads(tdist.icdf(q), gdist.icdf(to_genesis(q, device)), tparams, gparams, device)
    compare_with_grads(tdist.cdf(tdist.icdf(q)), gdist.cdf(gdist.icdf(to_genesis(q, device))), tparams, gparams, device)


def test_transformed_and_independent_match_torch(device):
    loc, scale = torch.randn(3, 4, dtype=torch.float64), _pos(3, 4)
    a, b = torch.randn(4, dtype=torch.float64), _pos(4)
    gloc, gscale, ga, gb = (to_genesis(t, device, True) for t in (loc, scale, a, b))
    tl, ts, ta, tb = (t.clone().requires_grad_() for t in (loc, scale, a, b))
    tt = TD.TransformedDistribution(
        TD.Normal(tl, ts), [TD.transforms.AffineTransform(ta, tb), TD.transforms.SigmoidTransform()]
    )
    gt = GD.TransformedDistribution(
        GD.Normal(gloc, gscale), [GD.transforms.AffineTransform(ga, gb), GD.transforms.SigmoidTransform()]
    )
    value = tt.sample((2,))
    tparams, gparams = dict(loc=tl, scale=ts, a=ta, b=tb), dict(loc=gloc, scale=gscale, a=ga, b=gb)
    compare_with_grads(tt.log_prob(value), gt.log_prob(to_genesis(value, device)), tparams, gparams, device)
    compare_with_grads(tt.cdf(value), gt.cdf(to_genesis(value, device)), tparams, gparams, device)
    ti, gi = TD.Independent(TD.Normal(tl, ts), 1), GD.Independent(GD.Normal(gloc, gscale), 1)
    assert tuple(gi.batch_shape) == (3,) and tuple(gi.event_shape) == (4,)
    compare_with_grads(ti.log_prob(value), gi.log_prob(to_genesis(value, device)), tparams, gparams, device)
    compare_with_grads(ti.entropy(), gi.entropy(), tparams, gparams, device)
    assert repr(gi.support) == repr(ti.support)


TRANSFORMS = [
    ("ExpTransform", (), torch.randn(3, 4, dtype=torch.float64)),
    ("SigmoidTransform", (), torch.randn(3, 4, dtype=torch.float64)),
    ("TanhTransform", (), torch.randn(3, 4, dtype=torch.float64)),
    ("PowerTransform", (2.5,), _pos(3, 4)),
    ("AffineTransform", (0.3, -2.0), torch.randn(3, 4, dtype=torch.float64)),
    ("StickBreakingTransform", (), torch.randn(3, 4, dtype=torch.float64)),
]


@pytest.mark.parametrize("name,args,x", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transform_matches_torch(device, name, args, x):
    tt, gt = getattr(TD.transforms, name)(*args), getattr(GD.transforms, name)(*args)
    tx, gx = x.clone().requires_grad_(), to_genesis(x, device, True)
    ty, gy = tt(tx), gt(gx)
    compare_with_grads(ty, gy, dict(x=tx), dict(x=gx), device)
    compare_with_grads(tt.log_abs_det_jacobian(tx, ty), gt.log_abs_det_jacobian(gx, gy), dict(x=tx), dict(x=gx), device)
    close(gt.inv(gy), x)
    assert tuple(gt.forward_shape((3, 4))) == tuple(tt.forward_shape((3, 4)))
    assert repr(gt.domain) == repr(tt.domain) and repr(gt.codomain) == repr(tt.codomain)
    if name != "StickBreakingTransform":
        assert gt.sign == tt.sign


def test_compose_abs_softmax_transforms(device):
    x = torch.randn(3, 4, dtype=torch.float64)
    tc = TD.transforms.ComposeTransform([TD.transforms.AffineTransform(1.0, 2.0), TD.transforms.ExpTransform()])
    gc = GD.transforms.ComposeTransform([GD.transforms.AffineTransform(1.0, 2.0), GD.transforms.ExpTransform()])
    gx = to_genesis(x, device)
    close(gc(gx), tc(x))
    close(gc.log_abs_det_jacobian(gx, gc(gx)), tc.log_abs_det_jacobian(x, tc(x)))
    close(gc.inv(gc(gx)), x)
    close(GD.transforms.AbsTransform()(gx), x.abs())
    close(GD.transforms.SoftmaxTransform()(gx), TD.transforms.SoftmaxTransform()(x))
    assert not GD.transforms.AbsTransform().bijective and gc.bijective


def test_expand_and_enumerate_support(device):
    probs = _probs(4)
    tb, gb, _, _ = build("Bernoulli", dict(probs=probs), device, requires_grad=False)
    close(gb.enumerate_support(), tb.enumerate_support())
    close(gb.enumerate_support(expand=False), tb.enumerate_support(expand=False))
    tc, gc, _, _ = build("Categorical", dict(probs=_pos(2, 3)), device, requires_grad=False)
    close(gc.enumerate_support(), tc.enumerate_support())
    tn, gn, _, _ = build("Binomial", dict(total_count=3, probs=probs), device, requires_grad=False)
    close(gn.enumerate_support(), tn.enumerate_support())
    th, gh, _, _ = build("OneHotCategorical", dict(probs=_pos(2, 3)), device, requires_grad=False)
    close(gh.enumerate_support(), th.enumerate_support())
    tn2, gn2, _, _ = build("Normal", dict(loc=torch.randn(4, dtype=torch.float64), scale=_pos(4)), device)
    ge, te = gn2.expand((3, 4)), tn2.expand((3, 4))
    assert tuple(ge.batch_shape) == (3, 4)
    value = torch.randn(3, 4, dtype=torch.float64)
    close(ge.log_prob(to_genesis(value, device)), te.log_prob(value))
    tm, gm, _, _ = build(
        "MultivariateNormal", dict(loc=torch.randn(3, dtype=torch.float64), scale_tril=_tril(3)), device
    )
    gme, tme = gm.expand((2,)), tm.expand((2,))
    value = torch.randn(2, 3, dtype=torch.float64)
    close(gme.log_prob(to_genesis(value, device)), tme.log_prob(value))
    close(gme.covariance_matrix, tme.covariance_matrix)
    close(gme.precision_matrix, tme.precision_matrix)


def test_repr_and_constraints():
    assert repr(GD.Normal(0.0, 1.0)) == "Normal(loc: tensor(0.), scale: tensor(1.))"
    assert repr(GD.Normal(genesis.zeros(2), 1.0)) == "Normal(loc: genesis.Size([2]), scale: genesis.Size([2]))"
    C, TC = GD.constraints, TD.constraints
    pairs = [
        (C.real, TC.real), (C.positive, TC.positive), (C.unit_interval, TC.unit_interval), (C.simplex, TC.simplex),
        (C.interval(0, 2), TC.interval(0, 2)), (C.integer_interval(0, 3), TC.integer_interval(0, 3)),
        (C.boolean, TC.boolean), (C.nonnegative_integer, TC.nonnegative_integer),
        (C.lower_cholesky, TC.lower_cholesky), (C.positive_definite, TC.positive_definite),
        (C.independent(C.real, 1), TC.independent(TC.real, 1)), (C.greater_than(1.5), TC.greater_than(1.5)),
    ]  # fmt: skip
    a = torch.randn(4, 3, 3, dtype=torch.float64)
    values = [torch.randn(4, 3, dtype=torch.float64), torch.rand(4, 3, dtype=torch.float64), a @ a.mT, a.tril()]
    values.append(torch.softmax(values[0], -1))
    values.append(torch.randint(0, 4, (4, 3)).double())
    for c, tc in pairs:
        assert repr(c) == repr(tc) and c.event_dim == tc.event_dim and c.is_discrete == tc.is_discrete
        for v in values:
            if v.dim() >= tc.event_dim and (tc.event_dim < 2 or v.dim() == 3):
                close(c.check(to_genesis(v, "cpu")), tc.check(v))
