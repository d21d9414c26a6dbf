"""Optimizers: trajectories against torch.optim over several steps; GradScaler skipping inf steps."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, copy_weights, g

import genesis
import genesis.nn as nn
from genesis.amp import GradScaler

OPTIMIZERS = [
    ("sgd", "SGD", dict(lr=0.1)),
    ("sgd-momentum", "SGD", dict(lr=0.05, momentum=0.9)),
    ("sgd-dampening", "SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("sgd-nesterov", "SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("sgd-weight-decay", "SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1)),
    ("sgd-maximize", "SGD", dict(lr=0.05, maximize=True)),
    ("adam", "Adam", dict(lr=0.01)),
    ("adam-betas-decay", "Adam", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1)),
    ("adam-amsgrad", "Adam", dict(lr=0.02, amsgrad=True)),
    ("adamw", "AdamW", dict(lr=0.01)),
    ("adamw-decay", "AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6)),
]


def _models(device):
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double()
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)).to(device).double()
    copy_weights(tmodel, model)
    return tmodel, model


@pytest.mark.parametrize("name,kwargs", [pytest.param(n, k, id=i) for i, n, k in OPTIMIZERS])
def test_optimizer_trajectory_matches_torch(device, name, kwargs):
    tmodel, model = _models(device)
    topt = getattr(torch.optim, name)(tmodel.parameters(), **kwargs)
    opt = getattr(genesis.optim, name)(model.parameters(), **kwargs)
    for _ in range(6):
        x, y = torch.randn(8, 4, dtype=torch.float64), torch.randn(8, 2, dtype=torch.float64)
        topt.zero_grad()
        torch.nn.functional.mse_loss(tmodel(x), y).backward()
        topt.step()
        opt.zero_grad()
        nn.functional.mse_loss(model(g(x, device)), g(y, device)).backward()
        opt.step()
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            assert_close(p, tp, rtol=1e-9, atol=1e-11)
            assert p.is_leaf and p.requires_grad


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_step_with_closure_matches_torch(device, name):
    # The closure re-evaluates the loss with gradients on, even when step runs under no_grad.
    tmodel, model = _models(device)
    topt = getattr(torch.optim, name)(tmodel.parameters(), lr=0.05)
    opt = getattr(genesis.optim, name)(model.parameters(), lr=0.05)
    x, y = torch.randn(8, 4, dtype=torch.float64), torch.randn(8, 2, dtype=torch.float64)

    def t_closure():
        topt.zero_grad()
        loss = torch.nn.functional.mse_loss(tmodel(x), y)
        loss.backward()
        return loss

    def g_closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(g(x, device)), g(y, device))
        loss.backward()
        return loss

    for _ in range(3):
        t_loss = topt.step(t_closure)
        with genesis.no_grad():
            g_loss = opt.step(g_closure)
        assert_close(g_loss, t_loss, rtol=1e-12, atol=1e-12)
    for p, tp in zip(model.parameters(), tmodel.parameters()):
        assert_close(p, tp, rtol=1e-9, atol=1e-11)
    assert opt.step() is None


def test_optimizer_param_groups_and_skipped_params(device):
    _, model = _models(device)
    first, second = list(model.parameters())[:2], list(model.parameters())[2:]
    opt = genesis.optim.SGD([{"params": first, "lr": 0.5}, {"params": second}], lr=0.1, momentum=0.9)
    assert [gr["lr"] for gr in opt.param_groups] == [0.5, 0.1]
    assert opt.param_groups[1]["momentum"] == 0.9
    frozen = [p.detach().cpu().numpy().copy() for p in model.parameters()]
    model[0].weight.grad = genesis.ones(6, 4, dtype=genesis.float64, device=device)
    opt.step()  # only the one parameter with a gradient moves
    moved = [not (p.detach().cpu().numpy() == f).all() for p, f in zip(model.parameters(), frozen)]
    assert moved == [True, False, False, False]
    assert (model[0].weight.detach().cpu().numpy() == frozen[0] - 0.5).all()


def test_optimizer_refuses_bad_arguments():
    p = nn.Parameter(genesis.randn(3))
    with pytest.raises(ValueError, match="learning rate"):
        genesis.optim.SGD([p], lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        genesis.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta"):
        genesis.optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty"):
        genesis.optim.Adam([])
    with pytest.raises(ValueError, match="non-leaf"):
        genesis.optim.SGD([p * 2], lr=0.1)


def test_grad_scaler_skips_a_step_with_inf_gradients(device):
    _, model = _models(device)
    opt = genesis.optim.SGD(model.parameters(), lr=0.1)
    scaler = GradScaler(init_scale=1024.0, growth_interval=2)
    before = [p.detach().cpu().numpy().copy() for p in model.parameters()]
    out = model(genesis.randn(3, 4, dtype=genesis.float64, device=device))
    scaler.scale(out.sum()).backward()
    with genesis.no_grad():
        model[2].bias.grad.fill_(float("inf"))
    assert scaler.step(opt) is None
    scaler.update()
    assert scaler.get_scale() == 512.0
    for p, b in zip(model.parameters(), before):
        assert (p.detach().cpu().numpy() == b).all()


def test_grad_scaler_unscales_and_steps_with_finite_gradients(device):
    tmodel, model = _models(device)
    opt = genesis.optim.SGD(model.parameters(), lr=0.1)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    scaler = GradScaler(init_scale=256.0, growth_interval=2)
    for _ in range(2):
        x = torch.randn(3, 4, dtype=torch.float64)
        opt.zero_grad()
        scaler.scale(model(g(x, device)).sum()).backward()
        scaler.unscale_(opt)
        topt.zero_grad()
        tmodel(x).sum().backward()
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            assert_close(p.grad, tp.grad)  # unscaled back to the true gradient
        scaler.step(opt)  # unscale_ already ran: not applied twice
        scaler.update()
        topt.step()
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            assert_close(p, tp)
    assert scaler.get_scale() == 512.0  # grown after growth_interval good steps
