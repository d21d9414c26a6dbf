"""genesis.compile under autocast: pointwise chains fuse with the casts autocast would insert (the
"float32" policy's), against eager genesis under the
same autocast (bf16 tolerance: the fused chain rounds once where eager rounds after every op) and
against torch's autocast for the outputs' dtypes."""

from __future__ import annotations

import copy

import pytest
import torch
from nn_helpers import assert_close, g

import genesis
import genesis.nn as nn

BF16 = {"rtol": 2e-2, "atol": 2e-2}


@pytest.fixture(autouse=True)
def _fresh_compiler():
    yield
    genesis.compiler.reset()


def _labels(compiled) -> str:
    return "\n".join(graph.describe() for graph in compiled.graphs)


def _autocast(device: str):
    return genesis.autocast(device, dtype=genesis.bfloat16)


def _chain(block, x):
    h = block(x)
    return (h + x).exp() * 0.5 - (h.abs() + 1.0).rsqrt()


def _max_error(got, ref) -> float:
    return float((torch.from_numpy(got.detach().double().cpu().numpy()) - ref).abs().max())


def test_pointwise_chains_around_linears_fuse_under_autocast_as_eager(device: str) -> None:
    """The fused chain against a float64 reference of the same weights, no further from it than eager under
    the same autocast is (twice eager's error at most, with a floor): eager rounds to bf16 after every op,
    the fused chain once, so on a given element either may land nearer the exact value."""
    torch.manual_seed(0)
    genesis.manual_seed(0)
    block = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16)).to(device)
    exact = copy.deepcopy(block).double()

    def fn(x):
        return _chain(block, x)

    compiled = genesis.compile(fn)
    for _ in range(2):
        tx, upstream = torch.rand(6, 16) + 0.5, torch.rand(6, 16)
        xe, xc, x64 = g(tx, device, True), g(tx, device, True), g(tx.double(), device, True)
        with _autocast(device):  # separate regions: each casts the weights (the cast cache is per region)
            want = fn(xe)
        with _autocast(device):
            out = compiled(xc)
        assert out.dtype == want.dtype == genesis.float32  # exp and rsqrt run in float32 under autocast
        ref = _chain(exact, x64)
        (ref * g(upstream.double(), device)).sum().backward()
        (want * g(upstream, device)).sum().backward()
        eager_grads = [p.grad for p in block.parameters()]
        block.zero_grad()
        (out * g(upstream, device)).sum().backward()
        pairs = [(out, want, ref), (xc.grad, xe.grad, x64.grad)]
        pairs += list(zip([p.grad for p in block.parameters()], eager_grads, [p.grad for p in exact.parameters()]))
        for fused, eager, reference in pairs:
            assert fused.dtype == genesis.float32
            reference = torch.from_numpy(reference.detach().cpu().numpy())
            bound = 2 * _max_error(eager, reference) + 2e-3 * float(reference.abs().max())
            assert _max_error(fused, reference) <= bound
        block.zero_grad()
        exact.zero_grad()
    labels = _labels(compiled)
    # each Linear keeps its float32 bias in the matmul's epilogue (no Add of it in a chain); the second reads the
    # GELU, which it recomputes in backward (compile/recompute.py)
    linears = [line for line in labels.splitlines() if "= Linear(" in line or "= Gelu+Linear(" in line]
    assert len(linears) == 2 and all("None" not in line for line in linears), labels
    assert "= Gelu(" not in labels, labels
    fused = [line for line in labels.splitlines() if "FusedPointwise[" in line]
    assert not any("FusedPointwise[Add -> Cast" in line for line in fused), labels
    assert any("Exp" in line for line in fused) and any("Rsqrt" in line for line in fused)  # float32 policy


def test_autocast_chain_outputs_keep_eagers_dtypes_and_values(device: str) -> None:
    def fn(x, w):
        y = x @ w  # bf16 under autocast
        return y.sigmoid() * 2.0 + 1.0, (y * 0.5).exp() - 1.0  # bf16, and float32 (exp's policy)

    compiled = genesis.compile(fn)
    tx, tw = torch.rand(4, 8), torch.rand(8, 8)
    for _ in range(2):
        x, w = g(tx, device), g(tw, device)
        with _autocast(device):
            outs, wants = compiled(x, w), fn(x, w)
        for out, want in zip(outs, wants):
            assert out.dtype == want.dtype
            assert_close(out.float(), torch.from_numpy(want.float().cpu().numpy()), **BF16)
    assert [o.dtype for o in outs] == [genesis.bfloat16, genesis.float32]
    assert _labels(compiled).count("FusedPointwise") == 2
