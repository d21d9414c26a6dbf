"""genesis.compile around graph breaks (torch's behaviour): the ops before a host read are one compiled
graph, the read runs eagerly, the ops after it are another graph chosen by the value read; both are
replayed on later calls. Results and gradients against torch on the same values."""

from __future__ import annotations

import warnings

import pytest
import torch
from nn_helpers import assert_close, g

import genesis


@pytest.fixture(autouse=True)
def _fresh_compiler():
    limit = genesis.compiler.config.recompile_limit
    yield
    genesis.compiler.config.recompile_limit = limit
    genesis.compiler.reset()


def _with_max(shape: tuple[int, ...], top: float) -> torch.Tensor:
    """Fresh random values in (-1, 1) whose largest magnitude is ``top`` (so ``.abs().max().item()``
    reads the same value on every call)."""
    t = torch.rand(*shape) * 1.8 - 0.9
    t.view(-1)[3] = top
    return t


def test_item_in_the_middle_matches_torch_values_and_gradients(device: str) -> None:
    runs = []

    def fn(x, w):
        runs.append(1)  # Python side effect: runs only while a call is captured
        h = (x * w + 1.0).tanh()
        scale = h.abs().max().item()  # host read: a graph break
        return (h / scale).sigmoid() * w

    def fn_torch(x, w):
        h = (x * w + 1.0).tanh()
        return (h / h.abs().max().item()).sigmoid() * w

    compiled = genesis.compile(fn)
    tw = torch.randn(4, requires_grad=True)
    for _ in range(3):
        tx = _with_max((3, 4), 3.0).requires_grad_()
        x, w = g(tx, device, True), g(tw.detach(), device, True)
        out = compiled(x, w)
        want = fn_torch(tx, tw)
        assert_close(out, want)
        weight = torch.randn(3, 4)
        (out * g(weight, device)).sum().backward()
        tw.grad = None
        (want * weight).sum().backward()
        assert_close(x.grad, tx.grad)
        assert_close(w.grad, tw.grad)
    # the tanh value read differs by input, so each new value captured its piece after the read
    assert len(compiled.graph_breaks) == 1 and "Tensor.item()" in compiled.graph_breaks[0].reason
    assert len(compiled.graphs) >= 2


def test_item_with_the_same_value_replays_both_pieces_without_python(device: str) -> None:
    runs = []

    def fn(x):
        runs.append(1)
        scale = x.abs().max().item()
        return (x / scale).exp() - x

    compiled = genesis.compile(fn)
    for _ in range(3):
        tx = _with_max((3, 5), 2.5)
        assert_close(compiled(g(tx, device)), (tx / 2.5).exp() - tx)
    assert len(runs) == 1  # captured once, then the two graphs replayed
    before, after = compiled.graphs
    assert "Abs" in before.describe() and "Exp" in after.describe()


def test_data_dependent_branch_chooses_the_piece_captured_for_the_value(device: str) -> None:
    runs = []

    def fn(x):
        runs.append(1)
        y = x * 2
        if y.sum() > 0:  # bool(tensor): the branch taken depends on the value
            return (y + 1).relu()
        return (y - 1).sigmoid()

    compiled = genesis.compile(fn)
    for sign in (1.0, -1.0, 1.0, -1.0, 1.0):
        tx = (torch.rand(2, 3) + 0.1) * sign
        ty = tx * 2
        want = (ty + 1).relu() if ty.sum() > 0 else (ty - 1).sigmoid()
        assert_close(compiled(g(tx, device)), want)
    assert len(runs) == 2  # one capture per branch; later calls replay the piece the value picks
    assert len(compiled.graphs) == 3  # the piece before the test and one after it per branch
    assert "__bool__" in compiled.graph_breaks[0].reason


def test_many_values_hit_the_recompile_limit_and_run_eagerly(device: str) -> None:
    genesis.compiler.config.recompile_limit = 2

    def fn(x):
        return x * x.sum().item()

    compiled = genesis.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            tx = torch.randn(3)
            assert_close(compiled(g(tx, device)), tx * tx.sum().item())
    assert any("recompile_limit" in str(w.message) for w in caught)
    assert len(compiled.graphs) == 3  # the piece before the read and the two paths captured


def test_host_read_after_a_parameter_write_runs_eagerly(device: str) -> None:
    bn = genesis.nn.BatchNorm1d(3).to(device)
    tbn = torch.nn.BatchNorm1d(3)

    def fn(x):
        y = bn(x)  # training mode: writes the running statistics in place
        return y * y.abs().max().item()

    compiled = genesis.compile(fn)
    for _ in range(2):
        tx = torch.randn(4, 3)
        ty = tbn(tx)
        assert_close(compiled(g(tx, device)), ty * ty.abs().max().item())
        assert_close(bn.running_mean, tbn.running_mean)  # updated once a call, not twice
    (broken,) = compiled.graph_breaks
    assert "in-place write" in broken.reason and compiled.graphs == []


def test_fullgraph_still_raises_at_an_item(device: str) -> None:
    def fn(x):
        return x / x.abs().max().item()

    with pytest.raises(genesis.compiler.Unsupported, match=r"Tensor\.item\(\)"):
        genesis.compile(fn, fullgraph=True)(genesis.randn(3, device=device))
