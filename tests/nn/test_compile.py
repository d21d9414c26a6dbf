"""genesis.compile's contract (torch.compile's): the forms (function, decorator, module, Module.compile),
replay of the captured graph, guards and recompiles, the recompile limit's fallback, reset, graph breaks
(host reads, data-dependent control flow) and fullgraph=True, argument errors, GENESIS_COMPILE_DEBUG.
Results and gradients are compared with torch on the same values and with eager genesis."""

from __future__ import annotations

import warnings

import pytest
import torch
from nn_helpers import assert_close, g, to_torch

import genesis
import genesis.nn as nn


@pytest.fixture(autouse=True)
def _fresh_compiler():
    limit = genesis.compiler.config.recompile_limit
    yield
    genesis.compiler.config.recompile_limit = limit
    genesis.compiler.reset()


def _pointwise(x, w):
    return (genesis.nn.functional.gelu(x * w + 1.0) - x.sigmoid() / 2).tanh()


def _pointwise_torch(x, w):
    return (torch.nn.functional.gelu(x * w + 1.0) - x.sigmoid() / 2).tanh()


def test_function_replays_the_graph_with_torch_values_and_gradients(device: str) -> None:
    calls = []

    def fn(x, w):
        calls.append(1)  # a Python side effect: runs at capture only, the replay runs the graph
        return _pointwise(x, w)

    compiled = genesis.compile(fn)
    for _ in range(3):
        tx, tw = torch.randn(5, 7, requires_grad=True), torch.randn(7, requires_grad=True)
        x, w = g(tx, device, True), g(tw, device, True)
        out = compiled(x, w)
        want = _pointwise_torch(tx, tw)
        assert_close(out, want)
        weight = torch.randn(5, 7)
        (out * g(weight, device)).sum().backward()
        (want * weight).sum().backward()
        assert_close(x.grad, tx.grad)
        assert_close(w.grad, tw.grad)
    assert len(calls) == 1 and len(compiled.graphs) == 1


def test_decorator_forms(device: str) -> None:
    @genesis.compile
    def plain(x):
        return x.relu() * 3

    @genesis.compile(fullgraph=True, backend="eager")
    def configured(x):
        return x.silu() + x

    tx = torch.randn(4, 6)
    x = g(tx, device)
    for _ in range(2):
        assert_close(plain(x), tx.relu() * 3)
        assert_close(configured(x), torch.nn.functional.silu(tx) + tx)
    assert plain.__name__ == "plain" and len(plain.graphs) == len(configured.graphs) == 1


def _mlp():
    return nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 6))


def test_module_keeps_its_parameters_and_state_dict_keys_as_torch(device: str) -> None:
    m = _mlp().to(device)
    compiled = genesis.compile(m)
    assert compiled._orig_mod is m
    tm = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.GELU(), torch.nn.Linear(12, 6))
    assert list(compiled.state_dict()) == list(torch.compile(tm).state_dict())  # "_orig_mod." prefixed
    m.tag = "mlp"
    assert compiled.tag == "mlp"  # other attributes are the module's
    x = genesis.randn(3, 6, device=device)
    assert_close(compiled(x), to_torch(m(x)))
    assert_close(compiled(x), to_torch(m(x)))
    m2 = _mlp().to(device)
    keys = list(m2.state_dict())
    eager = to_torch(m2(x))
    assert m2.compile() is None
    assert list(m2.state_dict()) == keys
    assert_close(m2(x), eager)
    assert_close(m2(x), eager)
    assert len(m2.forward.graphs) == 1


def test_the_same_tensor_passed_twice_is_guarded(device: str) -> None:
    compiled = genesis.compile(lambda a, b: a * 2 + b)
    tx, ty = torch.randn(3), torch.randn(3)
    x, y = g(tx, device), g(ty, device)
    assert_close(compiled(x, x), tx * 2 + tx)
    assert_close(compiled(x, y), tx * 2 + ty)  # not the graph of (x, x)
    assert len(compiled.graphs) == 2


def test_parameters_are_read_live_after_an_optimizer_step(device: str) -> None:
    m = _mlp().to(device)
    compiled = genesis.compile(m)
    opt = genesis.optim.SGD(m.parameters(), lr=0.1)
    x = genesis.randn(4, 6, device=device)
    for _ in range(3):
        out = compiled(x)
        assert_close(out, to_torch(m(x)))
        out.square().sum().backward()
        opt.step()
        opt.zero_grad()


def test_guards_recompile_on_shape_dtype_requires_grad_grad_mode_autocast_and_training(device: str) -> None:
    m = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.ReLU()).to(device)
    # unfused replay: its dropout draws as eager does under the same seed (fused masks differ; see
    # test_compile_dropout.py)
    compiled = genesis.compile(m, backend="aot_eager")
    x = genesis.randn(3, 4, device=device)

    def check(x, expected_graphs):
        genesis.manual_seed(7)
        out = compiled(x)
        genesis.manual_seed(7)
        assert_close(out, to_torch(m(x)))
        assert out.requires_grad
        assert len(compiled._compiled.graphs) == expected_graphs

    check(x, 1)
    check(x, 1)  # guards pass: the same graph
    check(genesis.randn(5, 4, device=device), 2)  # shape
    m.eval()
    check(x, 3)  # training flag
    m.train()
    with genesis.no_grad():
        out = compiled(x)
        assert not out.requires_grad
    assert len(compiled._compiled.graphs) == 4  # grad mode
    x64 = genesis.randn(3, 4, device=device, dtype=genesis.float64)
    m.double()
    check(x64, 5)  # dtype
    check(x64.requires_grad_(), 6)  # requires_grad
    m.float()
    with genesis.autocast(device_type=device, dtype=genesis.bfloat16):
        genesis.manual_seed(1)
        out = compiled(x)
        genesis.manual_seed(1)
        want = m(x)
    assert out.dtype == want.dtype == genesis.bfloat16
    assert_close(out.float(), to_torch(want.float()))
    assert len(compiled._compiled.graphs) == 7  # autocast


def test_recompile_limit_falls_back_to_eager_with_a_warning_and_reset_starts_over(device: str) -> None:
    genesis.compiler.config.cache_size_limit = 2  # torch._dynamo.config's older name
    assert genesis.compiler.config.recompile_limit == 2
    compiled = genesis.compile(lambda x: x * 2 + 1)
    shapes = [(1,), (2,), (3,), (4,)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for shape in shapes:
            tx = torch.randn(*shape)
            assert_close(compiled(g(tx, device)), tx * 2 + 1)
    assert [str(w.message).count("recompile_limit (2)") for w in caught] == [1]  # warned once
    assert len(compiled.graphs) == 2
    genesis.compiler.reset()
    assert compiled.graphs == []
    compiled(g(torch.randn(3), device))
    assert len(compiled.graphs) == 1


def test_graph_breaks_give_correct_results_and_name_the_site(device: str) -> None:
    def item_read(x):
        scale = x.abs().max().item()  # a host read
        return x / scale

    def branch(x):
        y = x * 2
        if y.sum() > 0:  # data-dependent control flow
            return y + 1
        return y - 1

    compiled_item, compiled_branch = genesis.compile(item_read), genesis.compile(branch)
    for sign in (1.0, -1.0, 1.0):
        tx = torch.rand(3, 4) * sign + 0.1 * sign
        x = g(tx, device)
        assert_close(compiled_item(x), tx / tx.abs().max())
        assert_close(compiled_branch(x), tx * 2 + 1 if (tx * 2).sum() > 0 else tx * 2 - 1)
    (b1,) = compiled_item.graph_breaks
    (b2,) = compiled_branch.graph_breaks
    assert "Tensor.item()" in b1.reason and "test_compile.py" in b1.site and "item_read" in b1.site
    assert "__bool__" in b2.reason and "in branch" in b2.site


def test_fullgraph_raises_unsupported_naming_the_op_and_the_line(device: str) -> None:
    def fn(x):
        return x * x.sum().tolist()

    line = fn.__code__.co_firstlineno + 1
    x = genesis.randn(3, device=device)
    with pytest.raises(genesis.compiler.Unsupported, match=rf"Tensor\.tolist\(\).*test_compile\.py:{line} in fn"):
        genesis.compile(fn, fullgraph=True)(x)
    assert issubclass(genesis.compiler.Unsupported, RuntimeError)
    x.add_(1.0)  # the capture's hooks are gone: eager code is unaffected
    assert genesis.compiler.is_compiling() is False


def test_argument_errors_as_torch() -> None:
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        genesis.compile(lambda x: x, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        genesis.compile(lambda x: x, mode="default", options={})
    with pytest.raises(RuntimeError, match="Invalid backend: 'nope'"):
        genesis.compile(lambda x: x, backend="nope")
    with pytest.raises(AssertionError, match="A callable function is expected"):
        genesis.compile(3)
    fn = lambda x: x
    assert genesis.compile(fn, disable=True) is fn


def test_debug_environment_variable_writes_graphs_and_kernel_sources(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GENESIS_COMPILE_DEBUG", str(tmp_path))
    compiled = genesis.compile(_pointwise)
    compiled(genesis.randn(2, 3), genesis.randn(3))
    graphs = sorted(tmp_path.glob("graph_*.txt"))
    kernels = sorted(tmp_path.glob("fused_*.py"))
    assert graphs and "FusedPointwise" in graphs[0].read_text()
    forward = [k for k in kernels if not k.stem.endswith("_backward")]
    assert forward and len(kernels) == 2 * len(forward)  # each fused kernel with its gradient kernel
    assert all("@triton.jit" in k.read_text() for k in kernels)
