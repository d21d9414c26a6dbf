"""CTCLoss / F.ctc_loss against torch in float64: padded and concatenated targets, unbatched input,
blank, repeated labels, impossible alignments with and without zero_infinity, every reduction; the
gradient of log_probs as a leaf (torch's convention) and through log_softmax; torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_helpers import check_forward_backward, g

import genesis.nn as nn
import genesis.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def log_probs(t, n, c):
    return torch.randn(t, n, c, dtype=torch.float64).log_softmax(-1)


def _padded():
    # Sample 0 repeats a label (needs a blank between), sample 2 has an empty target; entries past a
    # target's length are padding (any value).
    targets = torch.tensor([[1, 2, 2, 3], [3, 1, 0, 0], [2, 2, 2, 2]])
    return targets, [7, 5, 3], [4, 2, 0]


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_padded_targets_match_torch(device, reduction, zero_infinity):
    targets, in_lengths, tg_lengths = _padded()
    kwargs = dict(reduction=reduction, zero_infinity=zero_infinity)
    tmod, gmod = torch.nn.CTCLoss(**kwargs), nn.CTCLoss(**kwargs)
    assert repr(gmod) == repr(tmod)
    gt = g(targets, device)
    check_forward_backward(
        lambda lp: tmod(lp, targets, torch.tensor(in_lengths), torch.tensor(tg_lengths)),
        lambda lp: gmod(lp, gt, g(torch.tensor(in_lengths), device), g(torch.tensor(tg_lengths), device)),
        [log_probs(7, 3, 4)],
        device,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_concatenated_targets_and_blank_match_torch(device, reduction):
    targets, in_lengths, tg_lengths = torch.tensor([0, 1, 1, 3, 0, 3]), [6, 6], [4, 2]
    gt = g(targets, device)
    check_forward_backward(
        lambda lp: torch.nn.functional.ctc_loss(lp, targets, in_lengths, tg_lengths, blank=2, reduction=reduction),
        lambda lp: F.ctc_loss(lp, gt, in_lengths, tg_lengths, blank=2, reduction=reduction),
        [log_probs(6, 2, 4)],
        device,
    )


def test_gradient_through_log_softmax_matches_torch(device):
    targets, in_lengths, tg_lengths = _padded()
    gt = g(targets, device)
    check_forward_backward(
        lambda x: torch.nn.functional.ctc_loss(x.log_softmax(2), targets, in_lengths, tg_lengths),
        lambda x: F.ctc_loss(x.log_softmax(2), gt, in_lengths, tg_lengths),
        [torch.randn(7, 3, 4, dtype=torch.float64)],
        device,
    )


def test_unbatched_matches_torch(device):
    targets = torch.tensor([1, 3, 1])
    gt = g(targets, device)
    check_forward_backward(
        lambda lp: torch.nn.functional.ctc_loss(lp, targets, torch.tensor(6), torch.tensor(3), reduction="sum"),
        lambda lp: F.ctc_loss(lp, gt, g(torch.tensor(6), device), g(torch.tensor(3), device), reduction="sum"),
        [log_probs(6, 1, 4)[:, 0]],
        device,
    )


def test_impossible_alignment_is_inf_or_zero(device):
    lp = log_probs(3, 2, 4)
    targets, in_lengths, tg_lengths = torch.tensor([[1, 1, 2], [1, 2, 3]]), [3, 3], [3, 3]  # 1,1,2 needs 4 frames
    for zero_infinity in (False, True):
        tx = lp.clone().requires_grad_()
        expected = torch.nn.functional.ctc_loss(
            tx, targets, in_lengths, tg_lengths, reduction="none", zero_infinity=zero_infinity
        )
        expected.sum().backward()
        gx = g(lp, device, requires_grad=True)
        got = F.ctc_loss(gx, g(targets, device), in_lengths, tg_lengths, reduction="none", zero_infinity=zero_infinity)
        got.sum().backward()
        np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-7)
        np.testing.assert_allclose(gx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-9)  # nan where torch's


ERRORS = [
    (lambda: ([7, 5, 3], [4, 2, 0]), "input_lengths", dict(input_lengths=[8, 5, 3]), "at most 7, but got value 8"),
    (lambda: None, "input_lengths", dict(input_lengths=[7, 5]), "input_lengths must be of size batch_size"),
    (lambda: None, "target_lengths", dict(target_lengths=[4, 2]), "target_lengths must be of size batch_size"),
    (lambda: None, "target_lengths", dict(target_lengths=[5, 2, 0]), "size at least 5 at dimension 1, but got size 4"),
    (lambda: None, "blank", dict(blank=4), "blank must be in label range"),
]


@pytest.mark.parametrize("_,__,change,match", ERRORS, ids=[e[3][:30] for e in ERRORS])
def test_errors_match_torch(device, _, __, change, match):
    targets, in_lengths, tg_lengths = _padded()
    args = dict(input_lengths=in_lengths, target_lengths=tg_lengths, blank=0)
    args.update(change)
    lp = log_probs(7, 3, 4)
    with pytest.raises(RuntimeError):
        torch.nn.functional.ctc_loss(lp, targets, **args)
    with pytest.raises(RuntimeError, match=match):
        F.ctc_loss(g(lp, device), g(targets, device), **args)
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.ctc_loss(g(lp, device), g(targets, device), in_lengths, tg_lengths, reduction="avg")


def test_concatenated_targets_of_wrong_total_raise(device):
    lp = log_probs(5, 2, 4)
    with pytest.raises(RuntimeError, match="Expected tensor to have size 6 at dimension 0, but got size 5"):
        F.ctc_loss(g(lp, device), g(torch.tensor([1, 2, 3, 1, 1]), device), [5, 5], [3, 3])
