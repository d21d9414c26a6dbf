"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss (torch 2.13's API) in float64: the reference path
(class indices or probabilities, weight, ignore_index, label smoothing, bias, K-dimensional heads) and the
chunked path (LinearCrossEntropyOptions: chunk sizes as torch's, values and the three gradients), the
fallback warning, repeated backward, torch's errors.

The GPU machine's torch (2.11) has no linear_cross_entropy: the expected values come from the reference
torch 2.13 documents (``cross_entropy(linear(input, linear_weight), target, **kwargs)``, the K-dimensional
head reshaped to (N, C, d1, ..., dK) logits) written here in torch, and, where the installed torch has the
function, torch's own result is checked against that reference as well."""

from __future__ import annotations

import math

import pytest
import torch
from nn_helpers import check_forward_backward, check_module, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]
TORCH_HAS_LCE = hasattr(torch.nn.functional, "linear_cross_entropy")  # torch >= 2.13


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def _targets(n, c, ignore=None):
    t = torch.randint(0, c, (n,))
    if ignore is not None:
        t[::3] = ignore
    return t


def reference_linear_cross_entropy(x, w, target, *, linear_bias=None, weight=None, ignore_index=None, **kwargs):
    """torch 2.13's documented reference path: the head (C, *out_features, in_features) flattened into one
    linear layer, its logits reshaped to (*batch, C, *out_features), then cross_entropy (ignore_index None
    meaning cross_entropy's default, -100)."""
    c, out_features = w.shape[0], tuple(w.shape[1:-1])
    flat_w = w.reshape(math.prod(out_features, start=c), w.shape[-1])
    flat_b = None if linear_bias is None else linear_bias.reshape(-1)
    logits = torch.nn.functional.linear(x, flat_w, flat_b).reshape(*x.shape[:-1], c, *out_features)
    ignore = -100 if ignore_index is None else ignore_index
    return torch.nn.functional.cross_entropy(logits, target, weight=weight, ignore_index=ignore, **kwargs)


def _check(device, inputs, target, tweight=None, chunk=None, **kwargs):
    """Inputs (input, linear_weight[, linear_bias]) get gradients; the target and class weight are fixed.
    ``chunk``: genesis computes in chunks of that many rows (torch's chunked path equals its reference)."""
    gt = g(target, device)
    gw = None if tweight is None else g(tweight, device)
    options = None if chunk is None else nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)

    def tfn(x, w, *b):
        return reference_linear_cross_entropy(x, w, target, linear_bias=b[0] if b else None, weight=tweight, **kwargs)

    def gfn(x, w, *b):
        return F.linear_cross_entropy(x, w, gt, linear_bias=b[0] if b else None, weight=gw, options=options, **kwargs)

    check_forward_backward(tfn, gfn, inputs, device)
    if TORCH_HAS_LCE:  # the reference is torch's own result (the chunked path too)
        topts = None if chunk is None else torch.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
        bias = {"linear_bias": inputs[2]} if len(inputs) > 2 else {}
        got = torch.nn.functional.linear_cross_entropy(
            *inputs[:2], target, weight=tweight, options=topts, **bias, **kwargs
        )
        torch.testing.assert_close(got, tfn(*inputs))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_class_indices_match_torch(device, reduction, chunked, bias):
    n, d, c = 11, 4, 9
    inputs = [rand(n, d), rand(c, d)] + ([rand(c)] if bias else [])
    _check(device, inputs, _targets(n, c, ignore=-100), reduction=reduction, chunk=4 if chunked else None)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("chunked", [False, True])
def test_weight_and_ignore_index_match_torch(device, reduction, chunked):
    n, d, c = 10, 3, 7
    weight = torch.rand(c, dtype=torch.float64) + 0.2
    _check(
        device,
        [rand(n, d), rand(c, d), rand(c)],
        _targets(n, c, ignore=2),
        weight,
        chunk=3 if chunked else None,
        reduction=reduction,
        ignore_index=2,
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


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_chunked_label_smoothing_matches_torch(device, reduction):
    """The fused chunked path takes label smoothing (with class weights and ignored rows) too."""
    n, d, c = 10, 3, 7
    weight = torch.rand(c, dtype=torch.float64) + 0.2
    inputs = [rand(n, d), rand(c, d), rand(c)]
    target = _targets(n, c, ignore=-100)
    _check(device, inputs, target, weight, chunk=4, reduction=reduction, label_smoothing=0.15)
    _check(device, inputs[:2], target, chunk=3, reduction=reduction, label_smoothing=0.3)


def test_unbatched_chunked_matches_torch(device):
    _check(device, [rand(4), rand(6, 4)], torch.tensor(2), reduction="none", chunk=1)


# torch 2.13's LinearCrossEntropyOptions(**kwargs)._adjust(rows, features, classes, float32).batch_chunk_size,
# by its documented rule: an explicit batch_chunk_size (capped at rows) wins over "auto"; "auto" (no device)
# is "aspect_ratio:2"; "aspect_ratio[:N]" is next_pow2(ceil(rows / ceil(classes / features))) // N, at most
# rows and at least 1; chunking_method=None without a size: one chunk of all rows.
CHUNK_KWARGS = [
    dict(),
    dict(chunking_method="aspect_ratio"),
    dict(chunking_method="aspect_ratio:4"),
    dict(batch_chunk_size=5),
    dict(chunking_method=None),
]
CHUNK_ROWS = {
    (100, 8, 64): [8, 16, 4, 5, 100],  # ceil(64 / 8) = 8, ceil(100 / 8) = 13, next_pow2 = 16
    (37, 16, 1000): [1, 1, 1, 5, 37],  # ceil(1000 / 16) = 63, ceil(37 / 63) = 1: 1 // N floored at 1
    (5, 32, 4): [4, 5, 2, 5, 5],  # ceil(4 / 32) = 1, 5 rows, next_pow2 = 8, capped at 5 rows
}


@pytest.mark.parametrize("case", range(len(CHUNK_KWARGS)))
@pytest.mark.parametrize("shape", list(CHUNK_ROWS))
def test_chunk_sizes_follow_torch(case, shape):
    kwargs, expected = CHUNK_KWARGS[case], CHUNK_ROWS[shape][case]
    assert nn.LinearCrossEntropyOptions(**kwargs).chunk_rows(*shape) == expected
    if TORCH_HAS_LCE:  # the table is torch's answer
        assert torch.nn.LinearCrossEntropyOptions(**kwargs)._adjust(*shape, torch.float32).batch_chunk_size == expected


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
    probabilities = genesis.randn(4, 5, device=device).softmax(1)
    with pytest.warns(UserWarning, match="``options`` ignored; chunked path needs"):
        F.linear_cross_entropy(x, w, probabilities, options=nn.LinearCrossEntropyOptions())


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
    """torch 2.13's messages (checked against the installed torch where it has the function)."""
    tx, tw = rand(*x), rand(*w)
    tt = torch.rand(*t, dtype=torch.float64) if len(t) == 2 else torch.randint(0, 2, t)
    tkwargs = {k: rand(*v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
    if TORCH_HAS_LCE:
        with pytest.raises(RuntimeError, match=match):
            torch.nn.functional.linear_cross_entropy(tx, tw, tt, **tkwargs)
    gkwargs = {k: g(v, device) if isinstance(v, torch.Tensor) else v for k, v in tkwargs.items()}
    with pytest.raises(RuntimeError, match=match):
        F.linear_cross_entropy(g(tx, device), g(tw, device), g(tt, device), **gkwargs)


class ReferenceLinearCrossEntropyLoss(torch.nn.Module):
    """torch 2.13's nn.LinearCrossEntropyLoss (its parameters, buffer, repr and reference forward) written
    in torch, for torch versions without it: the head stored flat as a Linear of C * prod(out_features)
    outputs, the class weight a buffer (as _WeightedLoss's)."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, dtype=None, weight=None,
                 ignore_index=None, options=None):  # fmt: skip
        super().__init__()
        self.register_buffer("weight", weight)
        self.num_classes, self.out_features, self.ignore_index, self.options = (
            num_classes, out_features, ignore_index, options,
        )  # fmt: skip
        self.linear = torch.nn.Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, dtype=dtype)

    def forward(self, input, target):
        w = self.linear.weight.reshape(self.num_classes, *self.out_features, self.linear.in_features)
        b = None if self.linear.bias is None else self.linear.bias.reshape(self.num_classes, *self.out_features)
        return reference_linear_cross_entropy(
            input, w, target, linear_bias=b, weight=self.weight, ignore_index=self.ignore_index
        )

    def extra_repr(self):
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction=mean, "
            f"ignore_index={self.ignore_index}, label_smoothing=0.0, options={self.options}"
        )

    def _get_name(self):
        return "LinearCrossEntropyLoss"


@pytest.mark.parametrize("out_features,bias", [((), False), ((), True), ((2,), True)])
def test_module_matches_torch(device, out_features, bias):
    weight = torch.rand(6, dtype=torch.float64) + 0.5
    kwargs = dict(out_features=out_features, bias=bias, ignore_index=1)
    tmod = ReferenceLinearCrossEntropyLoss(4, 6, weight=weight, dtype=torch.float64, **kwargs)
    gmod = nn.LinearCrossEntropyLoss(4, 6, weight=g(weight, device), dtype=genesis.float64, device=device, **kwargs)
    assert repr(gmod) == repr(tmod)
    if TORCH_HAS_LCE:  # the reference prints as torch's module
        assert repr(torch.nn.LinearCrossEntropyLoss(4, 6, weight=weight, **kwargs)) == repr(tmod)
    target = torch.randint(0, 6, (5, *out_features))
    check_module(tmod, gmod, [rand(5, 4), target], device)


def test_module_chunked_matches_torch(device):
    tmod = ReferenceLinearCrossEntropyLoss(4, 9, bias=True, dtype=torch.float64)
    gmod = nn.LinearCrossEntropyLoss(
        4, 9, bias=True, dtype=genesis.float64, device=device, options=nn.LinearCrossEntropyOptions(batch_chunk_size=4)
    )
    check_module(tmod, gmod, [rand(10, 4), torch.randint(0, 9, (10,))], device)


def test_module_argument_errors_match_torch():
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(6,\), got \(5,\)"):
        nn.LinearCrossEntropyLoss(4, 6, weight=genesis.ones(5))
    with pytest.raises(RuntimeError, match=r"expected label_smoothing to be in range \[0, 1\], got 1.5"):
        nn.LinearCrossEntropyLoss(4, 6, label_smoothing=1.5)
