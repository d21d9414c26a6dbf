"""The rest of torch.nn's activations against torch in float64: ELU / CELU / SELU, the shrinks,
Threshold, Hardsigmoid / Hardswish / Hardtanh / ReLU6, PReLU, RReLU, Softmin / Softmax2d / LogSigmoid /
Softsign / Tanhshrink, gumbel_softmax; functional and in-place forms, modules (values, gradients,
reprs), torch's errors, and the top-level names (genesis.celu, ...)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as TF
from nn_helpers import assert_close, check_forward_backward, check_module, g, module_repr, to_torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


def rand(*shape, scale=3.0):
    return torch.randn(*shape, dtype=torch.float64) * scale


FUNCTIONS = [
    ("elu", lambda f: f.elu),
    ("elu-alpha", lambda f: lambda t: f.elu(t, 0.4)),
    ("celu", lambda f: f.celu),
    ("celu-alpha", lambda f: lambda t: f.celu(t, 2.5)),
    ("selu", lambda f: f.selu),
    ("hardshrink", lambda f: f.hardshrink),
    ("hardshrink-lambd", lambda f: lambda t: f.hardshrink(t, 1.5)),
    ("softshrink", lambda f: f.softshrink),
    ("softshrink-lambd", lambda f: lambda t: f.softshrink(t, 1.2)),
    ("tanhshrink", lambda f: f.tanhshrink),
    ("softsign", lambda f: f.softsign),
    ("threshold", lambda f: lambda t: f.threshold(t, 0.4, -2.0)),
    ("hardsigmoid", lambda f: f.hardsigmoid),
    ("hardswish", lambda f: f.hardswish),
    ("logsigmoid", lambda f: f.logsigmoid),
    ("relu6", lambda f: f.relu6),
    ("rrelu-eval", lambda f: lambda t: f.rrelu(t, 0.1, 0.4)),
    ("softmin-dim", lambda f: lambda t: f.softmin(t, 1)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in FUNCTIONS])
def test_functional_matches_torch(device, fn):
    check_forward_backward(fn(TF), fn(F), [rand(3, 4, 5)], device)


INPLACE = [
    ("elu_", lambda f: lambda t: f.elu_(t, 0.7)),
    ("celu_", lambda f: lambda t: f.celu_(t, 1.5)),
    ("selu_", lambda f: f.selu_),
    ("threshold_", lambda f: lambda t: f.threshold_(t, 0.1, 5.0)),
    ("relu_", lambda f: f.relu_),
    ("hardtanh_", lambda f: lambda t: f.hardtanh_(t, -0.5, 2.0)),
    ("leaky_relu_", lambda f: lambda t: f.leaky_relu_(t, 0.2)),
    ("rrelu_-eval", lambda f: f.rrelu_),
    ("elu-inplace", lambda f: lambda t: f.elu(t, inplace=True)),
    ("selu-inplace", lambda f: lambda t: f.selu(t, inplace=True)),
    ("hardsigmoid-inplace", lambda f: lambda t: f.hardsigmoid(t, inplace=True)),
    ("hardswish-inplace", lambda f: lambda t: f.hardswish(t, inplace=True)),
    ("threshold-inplace", lambda f: lambda t: f.threshold(t, 0.0, 1.0, inplace=True)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=n) for n, f in INPLACE])
def test_inplace_forms_write_the_input_and_keep_gradients(device, fn):
    data = rand(3, 5)
    tleaf = data.clone().requires_grad_(True)
    gleaf = g(data, device, requires_grad=True)
    tx, gx = tleaf * 1.0, gleaf * 1.0  # in-place on a leaf that requires grad is refused (both libraries)
    tout, gout = fn(TF)(tx), fn(F)(gx)
    assert gout is gx
    assert_close(gx, tx)
    w = torch.randn(3, 5, dtype=torch.float64)
    (tout * w).sum().backward()
    (gout * g(w, device)).sum().backward()
    assert_close(gleaf.grad, tleaf.grad)


def test_prelu_functional_matches_torch(device):
    for shape, weight in (((2, 3, 4, 5), (3,)), ((2, 3, 4), (1,)), ((4, 3), (3,)), ((5,), (1,)), ((2, 3), ())):
        check_forward_backward(TF.prelu, F.prelu, [rand(*shape), torch.rand(weight, dtype=torch.float64)], device)


MODULES = [
    ("elu", lambda m: m.ELU(alpha=0.6), (3, 4)),
    ("celu", lambda m: m.CELU(alpha=1.7), (3, 4)),
    ("selu", lambda m: m.SELU(), (3, 4)),
    ("hardshrink", lambda m: m.Hardshrink(0.8), (3, 4)),
    ("softshrink", lambda m: m.Softshrink(0.3), (3, 4)),
    ("threshold", lambda m: m.Threshold(0.2, 3.0), (3, 4)),
    ("hardsigmoid", lambda m: m.Hardsigmoid(), (3, 4)),
    ("hardswish", lambda m: m.Hardswish(), (3, 4)),
    ("hardtanh", lambda m: m.Hardtanh(-2.0, 1.5), (3, 4)),
    ("relu6", lambda m: m.ReLU6(), (3, 4)),
    ("logsigmoid", lambda m: m.LogSigmoid(), (3, 4)),
    ("softsign", lambda m: m.Softsign(), (3, 4)),
    ("tanhshrink", lambda m: m.Tanhshrink(), (3, 4)),
    ("softmin", lambda m: m.Softmin(dim=-1), (3, 4)),
    ("softmax2d-4d", lambda m: m.Softmax2d(), (2, 3, 4, 2)),
    ("softmax2d-3d", lambda m: m.Softmax2d(), (3, 4, 2)),
    ("prelu", lambda m: m.PReLU(), (2, 3, 4)),
    ("prelu-channels", lambda m: m.PReLU(3, init=0.1), (2, 3, 4)),
    ("rrelu-eval", lambda m: m.RReLU(0.2, 0.5).eval(), (3, 4)),
]


@pytest.mark.parametrize("build,shape", [pytest.param(b, s, id=n) for n, b, s in MODULES])
def test_module_matches_torch(device, build, shape):
    tmod, gmod = build(torch.nn).double(), build(nn).double()
    assert module_repr(gmod) == repr(tmod)
    if isinstance(tmod, torch.nn.PReLU):  # a learnt slope per channel, not the initial one everywhere
        with torch.no_grad():
            tmod.weight.uniform_(-0.5, 0.5)
    gmod.to(device)
    check_module(tmod, gmod, [rand(*shape)], device)


@pytest.mark.parametrize(
    "build",
    [
        lambda m: m.ELU(2.0, inplace=True),
        lambda m: m.CELU(0.5, True),
        lambda m: m.SELU(inplace=True),
        lambda m: m.Hardsigmoid(inplace=True),
        lambda m: m.Hardswish(True),
        lambda m: m.Hardtanh(-2, 3, True),
        lambda m: m.ReLU6(inplace=True),
        lambda m: m.Threshold(0.1, 20, True),
        lambda m: m.RReLU(0.1, 0.3, inplace=True),
        lambda m: m.Softmin(),
        lambda m: m.PReLU(num_parameters=4),
        lambda m: m.Softmax2d(),
    ],
)
def test_reprs_match_torch(build):
    assert repr(build(nn)) == repr(build(torch.nn))


def test_module_state_dicts_match_torch():
    assert list(nn.PReLU(3).state_dict()) == list(torch.nn.PReLU(3).state_dict()) == ["weight"]
    prelu = nn.PReLU(3, init=0.1, dtype=genesis.float64)
    assert prelu.weight.dtype == genesis.float64 and to_torch(prelu.weight).tolist() == [0.1] * 3
    relu6 = nn.ReLU6()
    assert isinstance(relu6, nn.Hardtanh) and (relu6.min_val, relu6.max_val) == (0.0, 6.0)


def test_rrelu_training_draws_a_slope_per_element_in_range(device):
    lower, upper = 0.1, 0.3
    data = rand(400)
    x = g(data, device, requires_grad=True)
    out = F.rrelu(x, lower, upper, training=True)
    out.sum().backward()
    values, grad = to_torch(out), to_torch(x.grad)
    negative = data < 0
    slope = values[negative] / data[negative]
    assert ((slope >= lower) & (slope <= upper)).all()
    assert slope.std() > 0.03  # drawn per element, not one shared slope
    torch.testing.assert_close(grad[negative], slope)  # the gradient is the drawn slope
    assert torch.equal(values[~negative], data[~negative]) and (grad[~negative] == 1).all()
    module = nn.RReLU(lower, upper)
    assert not torch.equal(to_torch(module(g(data, device))), to_torch(module.eval()(g(data, device))))


def test_gumbel_softmax_soft_and_hard(device):
    logits = g(rand(6, 5, scale=1.0), device, requires_grad=True)
    genesis.manual_seed(7)
    soft = F.gumbel_softmax(logits, tau=0.5)
    genesis.manual_seed(7)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    torch.testing.assert_close(to_torch(soft).sum(-1), torch.ones(6, dtype=torch.float64))
    one_hot = to_torch(hard)
    assert ((one_hot == 0) | (one_hot == 1)).all() and (one_hot.sum(-1) == 1).all()
    assert torch.equal(one_hot.argmax(-1), to_torch(soft).argmax(-1))
    # Straight through: the hard sample's gradient is the soft sample's.
    w = g(torch.randn(6, 5, dtype=torch.float64), device)
    (soft * w).sum().backward()
    soft_grad = to_torch(logits.grad).clone()
    logits.grad = None
    (hard * w).sum().backward()
    torch.testing.assert_close(to_torch(logits.grad), soft_grad)
    # The temperature divides logits + noise: the same noise at tau = 2 is softmax(log(y_tau=1) / 2).
    genesis.manual_seed(3)
    y1 = to_torch(F.gumbel_softmax(logits, tau=1.0, dim=0))
    genesis.manual_seed(3)
    y2 = to_torch(F.gumbel_softmax(logits, tau=2.0, dim=0))
    torch.testing.assert_close(y2, torch.softmax(y1.log() / 2, 0))


def test_gumbel_softmax_samples_follow_the_softmax(device):
    probs = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    logits = g(probs.log().expand(4000, 3).contiguous(), device)
    counts = to_torch(F.gumbel_softmax(logits, hard=True)).sum(0) / 4000
    torch.testing.assert_close(counts, probs, atol=0.04, rtol=0)  # ~5 standard deviations
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-3)
    with pytest.raises(RuntimeError, match="dtype must be a floating point but you specified Long"):
        F.gumbel_softmax(genesis.arange(6, device=device).reshape(2, 3))


def test_errors_match_torch(device):
    x = g(rand(2, 3, 4), device)
    with pytest.raises(RuntimeError, match="lambda must be"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper bound"):
        F.rrelu(x, 0.5, 0.1, training=True)
    with pytest.raises(RuntimeError, match=r"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"):
        F.prelu(x, g(torch.rand(3, 1, dtype=torch.float64), device))
    with pytest.raises(RuntimeError, match="Found parameter numbers = 4 and channel size = 3"):
        F.prelu(x, g(torch.rand(4, dtype=torch.float64), device))
    with pytest.raises(RuntimeError, match=r"Type promoting not supported\. Got Double and Float"):
        F.prelu(x, genesis.ones(3, device=device))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(g(rand(3, 4), device))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh_(x, 2.0, 1.0)
    with pytest.raises(AssertionError):
        nn.Hardtanh(2.0, 1.0)
    ints = genesis.arange(-3, 4, device=device)
    for fn, name in (
        (F.elu, "elu"),
        (F.selu, "elu"),
        (F.hardswish, "hardswish"),
        (F.hardshrink, "hardshrink_cpu"),
    ):  # torch names the kernel
        with pytest.raises(NotImplementedError, match=f"\"{name}\" not implemented for 'Long'"):
            fn(ints)
    assert to_torch(F.threshold(ints, 1, 9)).tolist() == TF.threshold(torch.arange(-3, 4), 1, 9).tolist()
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        nn.Softmin()(x)


def test_top_level_names_match_torch(device):
    data = rand(3, 4)
    x = g(data, device)
    for name, args in (("celu", (0.5,)), ("selu", ()), ("threshold", (0.1, 2.0)), ("hardshrink", (0.7,))):
        assert_close(getattr(genesis, name)(x, *args), getattr(torch, name)(data, *args))
    assert_close(genesis.rrelu(x), torch.rrelu(data))
    weight = torch.rand(4, dtype=torch.float64)
    assert_close(genesis.prelu(x, g(weight, device)), torch.prelu(data, weight))
    for name, args in (("celu_", (0.5,)), ("selu_", ()), ("threshold_", (0.1, 2.0)), ("rrelu_", ())):
        tx, gx = data.clone(), g(data, device)
        assert getattr(genesis, name)(gx, *args) is gx
        assert_close(gx, getattr(torch, name)(tx, *args))
    for name in ("celu", "selu", "rrelu", "threshold"):  # torch's top-level forms have no inplace argument
        with pytest.raises(TypeError):
            getattr(genesis, name)(x, *([0.1, 0.1] if name == "threshold" else []), inplace=True)
