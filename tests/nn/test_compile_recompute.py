"""genesis.compile's recompute pass (genesis_autograd/compile/recompute.py): an activation only a Linear reads is
recomputed in that Linear's backward (ActivationLinear), and a Linear whose weight is a parameter keeps the
parameter, not autocast's cast of it (RecastLinear). Values and gradients stay eager's, under autocast and
without; what the pass must leave alone stays."""

from __future__ import annotations

import copy

import pytest
import torch
from nn_helpers import g

import genesis
import genesis.nn as nn
from genesis_autograd.functions.activation_linear import ActivationLinear
from genesis_autograd.functions.matmul import Linear, RecastLinear


@pytest.fixture(autouse=True)
def _fresh_compiler():
    yield
    genesis.compiler.reset()


def _ops(compiled):
    inner = getattr(compiled, "_compiled", compiled)
    return [op for graph in inner.graphs for op in graph.ops]


def _mlp(width: int, approximate: str = "none") -> nn.Module:
    return nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate=approximate), nn.Linear(4 * width, width))


def _error(got: genesis.Tensor, ref: genesis.Tensor) -> float:
    a = torch.from_numpy(got.detach().double().cpu().numpy())
    return float((a - torch.from_numpy(ref.detach().cpu().numpy())).abs().max())


@pytest.mark.parametrize("autocast", [False, True])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_the_mlp_recomputes_its_activation_with_eagers_values(device: str, autocast: bool, approximate: str) -> None:
    genesis.manual_seed(0)
    block = _mlp(16, approximate).to(device)
    exact = copy.deepcopy(block).double()
    compiled = genesis.compile(block)
    for _ in range(3):  # capture, then replays
        tx, up = torch.randn(3, 5, 16), torch.randn(3, 5, 16)
        xe, xc, x64 = g(tx, device, True), g(tx, device, True), g(tx.double(), device, True)
        outs = []
        for model, x in ((block, xe), (compiled, xc)):
            with genesis.autocast(device, dtype=genesis.bfloat16, enabled=autocast):
                out = model(x)
            (out.float() * g(up, device)).sum().backward()
            outs.append((out, x.grad, *[p.grad.clone() for p in block.parameters()]))
            block.zero_grad()
        ref = exact(x64)
        (ref * g(up.double(), device)).sum().backward()
        refs = (ref, x64.grad, *[p.grad for p in exact.parameters()])
        exact.zero_grad()
        for eager, fused, want in zip(*outs, refs):
            assert fused.dtype == eager.dtype
            bound = 1e-5 if not autocast else 2 * _error(eager, want) + 1e-3 * float(want.abs().max())
            assert _error(fused, want) <= max(bound, 1e-5), (eager.shape, autocast)
    ops = _ops(compiled)
    assert [op.label for op in ops] == ["Linear", ("GeluTanh" if approximate == "tanh" else "Gelu") + "+Linear"]
    assert ops[0].cls is RecastLinear and ops[1].cls is ActivationLinear and ops[1].args[-1] is True


def test_an_activation_read_twice_or_returned_is_kept(device: str) -> None:
    lin1, lin2 = nn.Linear(8, 8).to(device), nn.Linear(8, 8).to(device)

    def read_twice(x):
        a = genesis.nn.functional.gelu(lin1(x))
        return lin2(a) + a

    def returned(x):
        a = genesis.nn.functional.silu(lin1(x))
        return lin2(a), a

    for fn in (read_twice, returned):
        compiled = genesis.compile(fn)
        x = g(torch.randn(4, 8), device, True)
        for _ in range(2):
            want, got = fn(x), compiled(x)
            pairs = zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,))
            for a, b in pairs:
                assert torch.allclose(
                    torch.from_numpy(a.detach().cpu().numpy()), torch.from_numpy(b.detach().cpu().numpy())
                )
        classes = [op.cls for op in _ops(compiled)]
        assert ActivationLinear not in classes and RecastLinear in classes, classes
        genesis.compiler.reset()


def test_a_computed_weight_keeps_its_cast(device: str) -> None:
    """A weight made inside the graph does not live anyway: keeping it instead of its cast would hold more."""
    w = nn.Parameter(g(torch.randn(6, 8), device))

    def fn(x):
        return genesis.nn.functional.linear(x, w * 2.0)

    compiled = genesis.compile(fn)
    x = g(torch.randn(3, 8), device, True)
    for _ in range(2):
        with genesis.autocast(device, dtype=genesis.bfloat16):
            got = compiled(x)
            want = fn(x)
        assert torch.equal(torch.from_numpy(got.detach().float().cpu().numpy()),
                           torch.from_numpy(want.detach().float().cpu().numpy()))  # fmt: skip
    classes = [op.cls for op in _ops(compiled)]
    assert Linear in classes and RecastLinear not in classes, classes
