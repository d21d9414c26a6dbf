"""The margin, embedding and likelihood losses (modules and functionals) against torch in float64: values,
gradients of every floating input, every reduction, reprs, torch's errors; torch's top-level forms
(genesis.ctc_loss, genesis.kl_div, ...) with their integer reductions; AdaptiveLogSoftmaxWithLoss."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, check_module, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def signs(*shape):
    return torch.randint(0, 2, shape).double() * 2 - 1


def positive(*shape):
    return torch.rand(*shape, dtype=torch.float64) * 2 + 0.1


def multilabel_targets():
    """Rows of class lists ended by -1 (entries after it are ignored), one row without any target."""
    return torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 2, 0, 0, 0], [4, -1, -1, 0, 1]])


# (module name, kwargs, buffer kwargs (tensors), inputs())
CASES = [
    ("CosineEmbeddingLoss", {}, {}, lambda: [rand(5, 4), rand(5, 4), signs(5)]),
    ("CosineEmbeddingLoss", dict(margin=0.3), {}, lambda: [rand(5, 4), rand(5, 4), signs(5)]),
    ("CosineEmbeddingLoss", dict(margin=-0.2), {}, lambda: [rand(4), rand(4), torch.tensor(-1.0)]),
    ("HingeEmbeddingLoss", {}, {}, lambda: [rand(4, 3), signs(4, 3)]),
    ("HingeEmbeddingLoss", dict(margin=0.5), {}, lambda: [positive(4, 3), signs(4, 3)]),
    ("MarginRankingLoss", {}, {}, lambda: [rand(6), rand(6), signs(6)]),
    ("MarginRankingLoss", dict(margin=0.4), {}, lambda: [rand(3, 2), rand(3, 2), signs(3, 2)]),
    ("SoftMarginLoss", {}, {}, lambda: [rand(4, 3) * 3, signs(4, 3)]),
    ("MultiLabelMarginLoss", {}, {}, lambda: [rand(4, 5), multilabel_targets()]),
    ("MultiLabelMarginLoss", {}, {}, lambda: [rand(5), torch.tensor([2, 4, -1, 0, 1])]),
    ("MultiLabelSoftMarginLoss", {}, {}, lambda: [rand(4, 5), torch.randint(0, 2, (4, 5)).double()]),
    (
        "MultiLabelSoftMarginLoss",
        {},
        dict(weight=torch.rand(5, dtype=torch.float64) + 0.2),
        lambda: [rand(4, 5) * 4, torch.randint(0, 2, (4, 5)).double()],
    ),
    ("MultiMarginLoss", {}, {}, lambda: [rand(6, 4), torch.randint(0, 4, (6,))]),
    ("MultiMarginLoss", dict(p=2, margin=0.7), {}, lambda: [rand(6, 4), torch.randint(0, 4, (6,))]),
    (
        "MultiMarginLoss",
        dict(p=2),
        dict(weight=torch.rand(4, dtype=torch.float64) + 0.2),
        lambda: [rand(6, 4), torch.randint(0, 4, (6,))],
    ),
    ("MultiMarginLoss", {}, {}, lambda: [rand(4), torch.tensor(2)]),
    ("TripletMarginLoss", {}, {}, lambda: [rand(5, 4), rand(5, 4), rand(5, 4)]),
    ("TripletMarginLoss", dict(margin=2.0, p=1.0, swap=True), {}, lambda: [rand(5, 4), rand(5, 4), rand(5, 4)]),
    ("TripletMarginLoss", dict(p=3.0, eps=1e-3), {}, lambda: [rand(4), rand(4), rand(4)]),
    ("PoissonNLLLoss", {}, {}, lambda: [rand(4, 3), positive(4, 3)]),
    ("PoissonNLLLoss", dict(full=True), {}, lambda: [rand(4, 3), positive(4, 3)]),
    ("PoissonNLLLoss", dict(log_input=False, eps=1e-4), {}, lambda: [positive(4, 3), positive(4, 3)]),
    ("PoissonNLLLoss", dict(log_input=False, full=True), {}, lambda: [positive(4, 3), positive(4, 3)]),
    ("GaussianNLLLoss", {}, {}, lambda: [rand(4, 3), rand(4, 3), positive(4, 3)]),
    ("GaussianNLLLoss", dict(full=True, eps=0.5), {}, lambda: [rand(4, 3), rand(4, 3), positive(4, 3)]),
    ("GaussianNLLLoss", {}, {}, lambda: [rand(4, 3), rand(4, 3), positive(4)]),  # one dimension short
    ("GaussianNLLLoss", {}, {}, lambda: [rand(4, 3), rand(4, 3), positive(4, 1)]),  # homoscedastic
    ("GaussianNLLLoss", {}, {}, lambda: [rand(4, 3), rand(4, 3), 0.7]),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name,kwargs,buffers,inputs", [pytest.param(*c, id=f"{c[0]}-{c[1]}-{list(c[2])}-{i}") for i, c in enumerate(CASES)]
)
def test_losses_match_torch(device, reduction, name, kwargs, buffers, inputs):
    kwargs = dict(kwargs, reduction=reduction)
    tmod = getattr(torch.nn, name)(**kwargs, **buffers)
    gmod = getattr(nn, name)(**kwargs, **{k: g(v, device) for k, v in buffers.items()})
    assert repr(gmod) == repr(tmod)
    assert isinstance(gmod, nn.modules.loss._Loss)
    _check_with_constant_target(tmod, gmod, inputs(), device, constant=name in CONSTANT_TARGET)


# torch refuses a target that requires grad for these: it is passed as a constant.
CONSTANT_TARGET = {"SoftMarginLoss", "soft_margin_loss"}


def _check_with_constant_target(tfn, gfn, inputs, device, constant: bool):
    if not constant:
        return check_forward_backward(tfn, gfn, inputs, device)
    target = inputs[-1]
    gtarget = g(target, device)
    return check_forward_backward(lambda *a: tfn(*a, target), lambda *a: gfn(*a, gtarget), inputs[:-1], device)


FUNCTIONALS = [
    ("cosine_embedding_loss", dict(margin=0.2), lambda: [rand(5, 4), rand(5, 4), signs(5)]),
    ("hinge_embedding_loss", dict(margin=0.5), lambda: [rand(4, 3), signs(4, 3)]),
    ("margin_ranking_loss", dict(margin=0.1), lambda: [rand(6), rand(6), signs(6)]),
    ("soft_margin_loss", {}, lambda: [rand(4, 3), signs(4, 3)]),
    ("multilabel_margin_loss", {}, lambda: [rand(4, 5), multilabel_targets()]),
    ("multilabel_soft_margin_loss", {}, lambda: [rand(4, 5), torch.rand(4, 5, dtype=torch.float64)]),
    ("multi_margin_loss", dict(p=1, margin=1.5), lambda: [rand(6, 4), torch.randint(0, 4, (6,))]),
    ("triplet_margin_loss", dict(swap=True), lambda: [rand(5, 4), rand(5, 4), rand(5, 4)]),
    ("triplet_margin_with_distance_loss", dict(swap=True), lambda: [rand(5, 4), rand(5, 4), rand(5, 4)]),
    ("poisson_nll_loss", dict(full=True), lambda: [rand(4, 3), positive(4, 3)]),
    ("gaussian_nll_loss", dict(full=True), lambda: [rand(4, 3), rand(4, 3), positive(4, 3)]),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kwargs,inputs", FUNCTIONALS, ids=[f[0] for f in FUNCTIONALS])
def test_functionals_match_torch(device, reduction, name, kwargs, inputs):
    kwargs = dict(kwargs, reduction=reduction)
    _check_with_constant_target(
        lambda *a: getattr(torch.nn.functional, name)(*a, **kwargs),
        lambda *a: getattr(F, name)(*a, **kwargs),
        inputs(),
        device,
        constant=name in CONSTANT_TARGET,
    )


def test_triplet_margin_with_custom_distance(device):
    def tdist(x, y):
        return 1 - torch.nn.functional.cosine_similarity(x, y, dim=-1, eps=1e-8)

    def gdist(x, y):  # the same cosine distance, composed in genesis
        dot = (x * y).sum(-1)
        return 1 - dot / ((x * x).sum(-1).sqrt() * (y * y).sum(-1).sqrt()).clamp_min(1e-8)

    tmod = torch.nn.TripletMarginWithDistanceLoss(distance_function=tdist, margin=0.5, swap=True, reduction="sum")
    gmod = nn.TripletMarginWithDistanceLoss(distance_function=gdist, margin=0.5, swap=True, reduction="sum")
    check_forward_backward(tmod, gmod, [rand(5, 4), rand(5, 4), rand(5, 4)], device)


def test_triplet_margin_with_distance_default_module(device):
    tmod = torch.nn.TripletMarginWithDistanceLoss(margin=1.5)
    gmod = nn.TripletMarginWithDistanceLoss(margin=1.5)
    check_forward_backward(tmod, gmod, [rand(5, 4), rand(5, 4), rand(5, 4)], device)


def test_nll_loss_2d_warns_and_matches_nll_loss(device):
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        gmod = nn.NLLLoss2d(ignore_index=1)
    with pytest.warns(FutureWarning):
        tmod = torch.nn.NLLLoss2d(ignore_index=1)
    assert isinstance(gmod, nn.NLLLoss) and repr(gmod) == repr(tmod)
    x = rand(2, 3, 4, 5).log_softmax(1)
    check_forward_backward(tmod, gmod, [x, torch.randint(0, 3, (2, 4, 5))], device)


def test_legacy_size_average_reduce(device):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        gmod = nn.SoftMarginLoss(size_average=False)
    assert gmod.reduction == "sum"
    a, b = rand(4, 3), signs(4, 3)
    assert_close(gmod(g(a, device), g(b, device)), torch.nn.SoftMarginLoss(reduction="sum")(a, b))


def _call(d, name, *arrays, **kwargs):
    return getattr(F, name)(*[g(a, d) for a in arrays], **kwargs)


# (function name, inputs, kwargs, exception class, message)
ERRORS = [
    ("cosine_embedding_loss", [rand(3, 4), rand(3, 4), signs(3, 1)], {}, RuntimeError, "0D or 1D target tensor"),
    ("cosine_embedding_loss", [rand(3, 4), rand(3, 4, 1), signs(3)], {}, RuntimeError, "expects 2D input tensors"),
    ("margin_ranking_loss", [rand(3), rand(3), signs(3, 1)], {}, RuntimeError, "should have same dimension"),
    ("multi_margin_loss", [rand(3, 4), torch.tensor([0, 1, 2])], dict(p=3), ValueError, "only p == 1 and p == 2"),
    ("multi_margin_loss", [rand(3, 4), torch.tensor([0, 1])], {}, RuntimeError, r"Expected target size \[3\]"),
    ("multi_margin_loss", [rand(3, 4, 2), torch.tensor([0, 1, 2])], {}, RuntimeError, "non-empty vector or matrix"),
    ("multi_margin_loss", [rand(3, 4), torch.tensor([0, 1, 5])], {}, RuntimeError, "target out of range"),
    (
        "multi_margin_loss",
        [rand(3, 4), torch.tensor([0, 1, 2])],
        dict(weight=torch.ones(3, dtype=torch.float64)),
        RuntimeError,
        "inconsistent weight size, expected 4",
    ),
    ("multilabel_margin_loss", [rand(3, 4), torch.tensor([0, 1, 2])], {}, RuntimeError, "inconsistent target size"),
    ("multilabel_margin_loss", [rand(2, 4), torch.tensor([[0, 1, 2, 5]] * 2)], {}, RuntimeError, "out of range"),
    ("triplet_margin_loss", [rand(3, 4), rand(3, 4), rand(3)], {}, RuntimeError, "negative 1D inputs"),
    ("triplet_margin_with_distance_loss", [rand(3, 4)] * 3, dict(margin=0.0), ValueError, "greater than 0"),
    ("gaussian_nll_loss", [rand(3, 4), rand(3, 4), positive(3, 5)], {}, ValueError, "var is of incorrect size"),
    ("gaussian_nll_loss", [rand(3, 4), rand(3, 4), -positive(3, 4)], {}, ValueError, "var has negative entry"),
    ("gaussian_nll_loss", [rand(3, 4), rand(3, 4), positive(3, 4)], dict(reduction="x"), ValueError, "x is not valid"),
    ("poisson_nll_loss", [rand(3, 4), rand(3, 4)], dict(reduction="x"), ValueError, "x is not a valid value"),
    ("multilabel_soft_margin_loss", [rand(3, 4), rand(3, 4)], dict(reduction="x"), ValueError, "x is not valid"),
    ("soft_margin_loss", [rand(3, 4), rand(3, 4)], dict(reduction="x"), ValueError, "x is not a valid value"),
]


@pytest.mark.parametrize("name,arrays,kwargs,error,match", ERRORS, ids=[f"{e[0]}-{e[4][:25]}" for e in ERRORS])
def test_errors_match_torch(device, name, arrays, kwargs, error, match):
    with pytest.raises(error):
        getattr(torch.nn.functional, name)(*arrays, **kwargs)
    gkwargs = {k: g(v, device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    with pytest.raises(error, match=match):
        _call(device, name, *arrays, **gkwargs)


@pytest.mark.parametrize(
    "cls,kwargs,match",
    [
        ("MultiMarginLoss", dict(p=3), "only p == 1 and p == 2"),
        ("MultiMarginLoss", dict(weight=torch.ones(2, 2)), "expected weight to be None or 1D tensor, got 2D"),
        ("TripletMarginLoss", dict(margin=0.0), "TripletMarginLoss: expected margin to be greater than 0"),
        ("TripletMarginWithDistanceLoss", dict(margin=-1.0), "expected margin to be greater than 0, got -1.0"),
    ],
)
def test_module_argument_errors_match_torch(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        getattr(torch.nn, cls)(**kwargs)
    gkwargs = {k: g(v, "cpu") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    with pytest.raises(ValueError, match=match):
        getattr(nn, cls)(**gkwargs)


# torch's top-level forms: integer reductions, unreduced when none is given (torch 2.13's binding).
TOP_LEVEL = [
    ("cosine_embedding_loss", lambda: [rand(5, 4), rand(5, 4), signs(5)], (0.1,)),
    ("hinge_embedding_loss", lambda: [rand(4, 3), signs(4, 3)], (0.5,)),
    ("margin_ranking_loss", lambda: [rand(6), rand(6), signs(6)], (0.2,)),
    ("triplet_margin_loss", lambda: [rand(5, 4), rand(5, 4), rand(5, 4)], (1.0, 2, 1e-6, True)),
    ("kl_div", lambda: [rand(4, 5).log_softmax(1), torch.rand(4, 5, dtype=torch.float64).softmax(1)], ()),
    ("binary_cross_entropy_with_logits", lambda: [rand(4, 3), torch.rand(4, 3, dtype=torch.float64)], (None, None)),
]


@pytest.mark.parametrize("reduction", [None, 0, 1, 2])
@pytest.mark.parametrize("name,inputs,args", TOP_LEVEL, ids=[t[0] for t in TOP_LEVEL])
def test_top_level_losses_match_torch(device, reduction, name, inputs, args):
    extra = args if reduction is None else (*args, reduction)
    check_forward_backward(
        lambda *a: getattr(torch, name)(*a, *extra), lambda *a: getattr(genesis, name)(*a, *extra), inputs(), device
    )


def test_top_level_poisson_and_ctc_match_torch(device):
    check_forward_backward(
        lambda a, b: torch.poisson_nll_loss(a, b, True, True, 1e-8, 2),
        lambda a, b: genesis.poisson_nll_loss(a, b, True, True, 1e-8, 2),
        [rand(4, 3), positive(4, 3)],
        device,
    )
    targets, lengths = torch.tensor([[1, 2, 2], [3, 1, 0]]), [3, 2]
    gtargets = g(targets, device)
    check_forward_backward(
        lambda lp: torch.ctc_loss(lp, targets, [6, 5], lengths, 0, 1),
        lambda lp: genesis.ctc_loss(lp, gtargets, [6, 5], lengths, 0, 1),
        [rand(6, 2, 4).log_softmax(2)],
        device,
    )
    with pytest.raises(TypeError, match="must be int, not str"):
        genesis.kl_div(g(rand(3), device), g(rand(3), device), "sum")


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(device, head_bias):
    tmod = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=head_bias).double()
    gmod = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=head_bias, dtype=genesis.float64)
    gmod.to(device)
    assert repr(gmod) == repr(tmod)
    target = torch.tensor([0, 4, 9, 2, 7, 5, 1])
    check_module(tmod, gmod, [rand(7, 8), target], device)
    x = rand(7, 8)
    assert_close(gmod.log_prob(g(x, device)), tmod.log_prob(x))
    assert_close(gmod.predict(g(x, device)), tmod.predict(x))
    out = gmod(g(x[0], device), g(target[0], device))
    expected = tmod(x[0], target[0])
    assert_close(out.output, expected.output)
    assert_close(out.loss, expected.loss)


def test_adaptive_log_softmax_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
    with pytest.raises(ValueError, match="length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    mod = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        mod(genesis.randn(2, 8), genesis.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        mod(genesis.randn(3, 8), genesis.tensor([1, 2]))
