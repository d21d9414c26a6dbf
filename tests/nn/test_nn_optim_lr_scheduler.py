"""Learning-rate schedulers: each one's lr (and momentum / beta1) sequence against torch's over many
steps, compared exactly; state_dict round trips; closed forms; composites; the misuse warnings."""

from __future__ import annotations

import io
import math
import warnings

import pytest
import torch

import genesis
import genesis.nn as nn
from genesis.optim import lr_scheduler as gls

tls = torch.optim.lr_scheduler


def _optimizers(name="SGD", **kwargs):
    """torch and genesis optimizers of the same class with two groups (lr 0.1 and 0.05)."""
    tparams = [torch.nn.Parameter(torch.randn(2)) for _ in range(2)]
    gparams = [nn.Parameter(genesis.randn(2)) for _ in range(2)]
    kwargs = {"momentum": 0.9, **kwargs} if name == "SGD" else kwargs
    topt = getattr(torch.optim, name)([{"params": tparams[:1]}, {"params": tparams[1:], "lr": 0.05}], lr=0.1, **kwargs)
    gopt = getattr(genesis.optim, name)(
        [{"params": gparams[:1]}, {"params": gparams[1:], "lr": 0.05}], lr=0.1, **kwargs
    )
    return topt, gopt


class Halve:
    """A callable object (not a function): its attributes travel in the state_dict."""

    def __init__(self):
        self.factor = 0.5

    def __call__(self, epoch):
        return self.factor ** (epoch // 7)


# (id, builder taking (lr_scheduler module, optimizer))
SCHEDULERS = [
    ("lambda", lambda m, o: m.LambdaLR(o, lambda e: 0.95**e)),
    ("lambda-per-group", lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.9 ** (e % 5)])),
    ("multiplicative", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.97)),
    ("step", lambda m, o: m.StepLR(o, step_size=7, gamma=0.3)),
    ("multistep", lambda m, o: m.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.5)),
    ("exponential", lambda m, o: m.ExponentialLR(o, gamma=0.93)),
    ("cosine", lambda m, o: m.CosineAnnealingLR(o, T_max=13, eta_min=0.001)),
    ("cosine-warm-restarts", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.002)),
    ("cosine-warm-restarts-t1", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7)),
    ("linear", lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=11)),
    ("constant", lambda m, o: m.ConstantLR(o, factor=0.4, total_iters=9)),
    ("polynomial", lambda m, o: m.PolynomialLR(o, total_iters=23, power=1.7)),
    ("onecycle-cos", lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=61)),
    (
        "onecycle-linear-3phase",
        lambda m, o: m.OneCycleLR(
            o, max_lr=0.8, epochs=6, steps_per_epoch=10, anneal_strategy="linear", three_phase=True, pct_start=0.25
        ),
    ),
    (
        "onecycle-no-momentum",
        lambda m, o: m.OneCycleLR(
            o, max_lr=0.3, total_steps=70, cycle_momentum=False, div_factor=10.0, final_div_factor=100.0
        ),
    ),
    (
        "sequential",
        lambda m, o: m.SequentialLR(
            o,
            [
                m.LinearLR(o, start_factor=0.1, total_iters=6),
                m.CosineAnnealingLR(o, T_max=20),
                m.StepLR(o, step_size=3, gamma=0.7),
            ],
            milestones=[6, 30],
        ),
    ),
    (
        "chained",
        lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.95)]),
    ),
]


def _lrs(opt):
    return [g["lr"] for g in opt.param_groups]


@pytest.mark.parametrize("make", [pytest.param(m, id=i) for i, m in SCHEDULERS])
def test_lr_sequence_matches_torch_exactly(make):
    topt, gopt = _optimizers()
    tsched, gsched = make(tls, topt), make(gls, gopt)
    assert gsched.get_last_lr() == tsched.get_last_lr() and _lrs(gopt) == _lrs(topt)
    for _ in range(60):
        topt.step()
        gopt.step()
        tsched.step()
        gsched.step()
        assert gsched.get_last_lr() == tsched.get_last_lr()
        assert _lrs(gopt) == _lrs(topt)
        assert [g["momentum"] for g in gopt.param_groups] == [g["momentum"] for g in topt.param_groups]
    assert getattr(gsched, "last_epoch", None) == getattr(tsched, "last_epoch", None)


@pytest.mark.parametrize("three_phase", [False, True])
def test_onecycle_cycles_adams_beta1(three_phase):
    topt, gopt = _optimizers("Adam", betas=(0.9, 0.99))
    tsched = tls.OneCycleLR(topt, max_lr=0.01, total_steps=40, three_phase=three_phase, base_momentum=0.8)
    gsched = gls.OneCycleLR(gopt, max_lr=0.01, total_steps=40, three_phase=three_phase, base_momentum=0.8)
    for _ in range(39):
        topt.step()
        gopt.step()
        tsched.step()
        gsched.step()
        assert _lrs(gopt) == _lrs(topt)
        assert [g["betas"] for g in gopt.param_groups] == [g["betas"] for g in topt.param_groups]
    with pytest.raises(ValueError, match="Tried to step"):
        for _ in range(3):
            gsched.step()


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(mode="max", factor=0.5, patience=2, cooldown=3),
        dict(threshold_mode="abs", threshold=0.05, min_lr=[0.01, 0.02], patience=1),
        dict(mode="max", threshold_mode="abs", eps=0.02, patience=0),
    ],
)
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    topt, gopt = _optimizers()
    tsched, gsched = tls.ReduceLROnPlateau(topt, **kwargs), gls.ReduceLROnPlateau(gopt, **kwargs)
    metrics = torch.rand(80).cumsum(0).remainder(3.0).tolist()  # rising and falling
    for metric in metrics:
        tsched.step(metric)
        gsched.step(genesis.tensor(metric) if metric > 2 else metric)  # a 0-d tensor works too
        assert _lrs(gopt) == _lrs(topt) and gsched.get_last_lr() == tsched.get_last_lr()
        assert (gsched.num_bad_epochs, gsched.cooldown_counter) == (tsched.num_bad_epochs, tsched.cooldown_counter)


@pytest.mark.parametrize("make", [pytest.param(m, id=i) for i, m in SCHEDULERS])
def test_state_dict_resumes_the_same_sequence_through_a_checkpoint(make):
    _, gopt = _optimizers()
    sched = make(gls, gopt)
    for _ in range(17):
        gopt.step()
        sched.step()
    buffer = io.BytesIO()  # through a checkpoint file, as a resumed run gets them
    genesis.save({"sched": sched.state_dict(), "opt": gopt.state_dict()}, buffer)
    buffer.seek(0)
    saved = genesis.load(buffer)
    saved_sched, saved_opt = saved["sched"], saved["opt"]
    _, fresh_opt = _optimizers()
    fresh = make(gls, fresh_opt)
    fresh_opt.load_state_dict(saved_opt)
    fresh.load_state_dict(saved_sched)
    for _ in range(30):
        gopt.step()
        fresh_opt.step()
        sched.step()
        fresh.step()
        assert fresh.get_last_lr() == sched.get_last_lr() and _lrs(fresh_opt) == _lrs(gopt)


def test_state_dict_has_torchs_keys_and_carries_callable_objects():
    topt, gopt = _optimizers()
    tsd = tls.LambdaLR(topt, Halve()).state_dict()
    halve = Halve()
    gsched = gls.LambdaLR(gopt, [halve, lambda e: 1.0])
    gsd = gsched.state_dict()
    assert sorted(gsd) == sorted(tsd)
    assert gsd["lr_lambdas"] == [{"factor": 0.5}, None]
    gsd["lr_lambdas"][0]["factor"] = 0.25
    gsched.load_state_dict(gsd)
    assert halve.factor == 0.25
    for make in (lambda m, o: m.StepLR(o, 3), lambda m, o: m.OneCycleLR(o, 1.0, total_steps=10)):
        topt, gopt = _optimizers()
        assert sorted(make(gls, gopt).state_dict()) == sorted(make(tls, topt).state_dict())


@pytest.mark.parametrize(
    "make",
    [
        lambda m, o: m.StepLR(o, 4, 0.5),
        lambda m, o: m.MultiStepLR(o, [3, 8]),
        lambda m, o: m.ExponentialLR(o, 0.9),
        lambda m, o: m.CosineAnnealingLR(o, 10),
        lambda m, o: m.LinearLR(o, 0.3, total_iters=6),
        lambda m, o: m.PolynomialLR(o, 9, 2.0),
        lambda m, o: m.ConstantLR(o, 0.3, 4),
        lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, 2),
    ],
)
def test_step_with_an_epoch_uses_the_closed_form_as_torch(make):
    topt, gopt = _optimizers()
    tsched, gsched = make(tls, topt), make(gls, gopt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [3, 7, 2, 11, 0, 5.5 if isinstance(gsched, gls.CosineAnnealingWarmRestarts) else 5]:
            topt.step()
            gopt.step()
            tsched.step(epoch)
            gsched.step(epoch)
            assert _lrs(gopt) == _lrs(topt)


def test_scheduler_before_optimizer_step_warns_as_torch():
    _, gopt = _optimizers()
    sched = gls.StepLR(gopt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    _, gopt = _optimizers()
    sched = gls.StepLR(gopt, 2)
    gopt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
        sched.get_last_lr()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


def test_bad_arguments_raise_torchs_errors():
    _, gopt = _optimizers()
    cases = [
        (lambda: gls.StepLR(object(), 3), TypeError),
        (lambda: gls.LambdaLR(gopt, [lambda e: 1.0]), ValueError),
        (lambda: gls.MultiplicativeLR(gopt, 0.5), TypeError),
        (lambda: gls.ConstantLR(gopt, factor=1.5), ValueError),
        (lambda: gls.LinearLR(gopt, start_factor=0), ValueError),
        (lambda: gls.CosineAnnealingWarmRestarts(gopt, T_0=0), ValueError),
        (lambda: gls.CosineAnnealingWarmRestarts(gopt, T_0=2, T_mult=0), ValueError),
        (lambda: gls.OneCycleLR(gopt, 0.1), ValueError),
        (lambda: gls.OneCycleLR(gopt, 0.1, total_steps=10, anneal_strategy="exp"), ValueError),
        (lambda: gls.OneCycleLR(gopt, 0.1, total_steps=10, pct_start=1.5), ValueError),
        (lambda: gls.ReduceLROnPlateau(gopt, factor=1.0), ValueError),
        (lambda: gls.ReduceLROnPlateau(gopt, mode="avg"), ValueError),
        (lambda: gls.SequentialLR(gopt, [gls.StepLR(gopt, 2)], milestones=[3]), ValueError),
        (lambda: gls.ChainedScheduler([gls.ReduceLROnPlateau(gopt)]), ValueError),
        (lambda: gls.StepLR(_optimizers()[1], 3, last_epoch=4), KeyError),  # resuming needs initial_lr
    ]
    for make, error in cases:
        with pytest.raises(error):
            make()
    _, other = _optimizers()
    with pytest.raises(ValueError, match="same optimizer"):
        gls.SequentialLR(gopt, [gls.StepLR(gopt, 2), gls.StepLR(other, 2)], milestones=[3])


def test_cosine_annealing_reaches_eta_min_and_climbs_back():
    _, gopt = _optimizers()
    sched = gls.CosineAnnealingLR(gopt, T_max=10, eta_min=0.01)
    lrs = []
    for _ in range(20):
        gopt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert math.isclose(lrs[9], 0.01) and math.isclose(lrs[19], 0.1)


def test_reduce_lr_on_plateau_state_survives_a_checkpoint():
    _, gopt = _optimizers()
    sched = gls.ReduceLROnPlateau(gopt, mode="max", patience=1)
    buffer = io.BytesIO()
    genesis.save(sched.state_dict(), buffer)
    buffer.seek(0)
    restored = gls.ReduceLROnPlateau(_optimizers()[1])
    restored.load_state_dict(genesis.load(buffer))
    assert restored.best == -math.inf and restored.mode == "max" and restored.patience == 1
