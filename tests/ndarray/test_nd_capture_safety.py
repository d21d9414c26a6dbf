"""Ops under CUDA-graph capture: nothing reads back or synchronises, random draws come from the graph's
(seed, offset) buffer, bounds checks report at the next replay; eager IndexError unchanged.

Capture is simulated by patching genesis_storage.graphs (a fake graph with keep_alive). On this CPU
machine the guards of the cuda backend are checked on objects they must not touch (each raises before
reading its input); with a GPU the same ops run on real cuda arrays."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import from_torch, random_tensor, to_torch

import genesis_kernels as gk
import genesis_ndarray as nd
from capture_support import FakeGraph, simulate_capture
from device_support import requires_cuda
from genesis_ndarray import registry
from genesis_storage import graphs


class Untouchable:
    """An input no guarded op may look at: any attribute read fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"the op read .{name} of its input before refusing the capture")


@pytest.fixture
def captured(monkeypatch):
    """Simulate a capture on this thread; yields the graph and the hooks registered meanwhile."""
    return simulate_capture(monkeypatch)


CUDA = registry.table("cuda")
READBACKS = [
    ("item", lambda: CUDA["item"](Untouchable()), r"item\(\) cannot be captured: it needs a host read-back"),
    ("tolist", lambda: CUDA["tolist"](Untouchable()), r"tolist\(\) cannot be captured"),
    ("numpy", lambda: CUDA["to_numpy"](Untouchable()), r"numpy\(\) cannot be captured"),
    ("to_cpu", lambda: CUDA["to_cpu"](Untouchable()), r"copying a cuda tensor to the cpu cannot be captured"),
    ("masked_select", lambda: CUDA["masked_select"](Untouchable(), Untouchable()), r"masked_select cannot be"),
    ("nonzero", lambda: CUDA["nonzero"](Untouchable()), r"nonzero cannot be captured: it needs a host read-back"),
    ("counters", lambda: CUDA["advance_counters_"]([Untouchable()]), r"advance_counters_ cannot be captured"),
]


@pytest.mark.parametrize("name,call,message", READBACKS, ids=[r[0] for r in READBACKS])
def test_readback_ops_refuse_capture_before_touching_anything(captured, name, call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_guards_are_silent_without_capture():
    gk.capture.forbid_readback("item()", "never raised")  # no capture on this thread
    assert not gk.capture.capturing()


# ------------------------------------------------------------------ eager behaviour, both devices
EAGER = {
    "gather": (lambda a, i: a.gather(0, i), lambda x, i: torch.gather(x, 0, i), [[0, 5, 1]], [[0, 4, 1]]),
    "index_select": (lambda a, i: a.index_select(0, i), lambda x, i: torch.index_select(x, 0, i), [1, 5], [1, 4]),
    "embedding": (lambda a, i: a.embedding(i), lambda x, i: torch.nn.functional.embedding(i, x), [1, 5], [1, 4]),
}


@pytest.mark.parametrize("op", list(EAGER))
def test_eager_out_of_range_raises_at_the_call(device, op):
    ours, theirs, bad, good = EAGER[op]
    x = random_tensor((5, 3))
    a = from_torch(x, device)
    with pytest.raises((IndexError, RuntimeError)) as want:
        theirs(x, torch.tensor(bad))
    with pytest.raises(type(want.value), match="out of"):
        ours(a, from_torch(torch.tensor(bad), device))
    result = ours(a, from_torch(torch.tensor(good), device))  # the call after an error is clean
    torch.testing.assert_close(to_torch(result), theirs(x, torch.tensor(good)))


def test_eager_cross_entropy_target_out_of_range(device):
    x = random_tensor((4, 3))
    t = torch.tensor([0, 2, 3, 1])
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        torch.nn.functional.cross_entropy(x, t)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        from_torch(x, device).cross_entropy(from_torch(t, device), None, -100, 0.0)


# ------------------------------------------------------------------ on the GPU, real cuda arrays
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_readbacks_refuse_and_leave_data_alone(device, captured, monkeypatch):
    x = random_tensor((6, 4))
    a = from_torch(x, device)
    mask = from_torch(x > 0, device)
    one = from_torch(x[:1, :1], device)  # item() of more elements fails on its count first, as in torch
    checks = [
        (lambda: one.item(), "item"),
        (lambda: a.tolist(), "tolist"),
        (lambda: a.masked_select(mask), "masked_select"),
        (lambda: a.nonzero(), "nonzero"),
        (lambda: a[mask], "boolean mask"),
        (lambda: a[from_torch(torch.tensor(1), device)], "0-d integer tensor"),
    ]
    for call, name in checks:
        with pytest.raises(RuntimeError, match=f"{name}.*cannot be captured"):
            call()
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: False)
    assert torch.equal(to_torch(a), x)
    assert torch.equal(to_torch(a.masked_select(mask)), x[x > 0])  # the next eager call works


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_captured_gather_reports_at_replay(device, captured, monkeypatch):
    graph, hooks = captured
    x = random_tensor((10,))
    idx = torch.tensor([3, 10, 1])
    known = from_torch(idx, device)  # uploaded from host values: its range is known, the error needs no wait
    with pytest.raises(RuntimeError, match=r"index 10 is out of bounds for dimension 0 with size 10"):  # torch's
        from_torch(x, device).gather(0, known)
    unknown = from_torch(idx, device)
    unknown.data_ptr()  # an export drops the known range: only the device can check these values now
    out = from_torch(x, device).gather(0, unknown)  # no error now: nothing may wait
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: False)
    got = to_torch(out)
    assert got[0] == x[3] and got[1] == 0 and got[2] == x[1]  # the bad lane read nothing
    with pytest.raises(IndexError, match=r"index 10 is out of bounds for dimension 0 with size 10.*gather"):
        for hook in hooks:
            hook.on_replay(graph)


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_captured_draws_follow_the_generator(device, monkeypatch):
    from genesis_ndarray.backends.cuda import philox

    nd.manual_seed(123)
    graph = FakeGraph()
    monkeypatch.setattr(graphs, "current_capture", lambda: graph)
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: True)
    first = nd.rand(1000, device=device)  # "captured": reads the graph's (not yet written) buffer
    second = nd.rand(500, device=device)  # within-graph offset 1000
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: False)
    assert philox.state_of(0) == [123, 0]  # the generator does not move during capture
    del first  # read the buffer before any replay wrote it: undefined, as a graph's outputs before replay
    # A replay: the hook writes (seed, offset) and advances the generator by the graph's 1500 numbers.
    hook = philox._ReplayHook()
    philox.state_of(0)[1] = 4000
    hook.on_replay(graph)
    assert philox.state_of(0) == [123, 5500]
    # The captured kernels would now read (123, 4000); run the pointer variant of the second draw again.
    rng = gk.capture.existing_graph_state(graph, "philox")
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: True)
    rng.total = 1000  # the second draw's within-graph offset
    again = nd.rand(500, device=device)
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: False)
    philox.state_of(0)[1] = 4000 + 1000
    eager = nd.rand(500, device=device)
    assert torch.equal(to_torch(again), to_torch(eager))
    del second  # it read the buffer before any replay wrote it: undefined, as a graph's outputs before replay
