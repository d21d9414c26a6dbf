"""Kernels under CUDA-graph capture: the pointer-seed variant of every Philox kernel draws exactly the
value variant's numbers; bounds checks record into a graph-owned flag (no wait) and stay memory-safe;
launchers that read back refuse the capture. Capture is simulated by patching genesis_storage.graphs
(on the CPU nothing really captures); the kernels run for real (interpreter or GPU)."""

from __future__ import annotations

import math

import pytest
import torch
from kernels_helpers import buf, make, sync

import genesis_kernels as gk
from capture_support import simulate_capture


@pytest.fixture
def captured(monkeypatch):
    """Simulate a capture on this thread; yields the graph and the hooks registered meanwhile."""
    return simulate_capture(monkeypatch)


def _state(seed: int, base: int, device: str) -> torch.Tensor:
    """The device int64[2] a replay fills, written by the capture-safe kernel."""
    st = torch.full((2,), -1, dtype=torch.int64, device=device)
    gk.write_rng_state(st.data_ptr(), seed, base)
    return st


# ------------------------------------------------------------------ Philox: pointer vs value
@pytest.mark.parametrize("seed,base,offset", [(1234, 0, 0), (2**40 + 7, 4096, 12), (-5, 8, 1000)])
def test_rng_pointer_variant_equals_value_variant(device, seed, base, offset):
    st = _state(seed, base, device)
    cases = [
        ("rand", lambda o, **kw: gk.rand(o, **kw), "float32"),
        ("randn", lambda o, **kw: gk.randn(o, **kw), "float64"),
        ("uniform", lambda o, **kw: gk.uniform(o, -2.0, 3.0, **kw), "bfloat16"),
        ("normal", lambda o, **kw: gk.normal(o, 1.5, 0.25, **kw), "float32"),
        ("randint", lambda o, **kw: gk.randint(o, -7, 100, **kw), "int64"),
        ("bernoulli", lambda o, **kw: gk.bernoulli(0.3, o, **kw), "float32"),
    ]
    for name, draw, dtype in cases:
        want = torch.full((37, 5), 99, dtype=getattr(torch, dtype), device=device)
        got = torch.full((37, 5), 98, dtype=getattr(torch, dtype), device=device)
        draw(buf(want), seed=seed, offset=base + offset)
        draw(buf(got), seed=0, offset=offset, rng_ptr=st.data_ptr())  # seed ignored: read from st
        sync(device)
        assert torch.equal(got, want), name
        assert not torch.equal(want, torch.full_like(want, 99)), name


def test_rng_pointer_dropout_and_keep_mask(device):
    st = _state(77, 40, device)
    x = make((300,), "float32", device)
    outs = [torch.empty(300, device=device) for _ in range(2)]
    masks = [torch.empty(300, dtype=torch.bool, device=device) for _ in range(2)]
    gk.dropout(buf(x), buf(outs[0]), 0.4, 77, 40 + 9, mask=buf(masks[0]))
    gk.dropout(buf(x), buf(outs[1]), 0.4, 0, 9, mask=buf(masks[1]), rng_ptr=st.data_ptr())
    sync(device)
    assert torch.equal(outs[0], outs[1]) and torch.equal(masks[0], masks[1])
    assert 0 < int(masks[0].sum()) < 300
    torch.testing.assert_close(outs[0], x * masks[0] / 0.6)


def test_write_rng_state_snapshot(device):
    st = _state(2**62 + 3, 128, device)
    snap = torch.zeros(2, dtype=torch.int64, device=device)
    gk.write_rng_state(snap.data_ptr(), 0, 64, src=st.data_ptr())
    sync(device)
    assert snap.tolist() == [2**62 + 3, 192]
    assert st.tolist() == [2**62 + 3, 128]


def test_attention_dropout_pointer_variant(device):
    b, hq, lq, lk, d, p = 1, 2, 12, 20, 16, 0.3
    q, k, v = (make((b, hq, n, d), "float32", device, low=-2, high=2) for n in (lq, lk, lk))
    dout = make((b, hq, lq, d), "float32", device, low=-1, high=1)
    st = _state(7, 100, device)
    results = []
    for kw in (dict(seed=7, offset=112), dict(seed=0, offset=12, rng_ptr=st.data_ptr())):
        out = torch.full((b, hq, lq, d), float("nan"), device=device)
        lse = torch.full((b, hq, lq), float("nan"), device=device)
        grads = [torch.full(x.shape, float("nan"), device=device) for x in (q, k, v)]
        gk.attention_forward(buf(q), buf(k), buf(v), buf(out), buf(lse), scale=1 / math.sqrt(d), dropout_p=p, **kw)
        gk.attention_backward(buf(q), buf(k), buf(v), buf(out), buf(dout), buf(lse), *map(buf, grads),
                              scale=1 / math.sqrt(d), dropout_p=p, **kw)  # fmt: skip
        sync(device)
        results.append((out, *grads))
    for a, c in zip(*results):
        assert not a.isnan().any()
        assert torch.equal(a, c)


# ------------------------------------------------------------------ bounds checks under capture
def test_captured_gather_masks_and_reports_at_replay(device, captured):
    graph, hooks = captured
    x = make((50,), "float32", device)
    idx = torch.randint(0, 50, (40,), device=device)
    idx[7] = 50
    idx[9] = -3
    out = torch.full((40,), float("nan"), device=device)
    gk.gather(buf(x), 0, buf(idx), buf(out))  # no IndexError now: nothing may wait under capture
    sync(device)
    ok = (idx >= 0) & (idx < 50)
    assert torch.equal(out[ok], x[idx[ok]])
    assert torch.equal(out[~ok], torch.zeros(2, device=device))  # masked lanes read nothing
    assert len(hooks) == 1 and graph.kept
    with pytest.raises(IndexError, match=r"index 50 is out of bounds for dimension 0 with size 50.*gather"):
        hooks[0].on_replay(graph)
    hooks[0].on_replay(graph)  # reported once: the flag is cleared


def test_captured_index_ops_in_range_report_nothing(device, captured):
    graph, hooks = captured
    x = make((30, 4), "float32", device)
    idx = torch.randint(0, 30, (25,), device=device)
    out = torch.empty(25, 4, device=device)
    gk.index_select(buf(x), 0, buf(idx), buf(out))
    acc = torch.zeros(30, 4, device=device)
    gk.index_add(buf(acc), 0, buf(idx), buf(out))
    sync(device)
    assert torch.equal(out, x[idx])
    torch.testing.assert_close(acc, torch.zeros(30, 4, device=device).index_add_(0, idx, x[idx]))
    hooks[0].on_replay(graph)


def test_captured_scatter_out_of_range_writes_nothing_there(device, captured):
    graph, hooks = captured
    dst = make((10,), "float32", device)
    before = dst.clone()
    idx = torch.tensor([1, 12, 3], device=device)
    src = make((3,), "float32", device)
    gk.scatter(buf(dst), 0, buf(idx), buf(src))
    sync(device)
    want = before.clone()
    want[1], want[3] = src[0], src[2]
    assert torch.equal(dst, want)
    with pytest.raises(IndexError, match=r"index 12 .* size 10.*scatter"):
        hooks[0].on_replay(graph)


def test_captured_cross_entropy_target_reported_at_replay(device, captured):
    graph, hooks = captured
    x = make((6, 5), "float32", device)
    target = torch.tensor([0, 4, 9, 1, 2, 3], device=device)
    loss, lse, row_weight = (torch.empty(6, device=device) for _ in range(3))
    gk.cross_entropy(buf(x), buf(target), None, None, buf(loss), buf(lse), buf(row_weight))
    sync(device)
    ref = torch.nn.functional.cross_entropy(x.double().cpu(), target.cpu().clamp(0, 4), reduction="none")
    keep = (target.cpu() != 9).numpy()
    torch.testing.assert_close(loss.cpu().double()[keep], ref[keep], rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match=r"Target 9 is out of bounds.*cross_entropy"):
        hooks[0].on_replay(graph)


def test_eager_out_of_range_still_raises_at_the_call(device):
    x = make((8,), "float32", device)
    idx = torch.tensor([0, 8], device=device)
    with pytest.raises(IndexError, match="index 8 is out of bounds for dimension 0 with size 8"):
        gk.gather(buf(x), 0, buf(idx), buf(torch.empty(2, device=device)))


# ------------------------------------------------------------------ read-backs refuse the capture
def test_nonzero_count_refuses_capture(device, captured):
    mask = torch.rand(100, device=device) > 0.5
    with pytest.raises(RuntimeError, match=r"masked_select cannot be captured: it needs a host read-back"):
        gk.nonzero_count(buf(mask), op="masked_select")
    with pytest.raises(RuntimeError, match=r"nonzero cannot be captured"):
        gk.nonzero_count(buf(mask))
