"""CUDA graph private pools in the caching allocator, on the fake raw allocator (CPU tier).

A capture is simulated at the allocator level: begin_allocate_to_pool(pool, stream) is the state
"stream S captures into pool P" that CUDAGraph.capture_begin sets on a GPU.
"""

from __future__ import annotations

import pytest

import genesis_storage as gs
from genesis_storage import graphs
from genesis_storage.allocator.caching import CachingAllocator
from genesis_storage.allocator.raw import FakeRawAllocator

MiB = 1 << 20
S, T = 0x1000, 0x2000  # two fake stream handles
P, Q = (7, 0), (0, 8)  # two pool ids


class StrictRaw(FakeRawAllocator):
    """Refuses what a capture forbids: querying / synchronising / recording events, and freeing
    device memory, while `capturing` is set (the allocator must not do any of that then)."""

    capturing = False

    def _refuse(self, what: str) -> None:
        if self.capturing:
            raise AssertionError(f"{what} during a capture")

    def query_event(self, event):
        self._refuse("event query")
        return super().query_event(event)

    def synchronize_event(self, event):
        self._refuse("event synchronize")
        return super().synchronize_event(event)

    def record_event(self, stream):
        self._refuse("event record")
        return super().record_event(stream)

    def free(self, addr, nbytes):
        self._refuse("cuMemFree")
        return super().free(addr, nbytes)


def make(capacity: int = 1 << 30, **kw) -> tuple[CachingAllocator, StrictRaw]:
    raw = StrictRaw(capacity)
    return CachingAllocator(raw, **kw), raw


def begin(a: CachingAllocator, raw: StrictRaw, pool=P, stream=S) -> None:
    a.begin_allocate_to_pool(pool, stream)
    raw.capturing = True


def end(a: CachingAllocator, raw: StrictRaw, stream=S) -> None:
    raw.capturing = False
    a.end_allocate_to_pool(stream)


def pool_of(a: CachingAllocator, block) -> tuple[int, int]:
    return next(s["segment_pool_id"] for s in a.snapshot() if s["address"] == block.segment)


def test_capture_allocations_come_from_new_private_segments():
    a, raw = make()
    cached = a.malloc(4096, S)
    a.free(cached)  # a free general block of the right size on the same stream
    begin(a, raw)
    b = a.malloc(4096, S)
    assert b.segment != cached.segment and raw.n_malloc == 2  # not the cached general block
    assert pool_of(a, b) == P and pool_of(a, cached) == (0, 0)
    other = a.malloc(4096, T)  # another stream, not capturing: the general pool
    assert pool_of(a, other) == (0, 0)
    end(a, raw)


def test_frees_during_capture_are_reused_by_the_same_capture_in_stream_order():
    a, raw = make()
    begin(a, raw)
    x = a.malloc(100_000, S)
    a.free(x)  # back to P, not to the front cache of the general pool
    y = a.malloc(100_000, S)
    assert y.addr == x.addr and raw.n_malloc == 1
    z = a.malloc(100_000, T)  # another stream never gets P's blocks
    assert pool_of(a, z) == (0, 0)
    end(a, raw)
    a.free(y)
    w = a.malloc(100_000, S)  # the capture ended: S allocates from the general pool again
    assert pool_of(a, w) == (0, 0) and w.segment != y.segment


def test_private_segments_survive_empty_cache_while_the_pool_is_held():
    a, raw = make()
    general = a.malloc(3 * MiB, S)
    a.free(general)
    begin(a, raw)
    blocks = [a.malloc(n, S) for n in (1000, 2 * MiB, 5 * MiB)]
    for b in blocks:
        a.free(b)
    end(a, raw)
    private_segments = {b.segment for b in blocks}
    reserved_private = sum(raw.live[s] for s in private_segments)
    a.empty_cache()  # the graph lives: only the general segment goes
    assert set(raw.live) == private_segments
    assert a.memory_reserved() == reserved_private
    assert a.private_pool(P) is not None and a.private_pool(P).use_count == 1
    a.release_pool(P)  # the last graph of P is gone: its free segments become releasable
    assert set(raw.live) == private_segments  # (released by empty_cache, as torch does)
    a.empty_cache()
    assert raw.live == {} and a.memory_reserved() == 0
    assert a.private_pool(P) is None


def test_blocks_still_held_after_release_are_freed_later_and_then_released():
    a, raw = make()
    begin(a, raw)
    out = a.malloc(8192, S)  # a graph output the user keeps after the graph is gone
    tmp = a.malloc(8192, S)
    a.free(tmp)
    end(a, raw)
    a.release_pool(P)
    a.empty_cache()
    assert out.segment in raw.live  # still allocated: the segment stays
    assert a.private_pool(P) is not None
    a.free(out)  # back into P (freeable now), never into the general pool
    again = a.malloc(8192, S)
    assert again.segment != out.segment
    a.free(again)
    a.empty_cache()
    assert raw.live == {} and a.private_pool(P) is None


def test_memory_stats_and_snapshot_count_private_blocks():
    a, raw = make()
    begin(a, raw)
    b = a.malloc(3000, S)
    assert a.memory_allocated() == 3072
    assert a.memory_reserved() == 2 * MiB
    st = a.memory_stats()
    assert st["allocated_bytes.all.current"] == 3072 and st["segment.all.current"] == 1
    assert st["inactive_split_bytes.all.current"] == 2 * MiB - 3072  # the private remainder
    (seg,) = a.snapshot()
    assert seg["segment_pool_id"] == P and seg["allocated_size"] == 3072
    end(a, raw)
    a.free(b)
    assert a.memory_allocated() == 0 and a.memory_reserved() == 2 * MiB
    a.release_pool(P)
    a.empty_cache()
    assert a.memory_stats()["reserved_bytes.all.current"] == 0


def test_two_graphs_share_a_pool():
    a, raw = make()
    begin(a, raw, P)  # graph 1
    x = a.malloc(50_000, S)
    a.free(x)
    end(a, raw)
    begin(a, raw, P)  # graph 2, pool=graph1.pool(): reuses graph 1's freed memory
    y = a.malloc(50_000, S)
    assert y.addr == x.addr and raw.n_malloc == 1
    a.free(y)
    end(a, raw)
    assert a.private_pool(P).use_count == 2
    a.release_pool(P)  # graph 1 reset: graph 2 still holds the pool
    a.empty_cache()
    assert x.segment in raw.live
    a.release_pool(P)
    a.empty_cache()
    assert raw.live == {}
    with pytest.raises(RuntimeError, match="no user"):
        a.release_pool(P)


def test_separate_pools_do_not_share_blocks():
    a, raw = make()
    begin(a, raw, P)
    x = a.malloc(50_000, S)
    a.free(x)
    end(a, raw)
    begin(a, raw, Q)
    y = a.malloc(50_000, S)
    assert y.segment != x.segment and pool_of(a, y) == Q
    end(a, raw)


def test_no_event_query_during_capture_and_deferred_frees_wait_for_its_end():
    a, raw = make()
    pending = a.malloc(4096, T)
    a.record_stream(pending, S)
    a.free(pending)  # pending on an event of S, recorded before the capture
    assert len(raw.events) == 1
    begin(a, raw)  # StrictRaw now refuses any event call
    used = a.malloc(4096, T)  # T is not capturing, but no event may be queried during the capture
    a.record_stream(used, S)
    a.free(used)  # needs an event on S: deferred until the capture ends
    stats = a.memory_stats()
    assert stats["active.all.current"] == 2  # both pending frees still count as active
    end(a, raw)
    assert len(raw.events) == 2  # the deferred event is recorded now
    raw.complete()
    c = a.malloc(4096, T)  # events processed: the freed blocks are reusable
    assert c.addr in (pending.addr, used.addr)


def test_empty_cache_during_capture_raises_and_oom_does_not_release():
    a, raw = make(capacity=20 * MiB)
    g = a.malloc(12 * MiB, T)  # a segment of its own (>= 10 MiB), cached once freed
    a.free(g)
    begin(a, raw)
    with pytest.raises(RuntimeError, match="captured"):
        a.empty_cache()
    with pytest.raises(gs.OutOfMemoryError):
        a.malloc(12 * MiB, S)  # would fit only after releasing the general cache: refused mid-capture
    assert g.segment in raw.live
    end(a, raw)
    b = a.malloc(12 * MiB, S)  # outside the capture the OOM path releases the cache and retries
    assert g.segment not in raw.live and b.size == 12 * MiB


def test_uncached_allocator_still_caches_private_blocks():
    a, raw = make(caching=False)
    begin(a, raw)
    x = a.malloc(4096, S)
    a.free(x)  # a pass-through allocator would cuMemFree here (refused by StrictRaw mid-capture)
    y = a.malloc(4096, S)
    assert y.addr == x.addr
    end(a, raw)


def test_one_capture_per_stream():
    a, raw = make()
    begin(a, raw)
    with pytest.raises(RuntimeError, match="already capturing"):
        a.begin_allocate_to_pool(Q, S)
    assert a.captures_underway == {S: P}
    end(a, raw)
    assert a.captures_underway == {}


def test_storage_and_capture_state_through_the_current_stream():
    """CUDAStorage allocates on the thread's current stream, which is what routes it to the pool; and
    is_current_stream_capturing() / current_capture() read that stream."""
    raw = StrictRaw()
    alloc = CachingAllocator(raw)
    prev = gs.set_allocator(0, alloc)
    prev_stream = gs.current_stream(0)
    sentinel = object()
    try:
        gs.set_stream(gs.Stream.from_handle(S, 0))
        assert not gs.is_current_stream_capturing() and gs.current_capture() is None
        alloc.begin_allocate_to_pool(P, S)
        graphs._capturing[S] = sentinel  # what capture_begin records on a GPU
        assert gs.is_current_stream_capturing() and gs.current_capture() is sentinel
        st = gs.CUDAStorage(1000)
        assert pool_of(alloc, st._block) == P
        gs.set_stream(gs.Stream.from_handle(T, 0))
        assert not gs.is_current_stream_capturing()
        del graphs._capturing[S]
        alloc.end_allocate_to_pool(S)
        del st
        assert alloc.memory_allocated() == 0
    finally:
        graphs._capturing.pop(S, None)
        gs.set_stream(prev_stream)
        gs.set_allocator(0, prev)


def test_cuda_graph_without_a_gpu_raises_clearly():
    if gs.is_available():
        pytest.skip("a CUDA device is present: the no-GPU error cannot happen (the GPU tier covers capture)")
    g = gs.CUDAGraph()
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        with gs.graph(g):
            pass


def test_cuda_graph_misuse_raises_before_touching_the_device():
    """Checks that need no device: they hold with or without a GPU."""
    g = gs.CUDAGraph()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.pool()
    with pytest.raises(RuntimeError, match="enable_debug_mode"):
        g.debug_dump("/tmp/x.dot")
    with pytest.raises(ValueError, match="capture_error_mode"):
        g.capture_begin(capture_error_mode="strict")
    g.reset()  # nothing to free: a no-op
    h1, h2 = gs.graph_pool_handle(), gs.graph_pool_handle()
    assert h1 != h2 and h1[0] == 0
    with pytest.raises(TypeError, match="on_"):
        gs.register_capture_hook(object())
