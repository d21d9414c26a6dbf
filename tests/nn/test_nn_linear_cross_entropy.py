"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss against torch 2.13 in float64: the reference path
(class indices or probabilities, weight, ignore_index, label smoothing, bias, K-dimensional heads) and the
chunked path (LinearCrossEntropyOptions: chunk sizes as torch's, values and the three gradients), the
fallback warning, repeated backward, torch's errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import check_forward_backward, check_module, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def _targets(n, c, ignore=None):
    t = torch.randint(0, c, (n,))
    if ignore is not None:
        t[::3] = ignore
    return t


def _check(device, inputs, target, tweight=None, **kwargs):
    """Inputs (input, linear_weight[, linear_bias]) get gradients; the target and class weight are fixed."""
    gt = g(target, device)
    gw = None if tweight is None else g(tweight, device)
    gkwargs = dict(kwargs)
    if "options" in gkwargs and gkwargs["options"] is not None:
        gkwargs["options"] = nn.LinearCrossEntropyOptions(batch_chunk_size=gkwargs["options"].batch_chunk_size)

    def tfn(x, w, *b):
        return torch.nn.functional.linear_cross_entropy(
            x, w, target, linear_bias=b[0] if b else None, weight=tweight, **kwargs
        )

    def gfn(x, w, *b):
        return F.linear_cross_entropy(x, w, gt, linear_bias=b[0] if b else None, weight=gw, **gkwargs)

    check_forward_backward(tfn, gfn, inputs, device)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_class_indices_match_torch(device, reduction, chunked, bias):
    n, d, c = 11, 4, 9
    inputs = [rand(n, d), rand(c, d)] + ([rand(c)] if bias else [])
    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=4) if chunked else None
    _check(device, inputs, _targets(n, c, ignore=-100), reduction=reduction, options=options)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("chunked", [False, True])
def test_weight_and_ignore_index_match_torch(device, reduction, chunked):
    n, d, c = 10, 3, 7
    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=3) if chunked else None
    weight = torch.rand(c, dtype=torch.float64) + 0.2
    _check(
        device,
        [rand(n, d), rand(c, d), rand(c)],
        _targets(n, c, ignore=2),
        weight,
        reduction=reduction,
        ignore_index=2,
        options=options,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_reference_path_smoothing_probabilities_and_k_dims_match_torch(device, reduction):
    n, d, c = 6, 4, 5
    _check(device, [rand(n, d), rand(c, d)], _targets(n, c), reduction=reduction, label_smoothing=0.2)
    probs = torch.rand(n, c, dtype=torch.float64).softmax(1)
    _check(device, [rand(n, d), rand(c, d), rand(c)], probs, reduction=reduction)
    k_target = torch.randint(0, c, (n, 2, 3))
    _check(device, [rand(n, d), rand(c, 2, 3, d), rand(c, 2, 3)], k_target, reduction=reduction)
    _check(device, [rand(d), rand(c, d)], torch.tensor(3), reduction=reduction)  # unbatched


def test_unbatched_chunked_matches_torch(device):
    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=1)
    _check(device, [rand(4), rand(6, 4)], torch.tensor(2), reduction="none", options=options)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(chunking_method="aspect_ratio"),
        dict(chunking_method="aspect_ratio:4"),
        dict(batch_chunk_size=5),
        dict(chunking_method=None),
    ],
)
@pytest.mark.parametrize("shape", [(100, 8, 64), (37, 16, 1000), (5, 32, 4)])
def test_chunk_sizes_follow_torch(kwargs, shape):
    rows, features, classes = shape
    expected = torch.nn.LinearCrossEntropyOptions(**kwargs)._adjust(rows, features, classes, torch.float32)
    assert nn.LinearCrossEntropyOptions(**kwargs).chunk_rows(rows, features, classes) == expected.batch_chunk_size


def test_options_validation_matches_torch():
    for kwargs, match in [
        (dict(acc_policy="fast"), "invalid acc_policy"),
        (dict(chunking_method="square"), "invalid chunking_method"),
        (dict(batch_chunk_size=0), "batch_chunk_size must be positive int or None"),
        (dict(acc_dtype=genesis.int64), "acc_dtype must be one of"),
    ]:
        with pytest.raises(ValueError, match=match):
            nn.LinearCrossEntropyOptions(**kwargs)
    with pytest.raises(ValueError, match="give different chunk sizes"):
        nn.LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method="aspect_ratio").chunk_rows(100, 8, 64)


def test_chunked_fallback_warns(device):
    x, w = genesis.randn(4, 3, device=device), genesis.randn(5, 3, device=device)
    with pytest.warns(UserWarning, match="``options`` ignored; chunked path needs"):
        F.linear_cross_entropy(
            x, w, genesis.tensor([0, 1, 2, 3], device=device), label_smoothing=0.1,
            options=nn.LinearCrossEntropyOptions(),
        )  # fmt: skip


def test_chunked_second_backward_needs_allow_retain_graph(device):
    x = genesis.randn(6, 3, device=device, requires_grad=True)
    w = genesis.randn(5, 3, device=device, requires_grad=True)
    t = genesis.tensor([0, 1, 2, 3, 4, 0], device=device)
    loss = F.linear_cross_entropy(x, w, t, options=nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="allow_retain_graph=True"):
        loss.backward()
    options = nn.LinearCrossEntropyOptions(batch_chunk_size=2, allow_retain_graph=True)
    loss = F.linear_cross_entropy(x, w, t, options=options)
    x.grad = None
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    loss.backward()
    assert genesis.allclose(x.grad, first * 2)


ERRORS = [
    ((3, 2, 4), (5, 4), (3,), {}, "expected input with dimensionality 1 or 2, got 3"),
    ((3, 4), (5,), (3,), {}, "expected linear_weight with dimensionality at least 2, got 1"),
    ((3, 4), (5, 3), (3,), {}, "expected equal input and linear_weight last dimensions"),
    ((3, 4), (5, 4), (3,), dict(linear_bias=(4,)), r"expected linear_bias shape \(5,\), got \(4,\)"),
    ((4,), (5, 2, 4), (2,), {}, "requires batched input"),
    ((3, 4), (5, 4), (3, 5), dict(ignore_index=1), "ignore_index cannot be specified when target contains"),
]


@pytest.mark.parametrize("x,w,t,kwargs,match", ERRORS, ids=[e[4][:30] for e in ERRORS])
def test_errors_match_torch(device, x, w, t, kwargs, match):
    tx, tw = rand(*x), rand(*w)
    tt = torch.rand(*t, dtype=torch.float64) if len(t) == 2 else torch.randint(0, 2, t)
    tkwargs = {k: rand(*v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
    with pytest.raises(RuntimeError, match=match):
        torch.nn.functional.linear_cross_entropy(tx, tw, tt, **tkwargs)
    gkwargs = {k: g(v, device) if isinstance(v, torch.Tensor) else v for k, v in tkwargs.items()}
    with pytest.raises(RuntimeError, match=match):
        F.linear_cross_entropy(g(tx, device), g(tw, device), g(tt, device), **gkwargs)


@pytest.mark.parametrize("out_features,bias", [((), False), ((), True), ((2,), True)])
def test_module_matches_torch(device, out_features, bias):
    weight = torch.rand(6, dtype=torch.float64) + 0.5
    tmod = torch.nn.LinearCrossEntropyLoss(
        4, 6, out_features=out_features, bias=bias, weight=weight, ignore_index=1, dtype=torch.float64
    )
    gmod = nn.LinearCrossEntropyLoss(
        4, 6, out_features=out_features, bias=bias, weight=g(weight, device), ignore_index=1,
        dtype=genesis.float64, device=device,
    )  # fmt: skip
    assert repr(gmod) == repr(tmod)
    target = torch.randint(0, 6, (5, *out_features))
    check_module(tmod, gmod, [rand(5, 4), target], device)


def test_module_chunked_matches_torch(device):
    tmod = torch.nn.LinearCrossEntropyLoss(
        4, 9, bias=True, dtype=torch.float64, options=torch.nn.LinearCrossEntropyOptions(batch_chunk_size=4)
    )
    gmod = nn.LinearCrossEntropyLoss(
        4, 9, bias=True, dtype=genesis.float64, device=device, options=nn.LinearCrossEntropyOptions(batch_chunk_size=4)
    )
    check_module(tmod, gmod, [rand(10, 4), torch.randint(0, 9, (10,))], device)


def test_module_argument_errors_match_torch():
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(6,\), got \(5,\)"):
        nn.LinearCrossEntropyLoss(4, 6, weight=genesis.ones(5))
    with pytest.raises(RuntimeError, match=r"expected label_smoothing to be in range \[0, 1\], got 1.5"):
        nn.LinearCrossEntropyLoss(4, 6, label_smoothing=1.5)
