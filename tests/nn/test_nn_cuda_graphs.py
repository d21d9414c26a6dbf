"""CUDA graphs through genesis.cuda: torch's API, capture and replay against eager runs.

CPU tier: the API surface (torch's names and signatures), the clear errors where there is no GPU,
and the optimizers' refusal to be captured with host-side step counters. GPU tier: every replay is
compared with an eager computation of the same kernels on fresh random data copied into the static
inputs, bit for bit (no atomics in these kernels: the same launches give the same bits).
"""

from __future__ import annotations

import copy
import inspect
import sys

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from device_support import HAS_CUDA, requires_cuda
from genesis.optim import optimizer as optimizer_module


def cuda_only(test):
    """The GPU tier's marks (skipped, with the reason shown, on a machine without a GPU)."""
    for mark in requires_cuda:
        test = mark(test)
    return test


def npy(t: genesis.Tensor) -> np.ndarray:
    return np.array(t.detach().cpu().numpy())


def assert_bitwise(actual: genesis.Tensor, expected: genesis.Tensor, what: str = "") -> None:
    a, e = npy(actual), npy(expected)
    assert a.shape == e.shape and a.dtype == e.dtype, (what, a.shape, e.shape, a.dtype, e.dtype)
    if not np.array_equal(a, e, equal_nan=True):
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64)).max()
        raise AssertionError(f"{what}: replay differs from eager (max |diff| {diff})")


def randn(*shape, dtype=None) -> genesis.Tensor:
    return genesis.randn(*shape, device="cuda", dtype=dtype or genesis.float32)


def warm_up(fn, iters: int = 3) -> None:
    """torch's recipe: run the work a few times on a side stream before capturing it."""
    s = genesis.cuda.Stream()
    s.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(s):
        for _ in range(iters):
            fn()
    genesis.cuda.current_stream().wait_stream(s)


# ----------------------------------------------------------------------------------------------- CPU tier
def test_api_has_torch_names_and_signatures():
    for name in ("CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"):
        assert name in genesis.cuda.__all__ and hasattr(genesis.cuda, name), name
    pairs = [
        (genesis.cuda.CUDAGraph.capture_begin, torch.cuda.CUDAGraph.capture_begin),
        (genesis.cuda.graph.__init__, torch.cuda.graph.__init__),
        (genesis.cuda.make_graphed_callables, torch.cuda.make_graphed_callables),
        (genesis.cuda.CUDAGraph.debug_dump, torch.cuda.CUDAGraph.debug_dump),
    ]
    for ours, theirs in pairs:
        mine = list(inspect.signature(ours).parameters.values())
        ref = list(inspect.signature(theirs).parameters.values())
        # torch's leading parameters, same names and defaults, in torch's order (torch has a few newer
        # debugging flags at the end that genesis does not offer)
        for p, q in zip(mine, ref):
            assert (p.name, p.default) == (q.name, q.default), (ours, p, q)
        assert len(mine) <= len(ref)
    for method in ("capture_begin", "capture_end", "replay", "reset", "pool", "enable_debug_mode", "debug_dump"):
        assert callable(getattr(genesis.cuda.CUDAGraph, method)), method
    h1, h2 = genesis.cuda.graph_pool_handle(), genesis.cuda.graph_pool_handle()
    assert isinstance(h1, tuple) and h1 != h2


@pytest.mark.skipif(HAS_CUDA, reason="checks the errors of a machine without a GPU")
def test_without_a_gpu_capture_raises_clearly():
    assert genesis.cuda.is_current_stream_capturing() is False
    g = genesis.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        with genesis.cuda.graph(g):
            pass
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="CUDA tensors"):
        genesis.cuda.make_graphed_callables(nn.Linear(3, 2), (genesis.randn(4, 3),))
    assert genesis.cuda.is_current_stream_capturing() is False


def test_make_graphed_callables_checks_its_arguments():
    with pytest.raises(TypeError, match="tuple of Tensors"):
        genesis.cuda.make_graphed_callables(nn.Linear(3, 2), [genesis.randn(4, 3)])
    with pytest.raises(ValueError, match="callables"):
        genesis.cuda.make_graphed_callables((nn.Linear(3, 2), nn.Linear(2, 2)), ((genesis.randn(4, 3),),))
    hooked = nn.Linear(3, 2)
    hooked.register_forward_hook(lambda m, i, o: None)
    with pytest.raises(RuntimeError, match="hooks"):
        genesis.cuda.make_graphed_callables(hooked, (genesis.randn(4, 3),))


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop"])
def test_optimizer_refuses_capture_without_capturable(monkeypatch, name):
    """Inside a capture a cpu step counter would be read once and replayed forever: torch's check."""
    p = nn.Parameter(genesis.randn(3))
    p.grad = genesis.randn(3)
    monkeypatch.setattr(optimizer_module, "is_current_stream_capturing", lambda: True)
    message = rf"capture of step\(\) for an instance of {name} but param_groups' capturable is False"
    with pytest.raises(RuntimeError, match=message):
        getattr(genesis.optim, name)([p], lr=0.1).step()
    before = npy(p)
    getattr(genesis.optim, name)([p], lr=0.1, capturable=True).step()  # allowed (runs eagerly here)
    assert not np.array_equal(npy(p), before)


def test_adagrad_refuses_capture(monkeypatch):
    from genesis.optim import adagrad

    p = nn.Parameter(genesis.randn(3))
    p.grad = genesis.randn(3)
    monkeypatch.setattr(adagrad, "is_current_stream_capturing", lambda: True)
    with pytest.raises(RuntimeError, match=r"Adagrad.*cannot be captured"):
        genesis.optim.Adagrad([p], lr=0.1).step()


# ----------------------------------------------------------------------------------------------- GPU tier
@cuda_only
def test_capture_on_the_default_stream_is_refused():
    g = genesis.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()
    assert not genesis.cuda.is_current_stream_capturing()


@cuda_only
def test_replays_run_the_work_each_time():
    x = genesis.zeros(1000, device="cuda")
    g = genesis.cuda.CUDAGraph()
    warm_up(lambda: x.add_(0))
    with genesis.cuda.graph(g):
        assert genesis.cuda.is_current_stream_capturing()
        x.add_(1)
    assert not genesis.cuda.is_current_stream_capturing()
    assert npy(x).max() == 0  # capturing ran nothing
    for _ in range(3):
        g.replay()
    genesis.cuda.synchronize()
    assert np.all(npy(x) == 3)


def _capture_and_compare(fn, make_inputs, replays: int = 3) -> None:
    """Capture out = fn(*static); for fresh inputs: copy into static, replay, compare with fn(*fresh)."""
    static = make_inputs()
    warm_up(lambda: fn(*static))
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out = fn(*static)
    outs = out if isinstance(out, tuple) else (out,)
    for _ in range(replays):
        fresh = make_inputs()
        for s, f in zip(static, fresh):
            s.copy_(f)
        g.replay()
        expected = fn(*fresh)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for i, (o, e) in enumerate(zip(outs, expected)):
            assert_bitwise(o, e, f"output {i}")


@cuda_only
def test_elementwise_chain():
    def fn(x, y):
        return ((x * y + 1).relu() - x.exp() * 0.5).tanh() / (y.abs() + 1)

    _capture_and_compare(fn, lambda: (randn(257, 129), randn(257, 129)))


@cuda_only
def test_reductions():
    def fn(x):
        return x.sum(dim=1), x.mean(dim=0), x.amax(dim=1), x.sum()

    _capture_and_compare(fn, lambda: (randn(333, 517),))


@cuda_only
def test_matmul():
    _capture_and_compare(lambda a, b: a @ b, lambda: (randn(96, 200), randn(200, 72)))


@cuda_only
def test_upload_inside_capture_is_replayed():
    """A host -> device copy made during the capture (a new constant) comes from graph-owned pinned memory."""
    values = np.random.default_rng().standard_normal(64).astype(np.float32)

    def fn(x):
        return x + genesis.tensor(values, device="cuda")

    _capture_and_compare(fn, lambda: (randn(64),))


def _mlp(width: int = 256, depth: int = 4) -> nn.Module:
    layers: list[nn.Module] = []
    for i in range(depth):
        layers.append(nn.Linear(width, width))
        if i < depth - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).to("cuda")


def _train_step(model, opt, x, y, zero_inside: bool):
    out = model(x)
    loss = F.mse_loss(out, y)
    loss.backward()
    opt.step()
    if zero_inside:
        opt.zero_grad(set_to_none=False)
    return loss


def _whole_step_capture(make_opt, zero_inside: bool, autocast: bool = False, steps: int = 4):
    """torch's whole-network recipe against an eager twin fed the same batches."""
    batch, width = 64, 256
    model = _mlp(width)
    twin = copy.deepcopy(model)
    opt, twin_opt = make_opt(model.parameters()), make_opt(twin.parameters())
    static_x, static_y = randn(batch, width), randn(batch, width)

    def step(m, o, x, y):
        if autocast:
            with genesis.autocast("cuda", dtype=genesis.bfloat16):
                out = m(x)
            loss = F.mse_loss(out.float(), y)
            loss.backward()
            o.step()
            if zero_inside:
                o.zero_grad(set_to_none=False)
            return loss
        return _train_step(m, o, x, y, zero_inside)

    batches = [(randn(batch, width), randn(batch, width)) for _ in range(3 + steps)]
    s = genesis.cuda.Stream()
    s.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(s):
        for x, y in batches[:3]:
            if not zero_inside:
                opt.zero_grad(set_to_none=True)
            static_x.copy_(x)
            static_y.copy_(y)
            step(model, opt, static_x, static_y)
    genesis.cuda.current_stream().wait_stream(s)
    for x, y in batches[:3]:
        if not zero_inside:
            twin_opt.zero_grad(set_to_none=True)
        step(twin, twin_opt, x, y)

    g = genesis.cuda.CUDAGraph()
    if not zero_inside:
        opt.zero_grad(set_to_none=True)  # backward then makes .grad in the graph's pool
    with genesis.cuda.graph(g):
        static_loss = step(model, opt, static_x, static_y)

    for x, y in batches[3:]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        if not zero_inside:
            twin_opt.zero_grad(set_to_none=True)
        loss = step(twin, twin_opt, x, y)
        np.testing.assert_allclose(npy(static_loss), npy(loss), rtol=1e-5, err_msg="loss")
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            np.testing.assert_allclose(npy(p), npy(q), rtol=1e-5, atol=1e-6, err_msg=name)
    return opt


@cuda_only
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_whole_training_step_sgd(momentum):
    _whole_step_capture(lambda ps: genesis.optim.SGD(ps, lr=0.05, momentum=momentum), zero_inside=False)


@cuda_only
@pytest.mark.parametrize("opt_name", ["Adam", "AdamW"])
def test_whole_training_step_adam_capturable(opt_name):
    opt = _whole_step_capture(
        lambda ps: getattr(genesis.optim, opt_name)(ps, lr=1e-3, capturable=True), zero_inside=True, steps=4
    )
    for state in opt.state.values():  # the device counters advanced on every replay
        assert state["step"].device.type == "cuda" and float(state["step"].item()) == 3 + 4


@cuda_only
def test_whole_training_step_under_autocast():
    _whole_step_capture(lambda ps: genesis.optim.SGD(ps, lr=0.05, momentum=0.9), zero_inside=True, autocast=True)


@cuda_only
def test_adam_without_capturable_refuses_and_next_capture_works():
    model = _mlp(64, 2)
    opt = genesis.optim.Adam(model.parameters(), lr=1e-3)
    x, y = randn(8, 64), randn(8, 64)
    warm_up(lambda: _train_step(model, opt, x, y, zero_inside=True))
    g = genesis.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="capturable is False"):
        with genesis.cuda.graph(g):
            _train_step(model, opt, x, y, zero_inside=True)
    assert not genesis.cuda.is_current_stream_capturing()
    _capture_and_compare(lambda a: a * 2 + 1, lambda: (randn(100),))


@cuda_only
@pytest.mark.parametrize("illegal", ["item", "synchronize"])
def test_illegal_op_in_capture_raises_and_next_capture_works(illegal):
    x = randn(1000)
    g = genesis.cuda.CUDAGraph()
    warm_up(lambda: (x * 2).sum())
    with pytest.raises(RuntimeError):
        with genesis.cuda.graph(g):
            y = (x * 2).sum()
            if illegal == "item":
                y.item()  # a host read-back
            else:
                genesis.cuda.synchronize()  # a host synchronisation: the driver invalidates the capture
    assert not genesis.cuda.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    genesis.cuda.synchronize()  # the process is usable: eager work, and a new capture
    assert_bitwise((x * 2).sum(), (x + x).sum(), "eager after a failed capture")
    _capture_and_compare(lambda a, b: a * b + a, lambda: (randn(500), randn(500)))


def _pool_segments(pool, field: str = "total_size") -> int:
    """Bytes of the segments of private pool `pool` (their total size, or what is allocated in them)."""
    return sum(s[field] for s in genesis.cuda.memory_snapshot() if tuple(s["segment_pool_id"]) == tuple(pool))


@cuda_only
def test_memory_stats_and_empty_cache_with_a_live_graph():
    genesis.cuda.synchronize()
    genesis.cuda.empty_cache()
    x = randn(1 << 20)
    warm_up(lambda: (x * 2 + 1).sum())
    base_alloc = genesis.cuda.memory_allocated()
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        out = (x * 2 + 1).sum()  # two 4 MiB intermediates, freed inside the capture
    pool = g.pool()
    held = _pool_segments(pool)
    assert held >= 8 << 20  # the intermediates' memory stays in the graph's pool
    assert _pool_segments(pool, "allocated_size") == 512  # only the 0-d output is still allocated
    # Private blocks are counted: the total is every segment's allocated bytes, the graph's pool
    # included. (Not base_alloc + 512: blocks outside the capture may be freed meanwhile, as one of
    # 512 bytes was in a GPU run, which says nothing about the pool's accounting.)
    allocated = sum(s["allocated_size"] for s in genesis.cuda.memory_snapshot())
    assert genesis.cuda.memory_allocated() == allocated >= 512
    stats = genesis.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == genesis.cuda.memory_allocated()
    assert stats["reserved_bytes.all.current"] == genesis.cuda.memory_reserved() >= held
    genesis.cuda.empty_cache()  # leaves the live graph's memory alone
    assert _pool_segments(pool) == held
    reserved = genesis.cuda.memory_reserved()
    fresh = randn(1 << 20)
    x.copy_(fresh)
    g.replay()
    assert_bitwise(out, (fresh * 2 + 1).sum(), "replay after empty_cache")
    del out
    g.reset()
    genesis.cuda.empty_cache()  # the last graph of the pool is gone: its segments are released
    assert _pool_segments(pool) == 0
    assert genesis.cuda.memory_reserved() <= reserved - held
    assert genesis.cuda.memory_allocated() <= base_alloc + fresh.numel() * 4


@cuda_only
def test_two_graphs_share_a_pool():
    x = randn(4096)
    warm_up(lambda: (x * 2) + 1)
    g1, g2 = genesis.cuda.CUDAGraph(), genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g1):
        y = x * 2
    with genesis.cuda.graph(g2, pool=g1.pool()):
        z = (y + 1).exp()
    assert g2.pool() == g1.pool()
    for _ in range(2):
        fresh = randn(4096)
        x.copy_(fresh)
        g1.replay()
        g2.replay()
        assert_bitwise(z, (fresh * 2 + 1).exp(), "second graph")
    pool = g1.pool()
    held = _pool_segments(pool)
    g1.reset()
    genesis.cuda.empty_cache()
    assert _pool_segments(pool) == held  # g2 still holds the shared pool
    del y, z
    g2.reset()
    genesis.cuda.empty_cache()
    assert _pool_segments(pool) == 0


@cuda_only
def test_debug_dump(tmp_path):
    x = randn(100)
    g = genesis.cuda.CUDAGraph()
    g.enable_debug_mode()
    warm_up(lambda: x * 3)
    with genesis.cuda.graph(g):
        _ = x * 3
    path = tmp_path / "graph.dot"
    g.debug_dump(str(path))
    assert "digraph" in path.read_text()


@cuda_only
def test_make_graphed_callables_module():
    model = _mlp(128, 3)
    twin = copy.deepcopy(model)
    graphed = genesis.cuda.make_graphed_callables(model, (randn(32, 128),))
    assert graphed is model
    for _ in range(3):
        x = randn(32, 128)
        gout = randn(32, 128)
        out = graphed(x)
        out.backward(gout)
        ref = twin(x)
        ref.backward(gout)
        assert_bitwise(out, ref, "forward")
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            assert_bitwise(p.grad, q.grad, f"grad of {name}")  # accumulated over the iterations
    model.eval()  # not the captured mode: the original forward runs
    x = randn(32, 128)
    assert_bitwise(model(x), twin.eval()(x), "eval forward")


@cuda_only
def test_make_graphed_callables_functions():
    def f(a, b):
        return (a * b).tanh() + a

    def h(c):
        return c.sin() * 2, c.sum(dim=0)

    sample_a = randn(50, 40).requires_grad_()
    sample_b = randn(50, 40).requires_grad_()
    sample_c = randn(50, 40).requires_grad_()
    gf, gh = genesis.cuda.make_graphed_callables((f, h), ((sample_a, sample_b), (sample_c,)))
    for _ in range(2):
        a, b = randn(50, 40).requires_grad_(), randn(50, 40).requires_grad_()
        a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        out, red = gh(gf(a, b))
        ref, ref_red = h(f(a2, b2))
        assert_bitwise(out, ref, "output")
        assert_bitwise(red, ref_red, "second output")
        w = randn(50, 40)
        ((out * w).sum() + red.sum()).backward()
        ((ref * w).sum() + ref_red.sum()).backward()
        assert_bitwise(a.grad, a2.grad, "grad a")
        assert_bitwise(b.grad, b2.grad, "grad b")


def _load_gpt_example():
    """examples/train_gpt.py as a module (its GPT, GPTConfig, configure_optimizer)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "train_gpt.py"
    spec = importlib.util.spec_from_file_location("train_gpt_for_graphs", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    # Registered before it runs: its dataclasses resolve their string annotations through sys.modules.
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@cuda_only
def test_gpt_example_step_captured_whole_matches_eager():
    """The GPT example's step (bf16 autocast, attention, cross-entropy, clipping, AdamW) captured
    once and replayed on new batches gives the eager twin's losses and weights.

    The input tokens of a batch are all different. The token embedding's backward adds the gradients
    of repeated tokens with atomics, whose fp32 sums depend on their order, and AdamW turns such
    roundoff in a near-zero gradient into a difference of up to lr in the weight (its step is
    m / sqrt(v), about +-1, whatever the gradient's size): the two runs could not be compared
    closely. Every other kernel of the step is deterministic."""
    script = _load_gpt_example()
    config = script.GPTConfig(vocab_size=160, block_size=32, n_layer=2, n_head=2, n_embd=64, dropout=0.0)
    model = script.GPT(config).to("cuda")
    twin = copy.deepcopy(model)
    opt = script.configure_optimizer(model, lr=1e-3, weight_decay=0.1)
    twin_opt = script.configure_optimizer(twin, lr=1e-3, weight_decay=0.1)
    for group in [*opt.param_groups, *twin_opt.param_groups]:
        group["capturable"] = True
    rng = np.random.default_rng()

    def batch():
        x = rng.permutation(160)[: 4 * 32].reshape(4, 32)  # no token twice (see above)
        y = rng.integers(0, 160, (4, 32))  # targets may repeat: cross-entropy has no atomics
        return genesis.tensor(x, device="cuda"), genesis.tensor(y, device="cuda")

    def step(m, o, x, y):
        with genesis.autocast("cuda", dtype=genesis.bfloat16):
            _, loss = m(x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        o.step()
        return loss

    static_x, static_y = batch()
    batches = [batch() for _ in range(6)]
    side = genesis.cuda.Stream()
    side.wait_stream(genesis.cuda.current_stream())
    with genesis.cuda.stream(side):
        for x, y in batches[:3]:
            opt.zero_grad(set_to_none=True)
            static_x.copy_(x)
            static_y.copy_(y)
            step(model, opt, static_x, static_y)
    genesis.cuda.current_stream().wait_stream(side)
    for x, y in batches[:3]:
        twin_opt.zero_grad(set_to_none=True)
        step(twin, twin_opt, x, y)
    opt.zero_grad(set_to_none=True)
    g = genesis.cuda.CUDAGraph()
    with genesis.cuda.graph(g):
        static_loss = step(model, opt, static_x, static_y)
    for x, y in batches[3:]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        twin_opt.zero_grad(set_to_none=True)
        loss = step(twin, twin_opt, x, y)
        np.testing.assert_allclose(npy(static_loss), npy(loss), rtol=1e-5, err_msg="loss")
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            np.testing.assert_allclose(npy(p), npy(q), rtol=1e-5, atol=1e-6, err_msg=name)
