"""genesis.compile fuses dropout into the generated pointwise kernels: eager F.dropout's ops become the
program's Philox dropout (a fresh mask per call from the device's generator, redrawn in the backward).
The masks are not eager's, so these tests check what must hold of any mask: the keep rate, the
scaling, fresh masks per call, determinism under manual_seed, and gradients that use the forward's mask.
Eval mode and p = 0 record no dropout at all (compared with torch)."""

from __future__ import annotations

import numpy as np
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


def _chain(x, w, p=0.3):
    return F.dropout((x * w).tanh(), p) * 3.0 + 1.0


def _labels(compiled) -> str:
    return "\n".join(graph.describe() for graph in compiled.graphs)


def test_dropout_in_a_chain_fuses_with_torch_statistics_and_scaling(device: str) -> None:
    p = 0.3
    compiled = genesis.compile(_chain)
    tx, tw = torch.randn(64, 96), torch.randn(96)
    x, w = g(tx, device), g(tw, device)
    outs = [compiled(x, w).cpu().numpy() for _ in range(3)]
    assert "FusedPointwise[Mul -> Tanh -> Dropout(p=0.3) -> Mul -> Add]" in _labels(compiled)
    kept_value = ((tx * tw).tanh() * (3.0 / (1 - p)) + 1.0).numpy()
    for out in outs:
        dropped = np.isclose(out, 1.0, rtol=0, atol=1e-6) & ~np.isclose(kept_value, 1.0, rtol=0, atol=1e-6)
        kept = ~dropped
        assert abs(dropped.mean() - p) < 0.03  # 6,144 draws: the standard error is 0.006
        np.testing.assert_allclose(out[kept], kept_value[kept], rtol=1e-5, atol=1e-6)
    assert not np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[1], outs[2])  # fresh masks


def test_dropout_masks_are_deterministic_under_manual_seed(device: str) -> None:
    compiled = genesis.compile(_chain)
    x, w = g(torch.randn(16, 24), device), g(torch.randn(24), device)
    compiled(x, w)  # the capture's run (eager ops)
    genesis.manual_seed(1234)
    first = compiled(x, w).cpu().numpy()
    genesis.manual_seed(1234)
    again = compiled(x, w).cpu().numpy()
    np.testing.assert_array_equal(first, again)


def test_dropout_gradients_use_the_forwards_mask(device: str) -> None:
    p = 0.4
    compiled = genesis.compile(lambda x, w: F.dropout((x * w).tanh(), p) * 3.0)
    tx, tw = torch.randn(20, 30, dtype=torch.float64), torch.randn(30, dtype=torch.float64)
    for _ in range(2):
        x, w = g(tx, device, True), g(tw, device, True)
        out = compiled(x, w)
        upstream = torch.rand(20, 30, dtype=torch.float64) + 0.5
        (out * g(upstream, device)).sum().backward()
        # Reference: torch's autograd through the same mask (read off the output: nonzero where kept).
        keep = torch.from_numpy(out.detach().cpu().numpy() != 0).to(torch.float64)
        rx, rw = tx.clone().requires_grad_(), tw.clone().requires_grad_()
        want = (rx * rw).tanh() * keep / (1 - p) * 3.0
        (want * upstream).sum().backward()
        assert_close(out, want.detach())
        assert_close(x.grad, rx.grad)
        assert_close(w.grad, rw.grad)
        assert np.array_equal(x.grad.cpu().numpy() == 0, keep.numpy() == 0)
        assert 0.25 < 1 - keep.mean().item() < 0.55


def test_dropout_on_its_own_between_matmuls_runs_the_one_op_program(device: str) -> None:
    p = 0.5

    def fn(x, w):
        dropped = F.dropout(x @ w, p)
        return dropped, dropped @ w.T

    compiled = genesis.compile(fn)
    tx, tw = torch.randn(32, 16, dtype=torch.float64), torch.randn(16, 24, dtype=torch.float64)
    for _ in range(2):
        x, w = g(tx, device, True), g(tw, device, True)
        dropped, out = compiled(x, w)
        out.sum().backward()
        keep = torch.from_numpy(dropped.detach().cpu().numpy() != 0).to(torch.float64)  # the forward's mask
        rx, rw = tx.clone().requires_grad_(), tw.clone().requires_grad_()
        want = (rx @ rw) * keep / (1 - p) @ rw.T
        want.sum().backward()
        assert_close(out, want.detach())
        assert_close(x.grad, rx.grad)
        assert_close(w.grad, rw.grad)
        assert 0.4 < keep.mean().item() < 0.6
    assert "Dropout(p=0.5)" in _labels(compiled)


def test_eval_mode_and_p_zero_remove_dropout_and_equal_torch(device: str) -> None:
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 4))
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Dropout(0.2), nn.Linear(16, 4)).to(device)
    model.load_state_dict({k: g(v, device) for k, v in tmodel.state_dict().items()})
    model.eval()
    tmodel.eval()
    compiled = genesis.compile(model)
    for _ in range(2):
        tx = torch.randn(5, 8)
        assert_close(compiled(g(tx, device)), tmodel(tx), atol=1e-5, rtol=1e-5)
    assert "Dropout" not in _labels(compiled._compiled) and "bernoulli" not in _labels(compiled._compiled)
    zero = genesis.compile(lambda x: F.dropout(x.sigmoid(), 0.0) * 2.0)
    tx = torch.randn(4, 6)
    assert_close(zero(g(tx, device)), tx.sigmoid() * 2.0)
    assert "Dropout" not in _labels(zero)


def test_training_module_with_dropout_fuses_it_after_the_activation(device: str) -> None:
    model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Dropout(0.25)).to(device)
    compiled = genesis.compile(model)
    x = g(torch.randn(40, 12), device)
    compiled(x)
    out = compiled(x).detach().cpu().numpy()
    eager = model[1](model[0](x)).detach().cpu().numpy() / 0.75
    kept = out != 0
    assert abs(1 - kept.mean() - 0.25) < 0.05
    np.testing.assert_allclose(out[kept], eager[kept], rtol=1e-5, atol=1e-6)
    assert "FusedPointwise[Gelu -> Dropout(p=0.25)]" in _labels(compiled._compiled)  # the bias stays in the matmul
