"""Loss modules and functions against torch in float64 (values and gradients, every reduction), and
torch's errors for bad shapes and targets."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def classes(n, *shape, ignore=None):
    t = torch.randint(0, n, shape)
    if ignore is not None:
        t.view(-1)[::3] = ignore
        if t.numel() > 1:  # one kept target at least, so a mean over the kept ones is defined
            t.view(-1)[1] = (ignore + 1) % n
    return t


def probs(*shape):
    return torch.rand(*shape, dtype=torch.float64).softmax(1)


def _check_loss(name: str, kwargs: dict, inputs: list, device, buffers: dict | None = None):
    """The module form with kwargs (tensor kwargs given as torch tensors), against torch's."""
    buffers = buffers or {}
    tmod = getattr(torch.nn, name)(**kwargs, **buffers)
    gmod = getattr(nn, name)(**kwargs, **{k: g(v, device) for k, v in buffers.items()})
    assert repr(gmod) == repr(tmod)
    check_forward_backward(tmod, gmod, inputs, device)


# (id, module name, kwargs, buffer kwargs (tensors), inputs())
CE = [
    ("indices", {}, {}, lambda: [rand(6, 4), classes(4, 6)]),
    ("ignore-index", dict(ignore_index=1), {}, lambda: [rand(6, 4), classes(4, 6, ignore=1)]),
    ("ignore-default", {}, {}, lambda: [rand(6, 4), classes(4, 6, ignore=-100)]),
    ("smoothing", dict(label_smoothing=0.2), {}, lambda: [rand(6, 4), classes(4, 6)]),
    ("weight", {}, dict(weight=torch.rand(4, dtype=torch.float64) + 0.5), lambda: [rand(6, 4), classes(4, 6)]),
    (
        "weight-ignore-smoothing",
        dict(ignore_index=2, label_smoothing=0.3),
        dict(weight=torch.rand(4, dtype=torch.float64) + 0.5),
        lambda: [rand(7, 4), classes(4, 7, ignore=2)],
    ),
    ("spatial", {}, {}, lambda: [rand(2, 4, 3, 5), classes(4, 2, 3, 5)]),
    (
        "spatial-weight-smoothing-ignore",
        dict(label_smoothing=0.1, ignore_index=0),
        dict(weight=torch.rand(3, dtype=torch.float64)),
        lambda: [rand(2, 3, 5), classes(3, 2, 5, ignore=0)],
    ),
    ("unbatched", {}, {}, lambda: [rand(5), torch.tensor(3)]),
    ("probabilities", {}, {}, lambda: [rand(6, 4), probs(6, 4)]),
    (
        "probabilities-weight-smoothing",
        dict(label_smoothing=0.25),
        dict(weight=torch.rand(4, dtype=torch.float64)),
        lambda: [rand(6, 4), probs(6, 4)],
    ),
    ("probabilities-spatial", {}, {}, lambda: [rand(2, 4, 3), probs(2, 4, 3)]),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs,buffers,inputs", [pytest.param(k, b, i, id=n) for n, k, b, i in CE])
def test_cross_entropy_matches_torch(device, reduction, kwargs, buffers, inputs):
    _check_loss("CrossEntropyLoss", dict(kwargs, reduction=reduction), inputs(), device, buffers)


NLL = [
    ("plain", {}, {}, lambda: [rand(5, 3).log_softmax(1), classes(3, 5)]),
    ("ignore", dict(ignore_index=0), {}, lambda: [rand(5, 3).log_softmax(1), classes(3, 5, ignore=0)]),
    ("weight", {}, dict(weight=torch.rand(3, dtype=torch.float64)), lambda: [rand(5, 3), classes(3, 5)]),
    (
        "spatial-weight-ignore",
        dict(ignore_index=1),
        dict(weight=torch.rand(3, dtype=torch.float64)),
        lambda: [rand(2, 3, 4, 2), classes(3, 2, 4, 2, ignore=1)],
    ),
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs,buffers,inputs", [pytest.param(k, b, i, id=n) for n, k, b, i in NLL])
def test_nll_loss_matches_torch(device, reduction, kwargs, buffers, inputs):
    _check_loss("NLLLoss", dict(kwargs, reduction=reduction), inputs(), device, buffers)


def _bce_inputs():
    return [torch.rand(4, 3, dtype=torch.float64) * 0.98 + 0.01, torch.rand(4, 3, dtype=torch.float64)]


POINTWISE = [
    ("MSELoss", {}, {}, lambda: [rand(4, 3), rand(4, 3)]),
    ("L1Loss", {}, {}, lambda: [rand(4, 3, 2), rand(4, 3, 2)]),
    ("SmoothL1Loss", {}, {}, lambda: [rand(6, 5), rand(6, 5)]),
    ("SmoothL1Loss", dict(beta=0.3), {}, lambda: [rand(6, 5), rand(6, 5)]),
    ("SmoothL1Loss", dict(beta=0.0), {}, lambda: [rand(6, 5), rand(6, 5)]),
    ("HuberLoss", {}, {}, lambda: [rand(6, 5) * 2, rand(6, 5)]),
    ("HuberLoss", dict(delta=0.4), {}, lambda: [rand(6, 5), rand(6, 5)]),
    ("BCELoss", {}, {}, _bce_inputs),
    ("BCELoss", {}, dict(weight=torch.rand(3, dtype=torch.float64)), _bce_inputs),
    ("BCEWithLogitsLoss", {}, {}, lambda: [rand(4, 3) * 3, torch.rand(4, 3, dtype=torch.float64)]),
    (
        "BCEWithLogitsLoss",
        {},
        dict(pos_weight=torch.rand(3, dtype=torch.float64) * 3, weight=torch.rand(4, 1, dtype=torch.float64)),
        lambda: [rand(4, 3) * 3, torch.rand(4, 3, dtype=torch.float64)],
    ),
    ("KLDivLoss", {}, {}, lambda: [rand(4, 5).log_softmax(1), probs(4, 5)]),
    ("KLDivLoss", dict(log_target=True), {}, lambda: [rand(4, 5).log_softmax(1), rand(4, 5).log_softmax(1)]),
]


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")  # torch's KLDivLoss note
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name,kwargs,buffers,inputs", [pytest.param(n, k, b, i, id=f"{n}-{k}-{list(b)}") for n, k, b, i in POINTWISE]
)
def test_pointwise_losses_match_torch(device, reduction, name, kwargs, buffers, inputs):
    _check_loss(name, dict(kwargs, reduction=reduction), inputs(), device, buffers)


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_batchmean_and_zero_targets(device, log_target):
    target = probs(4, 5)
    target[0, 1] = 0.0  # 0 * log 0 counts as 0
    if log_target:
        target = rand(4, 5).log_softmax(1)
    # The target is a constant here: torch's gradient for a zero target is NaN (0/0 in xlogy's backward).
    gtarget = g(target, device)
    check_forward_backward(
        lambda a: torch.nn.functional.kl_div(a, target, reduction="batchmean", log_target=log_target),
        lambda a: F.kl_div(a, gtarget, reduction="batchmean", log_target=log_target),
        [rand(4, 5).log_softmax(1)],
        device,
    )


def test_bce_with_logits_is_stable_for_large_logits(device):
    logits = torch.tensor([[-200.0, -30.0, 0.0, 30.0, 200.0]], dtype=torch.float32)
    target = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0]])
    check_forward_backward(
        lambda a, b: torch.nn.functional.binary_cross_entropy_with_logits(a, b, reduction="none"),
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"),
        [logits, target],
        device,
    )


def test_bce_clamps_its_logs_like_torch(device):
    check_forward_backward(
        lambda a, b: torch.nn.functional.binary_cross_entropy(a, b, reduction="none"),
        lambda a, b: F.binary_cross_entropy(a, b, reduction="none"),
        [torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64), torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)],
        device,
    )


def test_cross_entropy_float32_matches_torch(device):
    logits, target = torch.randn(16, 10), torch.randint(0, 10, (16,))
    check_forward_backward(torch.nn.functional.cross_entropy, F.cross_entropy, [logits, target], device)


def test_legacy_size_average_and_reduce(device):
    a, b = rand(3, 4), rand(3, 4)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        loss = F.mse_loss(g(a, device), g(b, device), size_average=False)
    assert_close(loss, torch.nn.functional.mse_loss(a, b, reduction="sum"))
    with pytest.warns(UserWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"


def test_ignored_everywhere_gives_nan_mean_and_zero_sum(device):
    logits = genesis.randn(3, 4, device=device)
    target = genesis.tensor([-100, -100, -100], device=device)
    assert F.cross_entropy(logits, target).isnan().item()
    assert F.cross_entropy(logits, target, reduction="sum").item() == 0.0


@pytest.mark.parametrize("bad", [4, 7, -1])
def test_target_out_of_range_raises_index_error(device, bad):
    logits, target = genesis.randn(2, 4, device=device), genesis.tensor([0, bad], device=device)
    with pytest.raises(IndexError):
        torch.nn.functional.cross_entropy(torch.randn(2, 4), torch.tensor([0, bad]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(logits, target)
    with pytest.raises(IndexError, match="out of bounds"):
        F.nll_loss(logits, target)


ERRORS = [
    (
        lambda d: F.cross_entropy(genesis.randn(3, 4, device=d), genesis.tensor([0, 1], device=d)),
        ValueError,
        r"Expected input batch_size \(3\) to match target batch_size \(2\)",
    ),
    (
        lambda d: F.cross_entropy(genesis.randn(3, 4, device=d), genesis.tensor([0.0, 1.0, 2.0], device=d)),
        RuntimeError,
        "expected target dtype to be Long or Byte, but got Float",
    ),
    (
        lambda d: F.cross_entropy(genesis.randn(2, 3, 4, device=d), genesis.zeros(2, 3, dtype=genesis.int64, device=d)),
        RuntimeError,
        r"Expected target size \[2, 4\], got \[2, 3\]",
    ),
    (
        lambda d: F.cross_entropy(
            genesis.randn(3, 4, device=d), genesis.tensor([0, 1, 2], device=d), weight=genesis.ones(3, device=d)
        ),
        RuntimeError,
        "weight tensor should be defined either for all 4 classes or no classes",
    ),
    (
        lambda d: F.cross_entropy(
            genesis.randn(3, 4, device=d), genesis.tensor([0, 1, 2], device=d), label_smoothing=1.5
        ),
        RuntimeError,
        "label_smoothing must be between 0.0 and 1.0",
    ),
    (
        lambda d: F.cross_entropy(genesis.randn(3, 4, device=d), genesis.zeros(3, 4, dtype=genesis.int64, device=d)),
        RuntimeError,
        "Expected floating point type for target with class probabilities, got Long",
    ),
    (
        lambda d: F.cross_entropy(genesis.randn(3, 4, device=d), genesis.tensor([0, 1, 2], device=d), reduction="avg"),
        ValueError,
        "avg is not a valid value for reduction",
    ),
    (
        lambda d: F.binary_cross_entropy(genesis.rand(3, 4, device=d), genesis.rand(3, 5, device=d)),
        ValueError,
        "that is different to the input size",
    ),
    (
        lambda d: F.binary_cross_entropy(genesis.randn(3, 4, device=d) + 2, genesis.rand(3, 4, device=d)),
        RuntimeError,
        "all elements of input should be between 0 and 1",
    ),
    (
        lambda d: F.binary_cross_entropy_with_logits(genesis.randn(3, 4, device=d), genesis.rand(3, 5, device=d)),
        ValueError,
        "must be the same as input size",
    ),
    (
        lambda d: F.smooth_l1_loss(genesis.randn(3, device=d), genesis.randn(3, device=d), beta=-1.0),
        RuntimeError,
        "smooth_l1_loss does not support negative values for beta",
    ),
    (
        lambda d: F.huber_loss(genesis.randn(3, device=d), genesis.randn(3, device=d), delta=0.0),
        RuntimeError,
        "huber_loss does not support non-positive values for delta",
    ),
    (
        lambda d: F.kl_div(genesis.randn(3, device=d), genesis.randn(3, device=d), reduction="batch"),
        ValueError,
        "batch is not a valid value for reduction",
    ),
]


@pytest.mark.parametrize("call,error,match", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_loss_errors_match_torch(device, call, error, match):
    with pytest.raises(error, match=match):
        call(device)


def test_mse_loss_warns_on_broadcasting_sizes(device):
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(genesis.randn(3, 4, device=device), genesis.randn(4, device=device))


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_every_target_ignored_gives_nan_and_zero_gradient_as_torch(device, loss):
    x = torch.randn(5, 3, dtype=torch.float64)
    if loss == "nll_loss":
        x = x.log_softmax(1)
    target = torch.zeros(5, dtype=torch.long)
    tx = x.clone().requires_grad_()
    expected = getattr(torch.nn.functional, loss)(tx, target, ignore_index=0)
    expected.backward()
    gx = genesis.tensor(x.numpy(), device=device, requires_grad=True)
    got = getattr(genesis.nn.functional, loss)(gx, genesis.tensor(target.numpy(), device=device), ignore_index=0)
    got.backward()
    assert torch.isnan(expected) and np.isnan(got.item())
    np.testing.assert_array_equal(gx.grad.cpu().numpy(), tx.grad.numpy())
