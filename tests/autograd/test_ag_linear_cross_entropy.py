"""genesis_autograd.linear_cross_entropy (functions/linear_cross_entropy.py): chunked cross-entropy of a linear
layer's output, against torch's linear + cross_entropy in float64 (values, the three gradients, gradcheck and
gradgradcheck through the recorded backward), every reduction (the early gradients of "mean" / "sum", the
recomputing backward of "none"), and bf16 under autocast against float64 on the same roundings."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import check_forward_and_gradients, check_gradcheck, check_gradgradcheck, params, to_genesis

import genesis
import genesis_autograd as ga

C, D = 7, 5


def _case(name, rows, reduction, chunk, ignore=None, eps=0.0, weighted=False, bias=True):
    target = torch.randint(0, C, (rows,))
    if ignore is not None:
        target[::3] = ignore
    weight = torch.rand(C, dtype=torch.float64) + 0.5 if weighted else None
    ii = -100 if ignore is None else ignore

    def fn(lib, x, w, *b):
        bias_ = b[0] if b else None
        if lib is torch:
            logits = torch.nn.functional.linear(x, w, bias_)
            return torch.nn.functional.cross_entropy(
                logits, target, weight, ignore_index=ii, reduction=reduction, label_smoothing=eps
            )
        t = genesis.tensor(target.numpy(), device=x.device)
        cw = None if weight is None else genesis.tensor(weight.numpy(), device=x.device)
        return ga.linear_cross_entropy(x, w, t, bias_, cw, ii, eps, reduction, chunk)

    specs = [((rows, D), True, "any", "c"), ((C, D), True, "any", "c")] + ([((C,), True, "any", "c")] if bias else [])
    return (name, fn, specs)


CASES = [
    _case("mean", 9, "mean", 4),
    _case("sum-ignore-nobias", 8, "sum", 3, ignore=2, bias=False),
    _case("none", 7, "none", 2),
    _case("mean-weight-ignore-smoothing", 10, "mean", 4, ignore=1, eps=0.2, weighted=True),
    _case("none-weight-smoothing-one-chunk", 6, "none", 64, eps=0.1, weighted=True),
]
PARAMS = params(CASES)


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


def _rel(actual: genesis.Tensor, expected: torch.Tensor) -> float:
    got = torch.from_numpy(actual.detach().to(genesis.float64).cpu().numpy())
    return ((got - expected).norm() / expected.norm()).item()


def _straight_through_bf16(v: torch.Tensor) -> torch.Tensor:
    """``v`` rounded to bf16 in the forward, its gradient passed through unrounded."""
    return v + (v.to(torch.bfloat16).double() - v).detach()


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_bfloat16_autocast_no_less_accurate_than_torchs_composition(device, reduction):
    """Under bf16 autocast the op casts its float32 input and weight itself, computes bf16 logits (as autocast's
    linear), the loss in float32 and the logits' gradient rounded to bf16, and gives float32 gradients for the
    float32 leaves. Against float64 on the same forward roundings with unrounded gradients: the loss within float32
    sums (or, where those sums round a logit the other way, by at most that logit's bf16 ulp), and each gradient
    no further off than torch's autocast composition (linear, then cross_entropy, each
    gradient rounded to bf16 on its way back) is, with a margin for the logits' gradient being rounded at another
    scale (before the upstream gradient multiplies it)."""
    n, d, c = 300, 48, 130
    x, w, b = torch.randn(n, d), torch.randn(c, d) / d**0.5, torch.randn(c)
    target = torch.randint(0, c, (n,))
    target[::7] = -100
    upstream = torch.rand(() if reduction == "mean" else (n,), dtype=torch.float64) + 0.5

    def reference(rounded_backward: bool) -> tuple:
        leaves = [v.double().requires_grad_() for v in (x, w, b)]
        xl, wl, bl = leaves
        if rounded_backward:  # torch's autocast: casts whose backward rounds to bf16 too
            logits = (xl.to(torch.bfloat16).double() @ wl.to(torch.bfloat16).double().T + bl).to(torch.bfloat16)
        else:
            st = _straight_through_bf16
            logits = st(st(xl) @ st(wl).T + bl)
        loss = torch.nn.functional.cross_entropy(logits.double(), target, reduction=reduction)
        loss.backward(upstream)
        return loss.detach(), *(v.grad for v in leaves), logits.detach().abs().amax(1)

    exact, torch_like = reference(False), reference(True)
    gx, gw, gb = (to_genesis(v, device, requires_grad=True) for v in (x, w, b))
    gt = genesis.tensor(target.numpy(), device=device)
    with genesis.autocast(device, dtype=genesis.bfloat16):
        got = ga.linear_cross_entropy(gx, gw, gt, gb, reduction=reduction, chunk=128)
    assert got.dtype == genesis.float32
    got.backward(to_genesis(upstream.float(), device))
    kept = target != -100
    ulps = exact[4].double() * 2**-8 * kept  # one bf16 ulp of each row's largest logit
    bound = ulps if reduction == "none" else ulps.sum() / kept.sum()
    loss = torch.from_numpy(got.detach().to(genesis.float64).cpu().numpy())
    assert ((loss - exact[0]).abs() <= bound + 1e-6 * exact[0].abs()).all()
    for leaf, want, theirs in zip((gx, gw, gb), exact[1:4], torch_like[1:4], strict=True):
        assert leaf.grad.dtype == genesis.float32
        torch_error = ((theirs - want).norm() / want.norm()).item()
        assert _rel(leaf.grad, want) < 2 * torch_error, (_rel(leaf.grad, want), torch_error)


def test_second_backward_after_release_raises_and_retain_graph_allows_it(device):
    x = genesis.randn(6, 3, device=device, requires_grad=True)
    w = genesis.randn(5, 3, device=device, requires_grad=True)
    t = genesis.tensor([0, 1, 2, 3, 4, 0], device=device)
    loss = ga.linear_cross_entropy(x, w, t, chunk=4)
    loss.backward(retain_graph=True)
    first = x.grad.clone()
    loss.backward()  # the early gradients were kept with the graph, scaled again by the new upstream gradient
    assert genesis.allclose(x.grad, first * 2)
    with pytest.raises(RuntimeError):
        loss.backward()  # released by the last backward


def test_bad_arguments_raise_torchs_errors(device):
    x = genesis.randn(4, 3, device=device)
    w = genesis.randn(5, 3, device=device)
    with pytest.raises(IndexError, match="out of bounds"):
        ga.linear_cross_entropy(x, w, genesis.tensor([0, 1, 5, 2], device=device))
    with pytest.raises(RuntimeError, match=r"expected input \(N, in_features\) and weight \(C, in_features\)"):
        ga.linear_cross_entropy(x, genesis.randn(5, 4, device=device), genesis.tensor([0, 1, 2, 3], device=device))
    with pytest.raises(RuntimeError, match="integer target of shape"):
        ga.linear_cross_entropy(x, w, genesis.randn(4, device=device))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        ga.linear_cross_entropy(x, w, genesis.tensor([0, 1, 2, 3], device=device), reduction="avg")


def test_no_rows_give_zero_gradients(device):
    x = genesis.randn(0, 3, device=device, requires_grad=True)
    w = genesis.randn(5, 3, device=device, requires_grad=True)
    b = genesis.randn(5, device=device, requires_grad=True)
    loss = ga.linear_cross_entropy(x, w, genesis.zeros(0, dtype=genesis.int64, device=device), b, reduction="sum")
    loss.backward()
    assert float(loss) == 0.0
    assert x.grad.shape == (0, 3)
    assert not w.grad.abs().sum().item() and not b.grad.abs().sum().item()
