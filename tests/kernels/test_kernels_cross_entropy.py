"""Fused cross-entropy kernels against torch's cross_entropy in float64: per-row loss, lse and the
logits' gradient, with ignore_index, label smoothing, class weights, odd shapes and strides."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import TORCH_DTYPES, buf, make, sync

import genesis_kernels as gk

REL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 1e-2, "float16": 1e-2}


def rel_err(actual: torch.Tensor, expected: torch.Tensor) -> float:
    a, e = actual.double().cpu(), expected.double().cpu()
    return float((a - e).norm() / e.norm().clamp_min(1e-30))


def targets(rows_shape: tuple[int, ...], n: int, device: str, ignore: int | None) -> torch.Tensor:
    t = torch.randint(0, n, rows_shape)
    if ignore is not None and t.numel():
        # every third target from the second on: a single row keeps its target, so the mean is defined
        t.view(-1)[1::3] = ignore
    return t.to(device)


def run(x, t, w, *, ignore_index=-100, eps=0.0, grad=None, mean=False, dx=None):
    """Launch forward then backward; return (loss, lse, row_weight, dx). Outputs start as NaN."""
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    rows = x.shape[:-1]
    loss, lse, wrow = (torch.full(rows, float("nan"), dtype=acc, device=x.device) for _ in range(3))
    wsum = w.sum().reshape(1) if w is not None else None
    bw = None if w is None else buf(w)
    bs = None if wsum is None else buf(wsum)
    tc = t.contiguous()
    gk.cross_entropy(
        buf(x), buf(tc), bw, bs, buf(loss), buf(lse), buf(wrow), ignore_index=ignore_index, label_smoothing=eps
    )
    if grad is None:
        grad = torch.randn(rows, dtype=acc, device=x.device) if rows else torch.ones((), dtype=acc)
    total = wrow.sum().reshape(1) if mean else None
    if dx is None:
        dx = torch.full_like(x, float("nan"))
    gk.cross_entropy_backward(
        buf(x),
        buf(tc),
        bw,
        bs,
        buf(lse),
        buf(grad.to(x.device)),
        None if total is None else buf(total),
        buf(dx),
        ignore_index=ignore_index,
        label_smoothing=eps,
    )
    sync(str(x.device.type))
    return loss, lse, wrow, dx, grad, total


def reference(x, t, w, ignore_index, eps, grad, reduction):
    """torch in float64: loss (per row or reduced) and the logits' gradient."""
    xx = x.double().cpu().movedim(-1, 1).requires_grad_() if x.ndim > 1 else x.double().cpu().requires_grad_()
    ww = None if w is None else w.double().cpu()
    out = torch.nn.functional.cross_entropy(
        xx, t.cpu(), ww, ignore_index=ignore_index, reduction=reduction, label_smoothing=eps
    )
    out.backward(grad.double().cpu())
    return out.detach(), (xx.grad.movedim(1, -1) if x.ndim > 1 else xx.grad)


CASES = [
    # (rows shape, classes, weighted, ignore, smoothing)
    ((1,), 1, False, None, 0.0),
    ((7,), 13, False, None, 0.0),
    ((5,), 37, True, 2, 0.0),
    ((9,), 11, False, 0, 0.25),
    ((6,), 129, True, 1, 0.1),
    ((2, 3), 5, True, None, 0.3),
    ((3,), 5000, False, 4, 0.2),
    ((2,), 9000, True, None, 0.05),
]


@pytest.mark.parametrize("rows,n,weighted,ignore,eps", CASES)
def test_cross_entropy_forward_backward_none(device, rows, n, weighted, ignore, eps) -> None:
    x = make((*rows, n), "float32", device)
    t = targets(rows, n, device, ignore)
    w = (torch.rand(n, device=device) + 0.5) if weighted else None
    ii = -100 if ignore is None else ignore
    loss, lse, wrow, dx, grad, _ = run(x, t, w, ignore_index=ii, eps=eps)
    ref, ref_dx = reference(x, t, w, ii, eps, grad, "none")
    assert rel_err(loss, ref) < 1e-5
    assert rel_err(dx, ref_dx) < 1e-5
    assert rel_err(lse, torch.logsumexp(x.double(), -1)) < 1e-6
    kept = t != ii
    expected_w = (w[t.clamp(0, n - 1)] if w is not None else torch.ones_like(x[..., 0])) * kept
    torch.testing.assert_close(wrow, expected_w.float())


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("weighted,eps", [(False, 0.0), (True, 0.2)])
def test_cross_entropy_reduced_gradient(device, reduction, weighted, eps) -> None:
    n = 23
    x = make((17, n), "float32", device)
    t = targets((17,), n, device, ignore=3)
    w = (torch.rand(n, device=device) + 0.5) if weighted else None
    g = torch.tensor([0.7], device=device)
    loss, _, _wrow, dx, _, total = run(x, t, w, ignore_index=3, eps=eps, grad=g, mean=reduction == "mean")
    ref, ref_dx = reference(x, t, w, 3, eps, g[0], reduction)
    value = loss.sum() / total[0] if reduction == "mean" else loss.sum()
    assert rel_err(value.reshape(()), ref) < 1e-5
    assert rel_err(dx, ref_dx) < 1e-5


def test_all_ignored_mean_has_zero_gradient(device) -> None:
    x = make((4, 6), "float32", device)
    t = torch.full((4,), -100, device=device)
    loss, _, _wrow, dx, _, total = run(x, t, None, grad=torch.ones(1, device=device), mean=True)
    assert float(total) == 0.0 and torch.isnan(loss.sum() / total[0])
    assert bool((dx == 0).all())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_cross_entropy_low_precision_and_float64(device, dtype) -> None:
    n = 300
    x = make((6, n), dtype, device)
    t = targets((6,), n, device, ignore=None)
    w = torch.rand(n, device=device, dtype=TORCH_DTYPES[dtype]) + 0.5
    loss, _, _, dx, grad, _ = run(x, t, w, eps=0.1)
    assert loss.dtype == (torch.float64 if dtype == "float64" else torch.float32)
    assert dx.dtype == x.dtype
    ref, ref_dx = reference(x, t, w, -100, 0.1, grad, "none")
    assert rel_err(loss, ref) < REL[dtype]
    assert rel_err(dx, ref_dx) < REL[dtype]


def test_cross_entropy_strided_logits_and_gradient(device) -> None:
    # (N, C, d) as torch lays it out, seen classes-last through a permuted view; a sliced gradient.
    base = make((3, 7, 4), "float32", device)
    x = base.permute(0, 2, 1)  # (3, 4, 7): class stride 4, rows non-collapsible
    t = targets((3, 4), 7, device, ignore=0)
    holder = torch.full((3, 4, 14), float("nan"), device=device)
    dx = holder[..., ::2]
    loss, _, _, dx, grad, _ = run(x, t, None, ignore_index=0, eps=0.15, dx=dx)
    ref, ref_dx = reference(x, t, None, 0, 0.15, grad, "none")
    assert rel_err(loss, ref) < 1e-5
    assert rel_err(dx, ref_dx) < 1e-5
    assert bool(holder[..., 1::2].isnan().all())  # nothing written between the gradient's elements


def test_cross_entropy_gradient_in_place_of_logits(device) -> None:
    x = make((5, 33), "bfloat16", device)
    keep = x.clone()
    t = targets((5,), 33, device, ignore=None)
    _loss, _, _, dx, grad, _ = run(x, t, None, dx=x)  # dx is x: the gradient overwrites the logits
    _ref, ref_dx = reference(keep, t, None, -100, 0.0, grad, "none")
    assert dx.data_ptr() == x.data_ptr()
    assert rel_err(dx, ref_dx) < 1e-2


def test_cross_entropy_empty_rows(device) -> None:
    x = torch.empty((0, 5), device=device)
    loss, _lse, _wrow, dx, _, _ = run(
        x, torch.empty(0, dtype=torch.int64, device=device), None, grad=torch.empty(0, device=device)
    )
    assert loss.numel() == 0 and dx.numel() == 0


@pytest.mark.parametrize("bad", [7, -1, 100])
def test_cross_entropy_out_of_range_target_raises(device, bad) -> None:
    x = make((3, 7), "float32", device)
    t = torch.tensor([0, bad, 2], device=device)
    loss, lse, wrow = (torch.empty(3, device=device) for _ in range(3))
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
        gk.cross_entropy(buf(x), buf(t), None, None, buf(loss), buf(lse), buf(wrow))
    good = torch.tensor([0, 1, 2], device=device)  # the block was cleared: the next launch starts clean
    gk.cross_entropy(buf(x), buf(good), None, None, buf(loss), buf(lse), buf(wrow))


def test_cross_entropy_bad_buffers_raise(device) -> None:
    x = make((3, 7), "float32", device)
    t = torch.tensor([0, 1, 2], device=device)
    small = torch.empty(2, device=device)
    with pytest.raises(ValueError, match="loss must be contiguous with 3 elements"):
        gk.cross_entropy(buf(x), buf(t), None, None, buf(small), buf(small), buf(small))
    with pytest.raises(ValueError, match=r"weight must be contiguous of shape \(7,\)"):
        w = torch.ones(6, device=device)
        three = torch.empty(3, device=device)
        gk.cross_entropy(buf(x), buf(t), buf(w), None, buf(three), buf(three), buf(three))


@pytest.mark.gpu_tier
@pytest.mark.parametrize("rows,n", [(4099, 50304), (1, 131071), (33, 32000)])
def test_cross_entropy_large_vocab_bfloat16(device, rows, n) -> None:
    x = make((rows, n), "bfloat16", device, low=-8, high=8)
    t = targets((rows,), n, device, ignore=-100)
    loss, _, _, dx, _grad, total = run(x, t, None, eps=0.1, grad=torch.ones(1, device=device), mean=True)
    ref, ref_dx = reference(x, t, None, -100, 0.1, torch.tensor(1.0), "mean")
    assert rel_err((loss.sum() / total[0]).reshape(()), ref) < 1e-5  # fp32 accumulation of bf16 inputs
    assert rel_err(dx, ref_dx) < 1e-2
