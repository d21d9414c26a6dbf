"""NDArray multi-tensor optimizer ops on both devices against torch.optim's per-tensor rules (float64)."""

from __future__ import annotations

import pytest
import torch
from torch.optim.adam import adam as torch_adam
from torch.optim.sgd import sgd as torch_sgd

import genesis_ndarray as gn
from genesis_ndarray import optimizer as ndo

SHAPES = [(5, 3), (17,), (1,), (2, 3, 4)]


def _nd(t: torch.Tensor, device: str) -> gn.NDArray:
    return gn.from_numpy(t.numpy().copy(), device=device)


def _torch(a: gn.NDArray) -> torch.Tensor:
    return torch.from_numpy(a.numpy().copy())


@pytest.mark.parametrize("amsgrad,decoupled,maximize", [(False, False, False), (True, True, True)])
def test_multi_tensor_adam_matches_torch(device: str, amsgrad: bool, decoupled: bool, maximize: bool) -> None:
    ref = [torch.randn(s, dtype=torch.float64) for s in SHAPES]
    params = [_nd(t, device) for t in ref]
    m = [gn.zeros(*s, dtype=gn.float64, device=device) for s in SHAPES]
    v = [gn.zeros(*s, dtype=gn.float64, device=device) for s in SHAPES]
    vmax = [gn.zeros(*s, dtype=gn.float64, device=device) for s in SHAPES] if amsgrad else None
    steps = [gn.zeros(dtype=gn.float32, device=device) for _ in SHAPES]
    rm, rv, rvmax = ([torch.zeros_like(t) for t in ref] for _ in range(3))
    rsteps = [torch.tensor(0.0) for _ in ref]
    opts = dict(lr=0.02, weight_decay=0.1, eps=1e-6, maximize=maximize)
    for _ in range(4):
        grads = [torch.randn(s, dtype=torch.float64) for s in SHAPES]
        ndo.multi_tensor_adam_(
            params, [_nd(g, device) for g in grads], m, v, vmax, steps=steps, beta1=0.9, beta2=0.99,
            decoupled=decoupled, **opts,
        )  # fmt: skip
        torch_adam(
            ref, grads, rm, rv, rvmax, rsteps, foreach=False, amsgrad=amsgrad, beta1=0.9, beta2=0.99,
            decoupled_weight_decay=decoupled, **opts,
        )  # fmt: skip
    for got, want in zip(params, ref):
        torch.testing.assert_close(_torch(got), want, rtol=1e-12, atol=1e-14)
    assert all(float(_torch(s)) == 4.0 for s in steps)


def test_multi_tensor_sgd_first_step_and_momentum(device: str) -> None:
    ref = [torch.randn(s, dtype=torch.float64) for s in SHAPES]
    params = [_nd(t, device) for t in ref]
    bufs = [gn.full(s, float("nan"), dtype=gn.float64, device=device) for s in SHAPES]
    rbufs: list = [None] * len(ref)
    for k in range(3):
        grads = [torch.randn(s, dtype=torch.float64) for s in SHAPES]
        ndo.multi_tensor_sgd_(
            params, [_nd(g, device) for g in grads], bufs, first_step=[k == 0] * len(SHAPES), lr=0.1,
            momentum=0.9, dampening=0.1, weight_decay=0.05, nesterov=False,
        )  # fmt: skip
        torch_sgd(
            ref, grads, rbufs, foreach=False, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.05,
            nesterov=False, maximize=False,
        )  # fmt: skip
    for got, want in zip(params + bufs, ref + rbufs):
        torch.testing.assert_close(_torch(got), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 2.5])
def test_multi_tensor_norm_and_clip(device: str, norm_type: float) -> None:
    ts = [torch.randn(s, dtype=torch.float64) for s in SHAPES]
    arrays = [_nd(t, device) for t in ts]
    total = ndo.multi_tensor_norm(arrays, norm_type)
    want = torch.linalg.vector_norm(torch.cat([t.reshape(-1) for t in ts]), norm_type)
    assert total.shape == () and total.dtype == gn.float64
    torch.testing.assert_close(_torch(total), want, rtol=1e-12, atol=0)
    ndo.multi_tensor_clip_(arrays, total, 0.5)
    coef = 0.5 / (float(want) + 1e-6)
    for got, t in zip(arrays, ts):
        torch.testing.assert_close(_torch(got), t * coef, rtol=1e-12, atol=1e-15)


def test_multi_tensor_norm_refuses_what_it_cannot_compute() -> None:
    with pytest.raises(ValueError, match="norm_type"):
        ndo.multi_tensor_norm([gn.ones(3)], 0.0)
    with pytest.raises(RuntimeError, match="floating"):
        ndo.multi_tensor_norm([gn.ones(3, dtype=gn.int64)])
    with pytest.raises(ValueError, match="steps"):
        ndo.multi_tensor_adam_(
            [gn.ones(2)], [gn.ones(2)], [gn.ones(2)], [gn.ones(2)], lr=0.1, beta1=0.9, beta2=0.9, eps=0
        )


def test_advance_counters_adds_one_in_place_and_returns_the_values(device: str) -> None:
    start = torch.randint(0, 1000, (6,)).to(torch.float32)
    counters = [_nd(v.reshape(()), device) for v in start]
    assert ndo.advance_counters_(counters) == (start + 1).tolist()
    assert [c.item() for c in counters] == (start + 1).tolist()
    assert ndo.advance_counters_([]) == []
    with pytest.raises(RuntimeError, match=r"0-d counters, got shape \(2,\)"):
        ndo.advance_counters_([_nd(torch.ones(2), device)])
