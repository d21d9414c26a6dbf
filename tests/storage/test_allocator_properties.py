"""Hypothesis: random alloc/free sequences keep the pool's invariants (CPU tier, fake allocator)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from genesis_storage.allocator.caching import CachingAllocator
from genesis_storage.allocator.raw import FakeRawAllocator

sizes = st.one_of(st.integers(1, 4096), st.integers(4097, 1 << 20), st.integers((1 << 20) + 1, 48 << 20))
ops = st.lists(st.tuples(st.booleans(), sizes, st.integers(0, 2), st.integers(0, 1000)), min_size=1, max_size=120)


def check_invariants(a: CachingAllocator, raw: FakeRawAllocator, live: list) -> None:
    spans = sorted((b.addr, b.addr + b.size) for b in live)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, "live blocks overlap"
    for b in live:
        assert b.size >= b.requested and b.addr % 512 == 0
        assert b.segment in raw.live and b.addr + b.size <= b.segment + raw.live[b.segment]
    st_ = a.memory_stats()
    assert st_["allocated_bytes.all.current"] == sum(b.size for b in live) == a.memory_allocated()
    assert st_["requested_bytes.all.current"] == sum(b.requested for b in live)
    assert st_["allocation.all.current"] == len(live)
    assert st_["reserved_bytes.all.current"] == sum(raw.live.values())
    assert st_["allocated_bytes.all.current"] == (
        st_["allocated_bytes.small_pool.current"] + st_["allocated_bytes.large_pool.current"]
    )
    assert st_["allocated_bytes.all.peak"] >= st_["allocated_bytes.all.current"]
    # every segment is tiled exactly by its blocks
    for seg in a.snapshot():
        assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]


@settings(max_examples=150, deadline=None)
@given(ops)
def test_random_alloc_free(seq):
    raw = FakeRawAllocator(capacity=1 << 40)
    a = CachingAllocator(raw)
    live = []
    for is_alloc, size, stream, pick in seq:
        if is_alloc or not live:
            live.append(a.malloc(size, stream=stream))
        else:
            a.free(live.pop(pick % len(live)))
        check_invariants(a, raw, live)
    for b in live:
        a.free(b)
    live.clear()
    check_invariants(a, raw, live)
    a.coalesce()
    for seg in a.snapshot():  # everything coalesced back: one free block per segment
        assert [b["state"] for b in seg["blocks"]] == ["inactive"]
    a.empty_cache()
    assert raw.live == {} and a.memory_reserved() == 0


@settings(max_examples=60, deadline=None)
@given(ops, st.integers(1, 1 << 30))
def test_random_with_limit_never_exceeds(seq, limit_bytes):
    raw = FakeRawAllocator(capacity=1 << 40)
    a = CachingAllocator(raw)
    a._limit = limit_bytes  # exercise the limit path directly
    live = []
    for is_alloc, size, stream, pick in seq:
        if is_alloc or not live:
            try:
                live.append(a.malloc(size, stream=stream))
            except MemoryError:
                pass
        else:
            a.free(live.pop(pick % len(live)))
        assert a.memory_reserved() <= limit_bytes
        check_invariants(a, raw, live)
