"""Tensor-level multi-tensor optimizer steps: in place on leaves that require grad (outside the graph),
version counters bumped so that backward catches a saved tensor the step modified."""

from __future__ import annotations

import pytest
import torch

import genesis_autograd as ga


def _t(x: torch.Tensor, device: str, requires_grad: bool = False) -> ga.Tensor:
    return ga.tensor(x.numpy(), device=device, requires_grad=requires_grad)


def test_adam_step_on_leaves_bumps_versions_and_matches_torch(device: str) -> None:
    tp = [torch.randn(4, 3, dtype=torch.float64, requires_grad=True), torch.randn(7, dtype=torch.float64)]
    params = [_t(p.detach(), device, requires_grad=True) for p in tp]
    grads = [torch.randn_like(p) for p in tp]
    m = [ga.zeros_like(p) for p in params]
    v = [ga.zeros_like(p) for p in params]
    steps = [ga.zeros((), dtype=ga.float32, device=device) for _ in params]
    before = [p._version_counter for p in params]
    ga.multi_tensor_adam_(
        params, [_t(g, device) for g in grads], m, v, steps=steps, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8,
        weight_decay=0.01, decoupled=True,
    )  # fmt: skip
    assert all(p._version_counter == b + 1 for p, b in zip(params, before))
    assert all(p.requires_grad and p.is_leaf and p.grad_fn is None for p in params)
    ref = [p.detach().clone().requires_grad_() for p in tp]
    for r, g in zip(ref, grads):
        r.grad = g
    opt = torch.optim.AdamW(ref, lr=0.01, weight_decay=0.01)
    opt.step()
    for p, r in zip(params, ref):
        torch.testing.assert_close(torch.from_numpy(p.detach().cpu().numpy()), r.detach(), rtol=1e-12, atol=1e-14)


def test_a_step_between_forward_and_backward_is_caught(device: str) -> None:
    w = _t(torch.randn(3, dtype=torch.float64), device, requires_grad=True)
    loss = (w * w).sum()  # saves w
    ga.multi_tensor_sgd_([w], [ga.ones_like(w)], lr=0.1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation|version"):
        loss.backward()


def test_norm_and_clip_of_tensors(device: str) -> None:
    xs = [torch.randn(5, dtype=torch.float64), torch.randn(2, 2, dtype=torch.float64)]
    ts = [_t(x, device) for x in xs]
    total = ga.multi_tensor_norm(ts)
    want = torch.linalg.vector_norm(torch.cat([x.reshape(-1) for x in xs]))
    assert not total.requires_grad and total.device == ts[0].device
    torch.testing.assert_close(torch.tensor(total.item(), dtype=torch.float64), want, rtol=1e-12, atol=0)
    v = ts[0]._version_counter
    ga.multi_tensor_clip_(ts, total, 1.0)
    assert ts[0]._version_counter == v + 1
    scale = min(1.0, 1.0 / (float(want) + 1e-6))
    for t, x in zip(ts, xs):
        torch.testing.assert_close(torch.from_numpy(t.cpu().numpy()), x * scale, rtol=1e-12, atol=1e-15)
