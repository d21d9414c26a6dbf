"""genesis.compile's cast folding (genesis_autograd/compile/casts.py): ``cross_entropy(logits.float(), t)`` on
16-bit logits loses the float32 copy of the logits, and the loss and the logits' gradient stay eager's: the
fused cross-entropy reads 16-bit logits and computes in float32 itself. Casts it cannot take (read elsewhere,
returned, narrowing) stay."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


@pytest.fixture(autouse=True)
def _fresh_compiler():
    yield
    genesis.compiler.reset()


def _labels(compiled) -> list[str]:
    inner = getattr(compiled, "_compiled", compiled)
    return [op.label for graph in inner.graphs for op in graph.ops]


def _leaf(raw: torch.Tensor, device: str) -> genesis.Tensor:
    """``raw`` (any float dtype) as a genesis leaf of its dtype that requires grad."""
    low = getattr(genesis, str(raw.dtype).removeprefix("torch."))
    return g(raw.float(), device).to(low).detach().requires_grad_()


def _logits(rows: int, classes: int, device: str, dtype) -> tuple[torch.Tensor, genesis.Tensor]:
    t = (torch.randn(rows, classes) * 3).to(getattr(torch, dtype.name))
    return t, _leaf(t, device)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_cast_into_cross_entropy_is_folded_with_eagers_loss_and_gradient(device: str, dtype: str) -> None:
    low = getattr(genesis, dtype)

    def fn(logits, target):
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), target.view(-1), label_smoothing=0.1)

    compiled = genesis.compile(fn)
    for _ in range(3):  # capture, then replays
        raw, x_eager = _logits(24, 37, device, low)
        x_comp = _leaf(raw, device)
        target = g(torch.randint(0, 37, (24,)), device)
        upstream = float(torch.rand(()) + 0.5)
        want = fn(x_eager, target)
        (want * upstream).backward()
        out = compiled(x_comp, target)
        (out * upstream).backward()
        assert out.dtype == genesis.float32 and x_comp.grad.dtype == low
        assert_close(out, torch.from_numpy(want.detach().cpu().numpy()), atol=1e-6, rtol=1e-6)
        # the gradient: float32 math, one rounding to the logits' dtype in both (summation order may differ)
        ulp = 2.0**-7 if dtype == "bfloat16" else 2.0**-10
        ref = torch.from_numpy(x_eager.grad.float().cpu().numpy())
        got = torch.from_numpy(x_comp.grad.float().cpu().numpy())
        assert ((got - ref).abs() <= ulp * ref.abs() + 1e-6).all()
        # against float64 torch from the same 16-bit logits
        exact = raw.double().requires_grad_()
        exact_loss = torch.nn.functional.cross_entropy(
            exact, torch.from_numpy(target.cpu().numpy()), label_smoothing=0.1
        )
        (exact_loss * upstream).backward()
        assert abs(float(out) - exact_loss.item()) <= 1e-5 * abs(exact_loss.item())
        assert_close(x_comp.grad.float(), exact.grad.float(), atol=2 * ulp * float(exact.grad.abs().max()), rtol=0)
    labels = _labels(compiled)
    assert "CrossEntropy" in labels and "Cast" not in labels, labels


def test_a_model_head_under_autocast_folds_the_cast(device: str) -> None:
    """nanoGPT's head: bf16 logits from the lm_head under autocast, ``.float()``, cross-entropy; the logits are
    returned too (they stay), the float32 copy does not exist."""
    genesis.manual_seed(0)
    head = nn.Linear(16, 40, bias=False).to(device)

    def fn(x, target):
        logits = head(x)
        return logits, F.cross_entropy(logits.view(-1, 40).float(), target.view(-1))

    compiled = genesis.compile(fn)
    for _ in range(3):
        tx = torch.randn(2, 6, 16)
        target = g(torch.randint(0, 40, (2, 6)), device)
        x_eager, x_comp = g(tx, device, True), g(tx, device, True)
        with genesis.autocast(device, dtype=genesis.bfloat16):
            logits_e, loss_e = fn(x_eager, target)
        loss_e.backward()
        eager_grad = head.weight.grad.detach().clone()
        head.zero_grad()
        with genesis.autocast(device, dtype=genesis.bfloat16):
            logits_c, loss_c = compiled(x_comp, target)
        loss_c.backward()
        assert logits_c.dtype == genesis.bfloat16 and loss_c.dtype == genesis.float32
        assert_close(logits_c.float(), torch.from_numpy(logits_e.detach().float().cpu().numpy()), atol=0, rtol=0)
        assert_close(loss_c, torch.from_numpy(loss_e.detach().cpu().numpy()), atol=1e-6, rtol=1e-6)
        # the logits' gradient rounds to bf16 once either way; what follows is the same bf16 products
        scale = float(eager_grad.abs().max())
        assert_close(head.weight.grad, torch.from_numpy(eager_grad.cpu().numpy()), atol=2**-7 * scale, rtol=2**-7)
        assert_close(x_comp.grad, torch.from_numpy(x_eager.grad.cpu().numpy()), atol=2**-7 * scale, rtol=2**-7)
        head.zero_grad()
    labels = _labels(compiled)
    assert "Cast" not in labels and "CrossEntropy" in labels, labels


def test_casts_it_cannot_take_stay(device: str) -> None:
    def read_twice(logits, target):
        wide = logits.float()
        return F.cross_entropy(wide, target) + wide.mean()

    def returned(logits, target):
        wide = logits.float()
        return F.cross_entropy(wide, target), wide

    def narrowing(logits, target):
        return F.cross_entropy(logits.to(genesis.bfloat16), target)

    for fn, dtype in ((read_twice, genesis.bfloat16), (returned, genesis.bfloat16), (narrowing, genesis.float32)):
        compiled = genesis.compile(fn)
        for _ in range(2):
            raw, x_eager = _logits(8, 11, device, dtype)
            x_comp = _leaf(raw, device)
            target = g(torch.randint(0, 11, (8,)), device)
            want, got = fn(x_eager, target), compiled(x_comp, target)
            for w, o in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
                assert_close(o.float(), torch.from_numpy(w.detach().float().cpu().numpy()), atol=1e-6, rtol=1e-6)
        assert "Cast" in _labels(compiled), fn.__name__
        genesis.compiler.reset()
