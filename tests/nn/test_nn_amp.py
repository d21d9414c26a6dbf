"""genesis.amp: GradScaler against torch's, step by step; autocast through nn layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.amp import GradScaler

SCHEDULE = ["ok", "ok", "inf", "ok", "nan", "ok", "ok", "ok", "ok", "ok"]


def test_grad_scaler_matches_torchs(device: str) -> None:
    rng = np.random.default_rng(0)
    start = rng.standard_normal(6).astype(np.float32)
    ours, theirs = genesis.tensor(start, device=device, requires_grad=True), torch.tensor(start, requires_grad=True)
    opt, topt = genesis.optim.SGD([ours], lr=0.1), torch.optim.SGD([theirs], lr=0.1)
    scaler = GradScaler(device, init_scale=2.0**4, growth_interval=3)
    tscaler = torch.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=3)
    tscaler.scale(torch.ones(()))  # torch creates its scale tensor lazily, on the first scale()
    for kind in SCHEDULE:
        grad = rng.standard_normal(6).astype(np.float32)
        if kind != "ok":
            grad[2] = np.inf if kind == "inf" else np.nan
        # what backward of a scaled loss would leave: the gradient times the current scale
        ours.grad = genesis.tensor(grad * scaler.get_scale(), device=device)
        theirs.grad = torch.tensor(grad * tscaler.get_scale())
        scaler.step(opt)
        tscaler.step(topt)
        scaler.update()
        tscaler.update()
        assert scaler.get_scale() == tscaler.get_scale(), kind
        np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-7)
    state = scaler.state_dict()
    assert state == {k: v for k, v in tscaler.state_dict().items()}
    fresh = GradScaler(device)
    fresh.load_state_dict(state)
    assert fresh.get_scale() == scaler.get_scale()


def test_one_host_read_per_step(device: str, monkeypatch) -> None:
    params = [genesis.randn(4, 4, device=device, requires_grad=True) for _ in range(5)]
    for p in params:
        p.grad = genesis.randn(4, 4, device=device)
    opt = genesis.optim.Adam(params)
    opt.step = lambda: None  # count the scaler's reads only
    scaler = GradScaler(device)
    reads = []
    original = genesis.Tensor.item
    monkeypatch.setattr(genesis.Tensor, "item", lambda self: reads.append(1) or original(self))
    scaler.unscale_(opt)
    assert reads == []  # unscaling and the overflow check stay on the device
    scaler.step(opt)
    assert len(reads) == 1
    scaler.update()


def test_misuse_raises_like_torch(device: str) -> None:
    p = genesis.randn(3, device=device, requires_grad=True)
    p.grad = genesis.ones(3, device=device)
    opt = genesis.optim.SGD([p], lr=0.1)
    scaler = GradScaler(device)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    with pytest.raises(ValueError):
        GradScaler(device, growth_factor=0.5)
    disabled = GradScaler(device, enabled=False)
    loss = genesis.ones((), device=device)
    assert disabled.scale(loss) is loss and disabled.get_scale() == 1.0


def test_autocast_through_layers(device: str) -> None:
    genesis.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    model.to(device)
    x = genesis.randn(5, 8, device=device)
    target = genesis.tensor([0, 1, 2, 3, 0], device=device)
    with genesis.autocast(device, dtype=genesis.bfloat16):
        hidden = model[0](x)
        normed = model[2](model[1](hidden))
        logits = model[3](normed)
        loss = F.cross_entropy(logits, target)
    assert (hidden.dtype, normed.dtype, logits.dtype, loss.dtype) == (
        genesis.bfloat16,
        genesis.float32,
        genesis.bfloat16,
        genesis.float32,
    )
    loss.backward()
    assert all(p.grad.dtype == genesis.float32 for p in model.parameters())
    reference = F.cross_entropy(model(x), target)  # float32 throughout: bf16 noise only
    assert abs(loss.item() - reference.item()) < 0.05 * abs(reference.item())


def test_binary_cross_entropy_refuses_autocast_as_torch(device: str) -> None:
    p = genesis.rand(4, device=device)
    with genesis.autocast(device, dtype=genesis.bfloat16), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, genesis.ones(4, device=device))
