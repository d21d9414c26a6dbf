"""genesis.compile on models: a GPT-style MLP block against torch (values and gradients, with the bias +
GELU chain fused), examples/train_gpt.py's GPT compiled against eager over AdamW steps (with dropout:
the same masks given the same seed), fused activation chains with casts, and the fusion pass on a
hand-built graph (plain data)."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from nn_helpers import assert_close, copy_weights, g, to_torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis_autograd.compile import Graph, Op, Ref, fuse_pointwise, fused_programs, replay
from genesis_autograd.functions.activation import Gelu
from genesis_autograd.functions.elementwise import Add, Mul
from genesis_autograd.functions.fused_pointwise import FusedPointwise
from genesis_autograd.functions.matmul import Linear


@pytest.fixture(autouse=True)
def _fresh_compiler():
    yield
    genesis.compiler.reset()


class MLPBlock(nn.Module):
    """GPT's MLP with its residual: x + c_proj(gelu(c_fc(x)))."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class TorchMLPBlock(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.c_fc = torch.nn.Linear(width, 4 * width)
        self.c_proj = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.c_proj(torch.nn.functional.gelu(self.c_fc(x), approximate="tanh"))


def _labels(graph: Graph) -> list[str]:
    return [op.label for op in graph.ops]


def test_mlp_block_matches_torch_with_the_biases_in_the_matmuls(device: str) -> None:
    tm = TorchMLPBlock(8)
    m = MLPBlock(8).to(device)
    copy_weights(tm, m)
    compiled = genesis.compile(m)
    for _ in range(3):
        tx = torch.randn(2, 5, 8, requires_grad=True)
        x = g(tx, device, True)
        out = compiled(x)
        want = tm(tx)
        assert_close(out, want)
        w = torch.randn(2, 5, 8)
        (out * g(w, device)).sum().backward()
        (want * w).sum().backward()
        assert_close(x.grad, tx.grad)
        for p, tp in zip(m.parameters(), tm.parameters()):
            assert_close(p.grad, tp.grad)
    (graph,) = compiled._compiled.graphs
    labels = _labels(graph)
    # a lone GELU between two Linears: no chain to fuse, and each bias stays in its matmul's epilogue (a chain's
    # backward would write the bias gradient at the activation's full size: fusion.py); the second Linear
    # recomputes the GELU in its backward instead of keeping its output (compile/recompute.py)
    assert labels == ["Linear", "GeluTanh+Linear", "Add"]
    assert all(op.args[2] is not None for op in graph.ops if op.label.endswith("Linear"))


def test_activation_chains_with_casts_fuse_and_match_torch(device: str) -> None:
    def chain(x, y):
        a = (x * y).to(genesis.float64).sigmoid().to(genesis.float32)
        return (a - y.tanh()).relu() + F.silu(x) / 3

    def chain_torch(x, y):
        a = (x * y).double().sigmoid().float()
        return (a - y.tanh()).relu() + torch.nn.functional.silu(x) / 3

    compiled = genesis.compile(chain)
    for _ in range(2):
        tx, ty = torch.randn(4, 6, requires_grad=True), torch.randn(6, requires_grad=True)
        x, y = g(tx, device, True), g(ty, device, True)
        out, want = compiled(x, y), chain_torch(tx, ty)
        assert_close(out, want)
        out.sum().backward()
        want.sum().backward()
        assert_close(x.grad, tx.grad)
        assert_close(y.grad, ty.grad)
    (graph,) = compiled.graphs
    assert [op.cls for op in graph.ops].count(FusedPointwise) >= 1
    assert sum(len(p.nodes) for p in fused_programs(graph)) > 6


def _gpt_example():
    path = Path(__file__).resolve().parents[2] / "examples" / "train_gpt.py"
    spec = importlib.util.spec_from_file_location("train_gpt_for_compile", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize(("backend", "dropout"), [("inductor", 0.0), ("aot_eager", 0.1)])
def test_gpt_example_compiled_matches_eager_over_adamw_steps(device: str, backend: str, dropout: float) -> None:
    """Fused (no dropout: the fused kernels draw their own masks, test_compile_dropout.py checks those)
    and unfused with dropout (the replay draws as eager does), against eager over AdamW steps."""
    example = _gpt_example()
    genesis.manual_seed(0)
    config = example.GPTConfig(vocab_size=19, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=dropout)
    eager = example.GPT(config).to(device)
    twin = copy.deepcopy(eager)
    compiled = genesis.compile(twin, backend=backend)
    opt_e = genesis.optim.AdamW(eager.parameters(), lr=1e-2)
    opt_c = genesis.optim.AdamW(twin.parameters(), lr=1e-2)
    for step in range(3):
        x = genesis.randint(0, 19, (2, 8), device=device)
        y = genesis.randint(0, 19, (2, 8), device=device)
        genesis.manual_seed(100 + step)  # the same dropout masks: the replay draws as eager does
        logits_e, loss_e = eager(x, y)
        genesis.manual_seed(100 + step)
        logits_c, loss_c = compiled(x, y)
        assert_close(loss_c, to_torch(loss_e), rtol=1e-5, atol=1e-5)
        assert_close(logits_c, to_torch(logits_e), rtol=1e-5, atol=1e-5)
        loss_e.backward()
        loss_c.backward()
        for pe, pc in zip(eager.parameters(), twin.parameters()):
            assert_close(pc.grad, to_torch(pe.grad), rtol=1e-5, atol=1e-5)
        for opt in (opt_e, opt_c):
            opt.step()
            opt.zero_grad()
    (graph,) = compiled._compiled.graphs
    labels = _labels(graph)
    fused = labels.count("AddLayerNorm")
    assert fused == (2 * config.n_layer if backend == "inductor" else 0)  # each residual add + the next norm
    assert not compiled._compiled.graph_breaks


def test_fusion_pass_on_a_hand_built_graph() -> None:
    """Linear(x, w, b) -> gelu -> * 2 -> + x, the product also returned: the bias stays in the Linear, the
    chain starts at the GELU, and the chain's outputs are the values read after it."""
    f32 = genesis.float32
    meta = {i: ((3, 4), f32) for i in range(8)}
    meta.update({1: ((4, 4), f32), 2: ((4,), f32)})
    ops = [
        Op(Linear.apply, (Ref(0), Ref(1), Ref(2)), {}, Ref(3), "Linear", Linear),
        Op(Gelu.apply, (Ref(3),), {}, Ref(4), "Gelu", Gelu),
        Op(Mul.apply, (Ref(4), 2.0), {}, Ref(5), "Mul", Mul),
        Op(Add.apply, (Ref(5), Ref(0)), {}, Ref(6), "Add", Add),
    ]
    x, w, b = genesis.randn(3, 4), genesis.randn(4, 4), genesis.randn(4)
    graph = Graph([0], {1: w, 2: b}, ops, (Ref(6), Ref(5)), 7, meta)
    graph.plan()
    fuse_pointwise(graph)
    assert _labels(graph) == ["Linear", "FusedPointwise[Gelu -> Mul -> Add]"]
    linear, fused = graph.ops
    assert linear.args[2] == Ref(2) and fused.outputs == (Ref(5), Ref(6))
    assert fused.args[4:] == (linear.outputs, Ref(0))  # inputs: the biased product, x
    (program,) = fused_programs(graph)
    assert program.n_inputs == 2 and len(program.outputs) == 2
    out, product = replay(graph, [x])
    want_product = F.gelu(F.linear(x, w, b)) * 2.0
    assert_close(product, to_torch(want_product))
    assert_close(out, to_torch(want_product + x))
