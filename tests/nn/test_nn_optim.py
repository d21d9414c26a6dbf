"""Optimizers against torch.optim step for step (every option), param groups, state_dict / resume,
add_param_group's refusals, zero_grad, closures; GradScaler skipping inf steps."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from nn_helpers import assert_close, copy_weights, g

import genesis
import genesis.nn as nn
from genesis.amp import GradScaler

# (id, class name, options): every option of every optimizer, alone and combined
CONFIGS = [
    ("sgd", "SGD", dict(lr=0.1)),
    ("sgd-momentum", "SGD", dict(lr=0.05, momentum=0.9)),
    ("sgd-dampening", "SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("sgd-nesterov", "SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("sgd-weight-decay", "SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1)),
    ("sgd-maximize", "SGD", dict(lr=0.05, momentum=0.3, maximize=True)),
    ("adam", "Adam", dict(lr=0.01)),
    ("adam-betas-decay", "Adam", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1)),
    ("adam-amsgrad", "Adam", dict(lr=0.02, amsgrad=True)),
    ("adam-maximize-eps", "Adam", dict(lr=0.02, maximize=True, eps=1e-4)),
    ("adam-decoupled", "Adam", dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True)),
    ("adamw", "AdamW", dict(lr=0.01)),
    ("adamw-decay-amsgrad", "AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6, amsgrad=True)),
    ("adamw-maximize", "AdamW", dict(lr=0.02, maximize=True)),
    ("rmsprop", "RMSprop", dict(lr=0.01)),
    ("rmsprop-alpha-eps", "RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-3)),
    ("rmsprop-centered", "RMSprop", dict(lr=0.01, centered=True)),
    ("rmsprop-momentum-decay", "RMSprop", dict(lr=0.01, momentum=0.7, weight_decay=0.05)),
    ("rmsprop-all", "RMSprop", dict(lr=0.005, centered=True, momentum=0.5, weight_decay=0.1, maximize=True)),
    ("adagrad", "Adagrad", dict(lr=0.1)),
    ("adagrad-lr-decay", "Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("adagrad-init-acc", "Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6)),
    ("adagrad-decay-maximize", "Adagrad", dict(lr=0.1, weight_decay=0.1, maximize=True)),
]
SHAPES = [(5, 3), (7,), (2, 3, 4), ()]


def _pairs(device, dtype=torch.float64, shapes=SHAPES):
    """torch parameters and genesis parameters with the same values."""
    tps = [torch.nn.Parameter(torch.randn(s, dtype=dtype)) for s in shapes]
    gps = [nn.Parameter(g(t, device)) for t in tps]
    return tps, gps


def _feed(tps, gps, device, skip=None):
    """The same fresh gradients on both sides; parameter ``skip`` gets none (so it does not step)."""
    for i, (tp, gp) in enumerate(zip(tps, gps)):
        if i == skip:
            tp.grad, gp.grad = None, None
        else:
            grad = torch.randn_like(tp)
            tp.grad, gp.grad = grad, g(grad, device)


def _run_both(name, kwargs, device, steps, dtype=torch.float64, tol=None):
    tps, gps = _pairs(device, dtype)
    topt = getattr(torch.optim, name)(tps, **kwargs)
    opt = getattr(genesis.optim, name)(gps, **kwargs)
    for step in range(steps):
        _feed(tps, gps, device, skip=1 if step % 4 == 3 else None)
        topt.step()
        opt.step()
        for gp, tp in zip(gps, tps):
            assert_close(gp, tp, **(tol or {}))
    return topt, opt


@pytest.mark.parametrize("name,kwargs", [pytest.param(n, k, id=i) for i, n, k in CONFIGS])
def test_steps_match_torch_float64(device, name, kwargs):
    # 1e-12: genesis's add(alpha=) rounds the product before adding where torch's cpu kernel fuses it
    _run_both(name, kwargs, device, steps=25, tol=dict(rtol=1e-12, atol=1e-14))


@pytest.mark.parametrize("name,kwargs", [pytest.param(n, k, id=i) for i, n, k in CONFIGS[::3]])
def test_steps_match_torch_float32(device, name, kwargs):
    _run_both(name, kwargs, device, steps=10, dtype=torch.float32, tol=dict(rtol=1e-5, atol=1e-6))


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(lr=0.1, momentum=0.9)),
        ("Adam", dict(lr=0.01)),
        ("Adagrad", dict(lr=0.1)),
        ("RMSprop", dict(lr=0.01, momentum=0.5)),
    ],
)
@pytest.mark.parametrize(
    "flag", [dict(foreach=True), dict(foreach=False), dict(fused=True), dict(differentiable=False)]
)
def test_foreach_and_fused_flags_accepted_with_the_same_result(device, name, kwargs, flag):
    if name == "RMSprop" and "fused" in flag:
        with pytest.raises(TypeError):  # torch's RMSprop has no fused flag either
            genesis.optim.RMSprop([nn.Parameter(genesis.randn(2))], fused=True)
        return
    tps, gps = _pairs(device)
    topt = getattr(torch.optim, name)(tps, **kwargs)
    opt = getattr(genesis.optim, name)(gps, **kwargs, **flag)
    assert all(gr[k] == v for gr in opt.param_groups for k, v in flag.items())
    for _ in range(5):
        _feed(tps, gps, device)
        topt.step()
        opt.step()
    for gp, tp in zip(gps, tps):
        assert_close(gp, tp, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_capturable_adam_keeps_step_on_the_device_and_agrees(device, amsgrad):
    # torch refuses capturable on the cpu; its formula differs from the plain one only in rounding
    tps, gps = _pairs(device)
    topt = torch.optim.AdamW(tps, lr=0.01, amsgrad=amsgrad)
    opt = genesis.optim.AdamW(gps, lr=0.01, amsgrad=amsgrad, capturable=True)
    for _ in range(8):
        _feed(tps, gps, device)
        topt.step()
        opt.step()
    for gp, tp in zip(gps, tps):
        assert_close(gp, tp, rtol=1e-12, atol=1e-14)
        assert opt.state[gp]["step"].device == gp.device and opt.state[gp]["step"].item() == 8.0


def test_tensor_lr(device):
    tps, gps = _pairs(device)
    # float64 lr tensors: with a float32 one torch rounds the step size to float32, genesis does not
    # (made from numpy: genesis.tensor(0.01, dtype=float64) goes through float32 today, a genesis_ndarray bug)
    topt = torch.optim.Adam(tps, lr=torch.tensor(0.01, dtype=torch.float64))
    opt = genesis.optim.Adam(gps, lr=genesis.tensor(np.array(0.01)))
    for _ in range(4):
        _feed(tps, gps, device)
        topt.step()
        opt.step()
    for gp, tp in zip(gps, tps):
        assert_close(gp, tp, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="1-element"):
        genesis.optim.SGD(gps, lr=genesis.tensor([0.1, 0.2]))


def test_param_groups_with_their_own_options_match_torch(device):
    tps, gps = _pairs(device)
    tgroups = [{"params": tps[:2], "lr": 0.05, "betas": (0.8, 0.9)}, {"params": tps[2:], "weight_decay": 0.1}]
    ggroups = [{"params": gps[:2], "lr": 0.05, "betas": (0.8, 0.9)}, {"params": gps[2:], "weight_decay": 0.1}]
    topt = torch.optim.AdamW(tgroups, lr=0.01, amsgrad=True)
    opt = genesis.optim.AdamW(ggroups, lr=0.01, amsgrad=True)
    assert [gr["lr"] for gr in opt.param_groups] == [0.05, 0.01]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999) and opt.param_groups[0]["weight_decay"] == 0.01
    for _ in range(6):
        _feed(tps, gps, device)
        topt.step()
        opt.step()
    for gp, tp in zip(gps, tps):
        assert_close(gp, tp, rtol=1e-12, atol=1e-14)


def test_parameters_without_gradient_do_not_move(device):
    _, model = _models(device)
    first, second = list(model.parameters())[:2], list(model.parameters())[2:]
    opt = genesis.optim.SGD([{"params": first, "lr": 0.5}, {"params": second}], lr=0.1, momentum=0.9)
    frozen = [p.detach().cpu().numpy().copy() for p in model.parameters()]
    model[0].weight.grad = genesis.ones(6, 4, dtype=genesis.float64, device=device)
    opt.step()
    moved = [not (p.detach().cpu().numpy() == f).all() for p, f in zip(model.parameters(), frozen)]
    assert moved == [True, False, False, False]
    assert (model[0].weight.detach().cpu().numpy() == frozen[0] - 0.5).all()
    assert len(opt.state) == 1  # state only for the parameter that stepped


@pytest.mark.parametrize("name,kwargs", [pytest.param(n, k, id=i) for i, n, k in CONFIGS[::2]])
def test_state_dict_has_torchs_layout(name, kwargs):
    tps, gps = _pairs("cpu")
    topt = getattr(torch.optim, name)([{"params": tps[:1]}, {"params": tps[1:], "lr": 0.003}], **kwargs)
    opt = getattr(genesis.optim, name)([{"params": gps[:1]}, {"params": gps[1:], "lr": 0.003}], **kwargs)
    _feed(tps, gps, "cpu", skip=2)
    topt.step()
    opt.step()
    tsd, gsd = topt.state_dict(), opt.state_dict()
    assert [sorted(gr) for gr in gsd["param_groups"]] == [sorted(gr) for gr in tsd["param_groups"]]
    assert [gr["params"] for gr in gsd["param_groups"]] == [[0], [1, 2, 3]]
    for key in ("lr", "weight_decay", "maximize", "foreach", "differentiable"):
        assert [gr.get(key) for gr in gsd["param_groups"]] == [gr.get(key) for gr in tsd["param_groups"]]
    assert sorted(gsd["state"]) == sorted(tsd["state"])
    for i, tstate in tsd["state"].items():
        assert sorted(gsd["state"][i]) == sorted(tstate)
        for key, value in tstate.items():
            if isinstance(value, torch.Tensor):
                assert_close(gsd["state"][i][key], value, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,kwargs", [pytest.param(n, k, id=i) for i, n, k in CONFIGS[1::2]])
def test_resuming_from_a_state_dict_is_bit_exact(device, name, kwargs):
    _, gps = _pairs(device)
    resumed_params = [nn.Parameter(p.detach().clone()) for p in gps]
    opt = getattr(genesis.optim, name)(gps, **kwargs)
    grads = [[genesis.randn(*p.shape, dtype=p.dtype, device=device) for p in gps] for _ in range(8)]
    for step in range(4):
        for p, grad in zip(gps, grads[step]):
            p.grad = grad
        opt.step()
    with genesis.no_grad():
        for p, q in zip(resumed_params, gps):
            q_value = q.detach().clone()
            p.copy_(q_value)
    saved = copy.deepcopy(_detached(opt.state_dict()))
    resumed = getattr(genesis.optim, name)(resumed_params, **kwargs)
    resumed.load_state_dict(saved)
    for step in range(4, 8):
        for p, q, grad in zip(gps, resumed_params, grads[step]):
            p.grad, q.grad = grad, grad.clone()
        opt.step()
        resumed.step()
        for p, q in zip(gps, resumed_params):
            assert (p.detach().cpu().numpy() == q.detach().cpu().numpy()).all()


def _detached(state):
    """A state_dict with every tensor copied (what a checkpoint round trip gives)."""
    if isinstance(state, genesis.Tensor):
        return state.detach().clone()
    if isinstance(state, dict):
        return {k: _detached(v) for k, v in state.items()}
    if isinstance(state, list):
        return [_detached(v) for v in state]
    return state


def test_load_state_dict_casts_to_the_parameters_device_and_dtype_except_step():
    p = nn.Parameter(genesis.randn(3, dtype=genesis.float64))
    opt = genesis.optim.Adam([p], lr=0.1)
    p.grad = genesis.randn(3, dtype=genesis.float64)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0] = {k: v.float() if k != "step" else v for k, v in sd["state"][0].items()}
    other = nn.Parameter(genesis.randn(3, dtype=genesis.float64))
    fresh = genesis.optim.Adam([other], lr=0.5)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["lr"] == 0.1 and fresh.param_groups[0]["params"][0] is other
    assert fresh.state[other]["exp_avg"].dtype == genesis.float64
    assert fresh.state[other]["step"].dtype == genesis.float32
    with pytest.raises(ValueError, match="different number of parameter groups"):
        genesis.optim.Adam([{"params": [other]}, {"params": [p]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        genesis.optim.Adam([other, p]).load_state_dict(sd)


def test_add_param_group_refuses_what_torch_refuses():
    tp, tq = torch.nn.Parameter(torch.randn(3)), torch.nn.Parameter(torch.randn(2))
    p, q = nn.Parameter(genesis.randn(3)), nn.Parameter(genesis.randn(2))
    topt, opt = torch.optim.SGD([tp], lr=0.1), genesis.optim.SGD([p], lr=0.1)
    cases = [
        (lambda o, a, b: o.add_param_group({"params": [a]}), ValueError),  # already in a group
        (lambda o, a, b: o.add_param_group({"params": [b * 2]}), ValueError),  # non-leaf
        (lambda o, a, b: o.add_param_group({"params": [1.0]}), TypeError),
        (lambda o, a, b: o.add_param_group({"params": {b}}), TypeError),  # a set has no order
        (lambda o, a, b: o.add_param_group([b]), TypeError),
    ]
    for case, error in cases:
        with pytest.raises(error) as expected:
            case(topt, tp, tq)
        with pytest.raises(error) as got:
            case(opt, p, q)
        assert str(got.value).split(",")[0] == str(expected.value).split(",")[0]
    opt.add_param_group({"params": q, "lr": 0.3})
    assert opt.param_groups[1]["params"] == [q] and opt.param_groups[1]["momentum"] == 0
    with pytest.raises(TypeError, match="iterable of Tensors"):
        genesis.optim.Adam(p)
    with pytest.raises(ValueError, match="empty parameter list"):
        genesis.optim.Adam([])


def test_named_parameters_are_accepted_as_torch_does():
    model = nn.Linear(3, 2)
    opt = genesis.optim.SGD(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_optimizer_refuses_bad_arguments():
    p = nn.Parameter(genesis.randn(3))
    for make, match in [
        (lambda: genesis.optim.SGD([p], lr=-1), "learning rate"),
        (lambda: genesis.optim.SGD([p], lr=0.1, nesterov=True), "Nesterov"),
        (lambda: genesis.optim.SGD([p], momentum=-1), "momentum"),
        (lambda: genesis.optim.Adam([p], betas=(1.0, 0.9)), "beta"),
        (lambda: genesis.optim.Adam([p], eps=-1), "epsilon"),
        (lambda: genesis.optim.AdamW([p], weight_decay=-1), "weight_decay"),
        (lambda: genesis.optim.RMSprop([p], alpha=-1), "alpha"),
        (lambda: genesis.optim.Adagrad([p], lr_decay=-1), "lr_decay"),
        (lambda: genesis.optim.Adagrad([p], initial_accumulator_value=-1), "initial_accumulator"),
    ]:
        with pytest.raises(ValueError, match=match):
            make()
    with pytest.raises(RuntimeError, match="fused"):
        genesis.optim.Adam([p], fused=True, foreach=True)


def test_zero_grad_sets_to_none_or_zeroes_in_place(device):
    p = nn.Parameter(genesis.randn(3, device=device))
    opt = genesis.optim.SGD([p], lr=0.1)
    p.grad = genesis.ones(3, device=device)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.cpu().numpy().tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_repr_lists_the_groups_like_torch():
    p = nn.Parameter(genesis.randn(3))
    tp = torch.nn.Parameter(torch.randn(3))
    assert repr(genesis.optim.Adam([p], lr=0.1)) == repr(torch.optim.Adam([tp], lr=0.1))


def _models(device):
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double()
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2)).to(device).double()
    copy_weights(tmodel, model)
    return tmodel, model


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_training_a_model_matches_torch(device, name):
    tmodel, model = _models(device)
    topt = getattr(torch.optim, name)(tmodel.parameters(), lr=0.05)
    opt = getattr(genesis.optim, name)(model.parameters(), lr=0.05)
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


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
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


MULTI_TENSOR_CONFIGS = [
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", MULTI_TENSOR_CONFIGS)
@pytest.mark.parametrize("flag", [dict(fused=True), dict(foreach=True)], ids=["fused", "foreach"])
def test_multi_tensor_path_matches_torchs_fused_and_foreach(device, name, kwargs, flag, monkeypatch):
    """The multi-tensor path (taken for fused / foreach) against torch's own fused / foreach step, with a
    parameter that skips steps; the state keeps torch's layout (step tensors where torch keeps them)."""
    module = genesis.optim.sgd if name == "SGD" else genesis.optim.adam
    entry = "multi_tensor_sgd_" if name == "SGD" else "multi_tensor_adam_"
    calls = []
    real = getattr(module, entry)
    monkeypatch.setattr(module, entry, lambda *a, **k: calls.append(1) or real(*a, **k))
    tps, gps = _pairs(device)
    topt = getattr(torch.optim, name)(tps, **kwargs, **flag)
    opt = getattr(genesis.optim, name)(gps, **kwargs, **flag)
    for step in range(6):
        _feed(tps, gps, device, skip=1 if step % 3 == 2 else None)
        topt.step()
        opt.step()
        for gp, tp in zip(gps, tps):
            assert_close(gp, tp, rtol=1e-12, atol=1e-14)
    assert calls, "the multi-tensor path did not run"
    tstate, gstate = topt.state_dict()["state"], opt.state_dict()["state"]
    assert tstate.keys() == gstate.keys()
    for k in tstate:
        assert tstate[k].keys() == gstate[k].keys()
        for key, value in tstate[k].items():
            if isinstance(value, torch.Tensor):
                assert_close(gstate[k][key].cpu(), value, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,kwargs", MULTI_TENSOR_CONFIGS[1:3])
def test_multi_tensor_path_takes_strided_parameters_gradients_and_states(device, name, kwargs, monkeypatch):
    """Transposed parameters, a strided gradient and a strided loaded state still take the fused path
    (the kernels stream contiguous copies of them) and step as torch's single-tensor step does."""
    module = genesis.optim.sgd if name == "SGD" else genesis.optim.adam
    entry = "multi_tensor_sgd_" if name == "SGD" else "multi_tensor_adam_"
    calls = []
    real = getattr(module, entry)
    monkeypatch.setattr(module, entry, lambda *a, **k: calls.append(1) or real(*a, **k))
    shapes = [(6, 5), (7,), (3, 4)]
    tps = [torch.nn.Parameter(torch.randn(s, dtype=torch.float64)) for s in shapes]
    tps[0] = torch.nn.Parameter(torch.randn(5, 6, dtype=torch.float64).t())  # strided: (1, 6)
    gps = [
        nn.Parameter(g(t.detach(), device).t().contiguous().t() if i == 0 else g(t, device)) for i, t in enumerate(tps)
    ]
    assert not gps[0].is_contiguous() and not tps[0].is_contiguous()
    # The reference is torch's single-tensor step: torch 2.13's fused CPU SGD reads a transposed gradient
    # in memory order (it steps a (3, 4) parameter with the wrong elements).
    topt = getattr(torch.optim, name)(tps, **kwargs, foreach=False)
    opt = getattr(genesis.optim, name)(gps, **kwargs, fused=True)
    for step in range(4):
        for i, (tp, gp) in enumerate(zip(tps, gps)):
            grad = torch.randn(tp.shape[::-1], dtype=torch.float64).t() if i == 2 else torch.randn_like(tp)
            tp.grad, gp.grad = grad, g(grad.contiguous(), device)
            if i == 2:  # a gradient seen through a transpose
                gp.grad = g(grad.t().contiguous(), device).t()
                assert not gp.grad.is_contiguous()
        topt.step()
        opt.step()
        if step == 1:  # states loaded back as strided views of themselves
            state = opt.state_dict()
            for st in state["state"].values():
                for key, value in st.items():
                    if key != "step" and value.ndim == 2:
                        st[key] = value.t().contiguous().t()
            opt.load_state_dict(state)
        for gp, tp in zip(gps, tps):
            assert_close(gp, tp, rtol=1e-12, atol=1e-14)
    assert len(calls) == 4, "the multi-tensor path did not take the strided tensors"


def test_foreach_false_keeps_the_per_tensor_path(monkeypatch):
    monkeypatch.setattr(genesis.optim.adam, "multi_tensor_adam_", lambda *a, **k: pytest.fail("multi-tensor ran"))
    tps, gps = _pairs("cpu")
    opt = genesis.optim.Adam(gps, lr=0.01, foreach=False)
    _feed(tps, gps, "cpu")
    opt.step()
