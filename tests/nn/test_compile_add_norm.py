"""genesis.compile's residual add + norm pass (genesis_autograd/compile/add_norm.py): in a pre-norm block the
residual add and the norm that reads it become one add_norm op, forward and backward, with eager's values
and gradients; adds it cannot take (read before the norm, broadcast) stay as they are."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, g

import genesis
import genesis.nn as nn


@pytest.fixture(autouse=True)
def _fresh_compiler():
    yield
    genesis.compiler.reset()


class PreNormStack(nn.Module):
    """Two pre-norm residual halves, then a final norm: x + f(norm1(x)), + g(norm2(.)), norm3(.)."""

    def __init__(self, width: int, rms: bool) -> None:
        super().__init__()
        make = (lambda: nn.RMSNorm(width)) if rms else (lambda: nn.LayerNorm(width))
        self.norm1, self.norm2, self.norm3 = make(), make(), make()
        self.f = nn.Linear(width, width)
        self.g = nn.Linear(width, width)

    def forward(self, x):
        x = x + self.f(self.norm1(x))
        x = x + nn.functional.gelu(self.g(self.norm2(x)))
        return self.norm3(x)


def _graph(compiled):
    """The first captured graph of a compiled module (its CompiledFunction's) or function."""
    return getattr(compiled, "_compiled", compiled).graphs[0]


def _labels(compiled) -> list[str]:
    return [op.label for op in _graph(compiled).ops]


def _model_and_float64_twin(device: str) -> tuple[PreNormStack, PreNormStack]:
    """A LayerNorm PreNormStack(64) and a float64 copy of its weights (the reference of the autocast tests)."""
    genesis.manual_seed(0)
    model = PreNormStack(64, rms=False).to(device)
    twin = PreNormStack(64, rms=False).to(device)
    twin.load_state_dict(model.state_dict())
    return model, twin.double()


@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
def test_pre_norm_block_fuses_and_matches_eager(device: str, rms: bool) -> None:
    genesis.manual_seed(0)
    model = PreNormStack(16, rms).to(device)
    for p in model.parameters():  # non-trivial norm parameters
        with genesis.no_grad():
            p.add_(genesis.randn(*p.shape, device=device) * 0.1)
    compiled = genesis.compile(model)
    for _ in range(3):  # capture, then replays
        tx = torch.randn(3, 5, 16)
        x_eager, x_comp = g(tx, device, True), g(tx, device, True)
        weight = g(torch.randn(3, 5, 16), device)
        model.zero_grad()
        (model(x_eager) * weight).sum().backward()
        eager_grads = [p.grad.detach().clone() for p in model.parameters()]
        model.zero_grad()
        out = compiled(x_comp)
        (out * weight).sum().backward()
        assert_close(out, torch.from_numpy(model(x_eager).detach().cpu().numpy()), atol=1e-5, rtol=1e-5)
        assert_close(x_comp.grad, torch.from_numpy(x_eager.grad.cpu().numpy()), atol=1e-5, rtol=1e-5)
        for p, want in zip(model.parameters(), eager_grads):
            assert_close(p.grad, torch.from_numpy(want.cpu().numpy()), atol=1e-5, rtol=1e-5)
    fused = "AddRMSNorm" if rms else "AddLayerNorm"
    labels = _labels(compiled)
    assert labels.count(fused) == 2, labels  # norm2 after the first residual add, norm3 after the second
    assert "Add" not in labels, labels


def test_a_sum_read_before_the_norm_is_not_taken(device: str) -> None:
    norm = nn.LayerNorm(8).to(device)

    def fn(x, h):
        s = x + h
        doubled = s * 2  # reads the sum before the norm does
        return norm(s) + doubled

    compiled = genesis.compile(fn)
    for _ in range(2):
        tx, th = torch.randn(4, 8), torch.randn(4, 8)
        want = torch.nn.functional.layer_norm(tx + th, (8,)) + (tx + th) * 2
        assert_close(compiled(g(tx, device), g(th, device)), want, atol=1e-5, rtol=1e-5)
    assert not any(label.startswith("AddLayerNorm") for label in _labels(compiled))


def test_a_broadcast_add_is_not_taken(device: str) -> None:
    norm = nn.RMSNorm(8).to(device)
    compiled = genesis.compile(lambda x, b: norm(x + b))
    for _ in range(2):
        tx, tb = torch.randn(4, 8), torch.randn(8)
        want = torch.nn.functional.rms_norm(tx + tb, (8,), eps=torch.finfo(torch.float32).eps)
        assert_close(compiled(g(tx, device), g(tb, device)), want, atol=1e-5, rtol=1e-5)
    assert not any(label.startswith("AddRMSNorm") for label in _labels(compiled))


def test_under_autocast(device: str) -> None:
    """bf16 autocast: the compiled block (fused add + norm, and pointwise chains that round once where eager
    rounds after every op) is no further from a float64 run of the same weights than twice eager's error."""
    model, reference_model = _model_and_float64_twin(device)
    compiled = genesis.compile(model)
    for _ in range(3):
        x = genesis.randn(4, 16, 64, device=device)
        with genesis.autocast(device, dtype=genesis.bfloat16):
            want = model(x)
            got = compiled(x)
        assert got.dtype == want.dtype
        exact = reference_model(x.double()).detach()
        eager_err = float((want.detach().double() - exact).abs().max())
        compiled_err = float((got.detach().double() - exact).abs().max())
        assert compiled_err <= 2 * eager_err + 1e-3, (compiled_err, eager_err)
    assert "AddLayerNorm" in _labels(compiled)


def test_under_autocast_a_norm_read_only_by_linears_writes_the_autocast_dtype(device: str) -> None:
    """norm2's output is read only by a Linear: the fused op writes it in bf16 (the cast the Linear would make,
    done by the norm's kernel); norm3's is returned and stays float32. Forward and gradients, against a float64
    run of the same weights, are no further off than twice eager's error under the same autocast."""
    model, exact_model = _model_and_float64_twin(device)
    compiled = genesis.compile(model)
    for _ in range(3):
        tx, tw = torch.randn(4, 16, 64), torch.randn(4, 16, 64)
        x_eager, x_comp, x_exact = g(tx, device, True), g(tx, device, True), g(tx.double(), device, True)
        weight = g(tw, device)
        results = []
        for run, x in ((model, x_eager), (compiled, x_comp)):
            model.zero_grad()
            with genesis.autocast(device, dtype=genesis.bfloat16):
                out = run(x)
            (out * weight).sum().backward()
            results.append([out.detach(), x.grad] + [p.grad.detach().clone() for p in model.parameters()])
        exact_model.zero_grad()
        out = exact_model(x_exact)
        (out * weight.double()).sum().backward()
        exact = [out.detach(), x_exact.grad] + [p.grad for p in exact_model.parameters()]
        for eager, fused, ref in zip(*results, exact):
            assert fused.dtype == eager.dtype
            eager_err = float((eager.double() - ref).abs().max())
            fused_err = float((fused.double() - ref).abs().max())
            assert fused_err <= 2 * eager_err + 1e-3 * float(ref.abs().max()), (fused_err, eager_err)
    graph = _graph(compiled)
    fused = [op for op in graph.ops if op.label == "AddLayerNorm"]
    assert [op.fn.__name__ for op in fused] == ["_lowered_layer_norm", "add_layer_norm"]
    assert graph.meta[fused[0].outputs[0].slot][1] == genesis.bfloat16
    assert graph.meta[fused[1].outputs[0].slot][1] == genesis.float32


def test_without_autocast_nothing_is_lowered(device: str) -> None:
    model = PreNormStack(16, rms=True).to(device)
    compiled = genesis.compile(model)
    for _ in range(2):
        x = g(torch.randn(3, 16), device)
        assert_close(compiled(x), torch.from_numpy(model(x).detach().cpu().numpy()), atol=1e-5, rtol=1e-5)
    assert all(op.fn.__name__ != "_lowered_rms_norm" for op in _graph(compiled).ops)
