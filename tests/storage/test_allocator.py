"""The caching allocator's pool logic against a fake raw allocator (CPU tier)."""

from __future__ import annotations

import itertools
import threading

import pytest

import genesis_storage as gs
from genesis_storage.allocator.caching import CachingAllocator
from genesis_storage.allocator.raw import FakeRawAllocator

MiB = 1 << 20


def make(capacity: int = 1 << 30, **kw) -> tuple[CachingAllocator, FakeRawAllocator]:
    raw = FakeRawAllocator(capacity, **kw)
    return CachingAllocator(raw), raw


def test_rounding_and_alignment():
    a, _ = make()
    for n in (1, 511, 512, 513, 1000, 4097):
        b = a.malloc(n)
        assert b.addr % 512 == 0
        assert b.size == max(512, -(-n // 512) * 512)
        assert b.requested == n


def test_small_from_2mib_segment_large_from_20mib():
    a, raw = make()
    s = a.malloc(1000)
    assert raw.live[s.segment] == 2 * MiB
    l1 = a.malloc(3 * MiB)
    assert raw.live[l1.segment] == 20 * MiB
    l2 = a.malloc(11 * MiB + 7)  # fits in the 20 MiB segment's remainder
    assert l2.segment == l1.segment and raw.n_malloc == 2
    l3 = a.malloc(18 * MiB)
    assert raw.live[l3.segment] == 18 * MiB  # >= 10 MiB: a segment rounded up to 2 MiB
    assert raw.n_malloc == 3


def test_split_and_best_fit_reuse_without_new_segments():
    a, raw = make()
    blocks = [a.malloc(4096) for _ in range(10)]
    assert raw.n_malloc == 1  # all carved from one 2 MiB segment
    addrs = sorted(b.addr for b in blocks)
    assert all(y - x == 4096 for x, y in itertools.pairwise(addrs))
    a.free(blocks[3])
    again = a.malloc(4000)  # best fit: the 4096 hole, not the big remainder
    assert again.addr == blocks[3].addr
    assert raw.n_malloc == 1


def test_coalescing_back_to_one_block():
    a, raw = make()
    blocks = [a.malloc(100_000) for _ in range(16)]  # 1.6 MB of the 2 MiB segment
    for b in blocks[::2] + blocks[1::2]:
        a.free(b)
    big = a.malloc(MiB)  # fits only once the freed neighbours are merged
    assert raw.n_malloc == 1
    a.free(big)
    a.coalesce()
    (seg,) = a.snapshot()
    assert [blk["state"] for blk in seg["blocks"]] == ["inactive"]
    assert seg["blocks"][0]["size"] == 2 * MiB


def test_large_block_split_keeps_remainder_cached():
    a, raw = make()
    b1 = a.malloc(3 * MiB)
    b2 = a.malloc(5 * MiB)  # from the 20 MiB segment's remainder
    assert b2.segment == b1.segment and raw.n_malloc == 1
    a.free(b1)
    a.free(b2)
    a.empty_cache()
    assert raw.live == {} and a.memory_reserved() == 0


def test_per_stream_pools():
    a, raw = make()
    b = a.malloc(4096, stream=7)
    a.free(b)
    other = a.malloc(4096, stream=9)  # must not take stream 7's cached block
    assert other.segment != b.segment
    same = a.malloc(4096, stream=7)
    assert same.addr == b.addr
    assert raw.n_malloc == 2


def test_record_stream_defers_reuse_until_event_completes():
    a, raw = make()
    b = a.malloc(4096, stream=1)
    a.record_stream(b, 2)
    addr = b.addr
    a.free(b)
    stats = a.memory_stats()
    assert stats["active.all.current"] == 1 and stats["allocation.all.current"] == 0
    c = a.malloc(4096, stream=1)
    assert c.addr != addr  # still in use by stream 2
    raw.complete(2)
    a.free(c)
    d = a.malloc(4096, stream=1)
    e = a.malloc(4096, stream=1)
    assert addr in (d.addr, e.addr)
    assert a.memory_stats()["active.all.current"] == 2


def test_double_free_raises():
    a, _ = make()
    b = a.malloc(100)
    a.free(b)
    with pytest.raises(gs.DoubleFreeError, match="double free"):
        a.free(b)


def test_oom_frees_cache_and_retries():
    a, raw = make(capacity=40 * MiB)
    x = a.malloc(30 * MiB)
    a.free(x)  # cached: reserved 30 MiB, allocated 0
    y = a.malloc(35 * MiB)  # does not fit next to the cache: release then retry succeeds
    stats = a.memory_stats()
    assert stats["num_alloc_retries"] == 1 and stats["num_ooms"] == 0
    assert raw.live == {y.segment: 36 * MiB}


def test_oom_raises_with_numbers_then_recovers():
    a, _raw = make(capacity=64 * MiB)
    x = a.malloc(40 * MiB)
    with pytest.raises(gs.OutOfMemoryError) as ei:
        a.malloc(30 * MiB)
    msg = str(ei.value)
    assert isinstance(ei.value, MemoryError)
    for needle in (
        "Tried to allocate",
        str(30 * MiB),
        "total capacity",
        "is free",
        "allocated by Genesis",
        "reserved by Genesis but unallocated",
        "Limit",
    ):
        assert needle in msg, (needle, msg)
    assert a.memory_stats()["num_ooms"] == 1
    a.free(x)
    y = a.malloc(30 * MiB)  # the caller freed memory: next allocation succeeds
    assert y.size >= 30 * MiB


def test_memory_fraction_limit():
    a, _ = make(capacity=100 * MiB)
    a.set_memory_fraction(0.5)
    assert a.limit == 50 * MiB
    b = a.malloc(40 * MiB)
    with pytest.raises(gs.OutOfMemoryError, match=r"memory fraction 0\.5"):
        a.malloc(20 * MiB)
    a.free(b)
    with pytest.raises(ValueError):
        a.set_memory_fraction(1.5)


def test_stats_pytorch_keys_and_peaks():
    a, _ = make()
    stats = a.memory_stats()
    for name in (
        "allocation",
        "segment",
        "active",
        "inactive_split",
        "allocated_bytes",
        "reserved_bytes",
        "active_bytes",
        "inactive_split_bytes",
        "requested_bytes",
    ):
        for pool in ("all", "small_pool", "large_pool"):
            for f in ("current", "peak", "allocated", "freed"):
                assert f"{name}.{pool}.{f}" in stats
    for k in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free"):
        assert k in stats
    s1 = a.malloc(1000)  # 1024
    l1 = a.malloc(3 * MiB)
    assert a.memory_allocated() == 1024 + 3 * MiB
    st = a.memory_stats()
    assert st["allocated_bytes.small_pool.current"] == 1024
    assert st["allocated_bytes.large_pool.current"] == 3 * MiB
    assert st["requested_bytes.all.current"] == 1000 + 3 * MiB
    assert st["reserved_bytes.all.current"] == 22 * MiB
    assert st["segment.all.current"] == 2
    assert st["inactive_split.all.current"] == 2
    a.free(l1)
    st = a.memory_stats()
    assert st["allocated_bytes.all.peak"] == 1024 + 3 * MiB
    assert st["allocated_bytes.all.current"] == 1024
    assert st["allocated_bytes.all.freed"] == 3 * MiB
    assert st["allocation.all.allocated"] == 2 and st["allocation.all.freed"] == 1
    a.reset_peak_memory_stats()
    assert a.memory_stats()["allocated_bytes.all.peak"] == 1024
    a.reset_accumulated_memory_stats()
    st = a.memory_stats()
    assert st["allocated_bytes.all.allocated"] == 0 and st["allocated_bytes.all.freed"] == 0
    a.free(s1)
    assert a.memory_stats()["allocated_bytes.all.freed"] == 1024


def test_snapshot_schema():
    a, _ = make()
    b = a.malloc(5000, stream=3)
    snap = a.snapshot()
    assert len(snap) == 1
    seg = snap[0]
    for key in (
        "device",
        "address",
        "total_size",
        "allocated_size",
        "active_size",
        "requested_size",
        "stream",
        "segment_type",
        "blocks",
    ):
        assert key in seg
    assert seg["segment_type"] == "small" and seg["stream"] == 3 and seg["total_size"] == 2 * MiB
    assert seg["allocated_size"] == b.size and seg["requested_size"] == 5000
    states = [(blk["address"], blk["size"], blk["state"]) for blk in seg["blocks"]]
    assert states[0] == (b.addr, b.size, "active_allocated")
    assert states[1][2] == "inactive"
    assert sum(blk["size"] for blk in seg["blocks"]) == seg["total_size"]


def test_trace_is_bounded():
    raw = FakeRawAllocator()
    a = CachingAllocator(raw, trace=5)
    for _ in range(10):
        a.free(a.malloc(1000))
    tr = a.trace()
    assert len(tr) == 5
    assert {e["action"] for e in tr} <= {"alloc", "free_requested", "free_completed", "segment_alloc"}
    a.enable_trace(None)
    assert a.trace() == []


def test_no_caching_mode_env(monkeypatch):
    monkeypatch.setenv("GENESIS_NO_CACHING", "1")
    raw = FakeRawAllocator()
    a = CachingAllocator(raw)
    assert not a.caching
    b = a.malloc(1000)
    assert raw.live == {b.addr: 1024}
    a.free(b)
    assert raw.live == {} and a.memory_reserved() == 0
    assert raw.n_malloc == 1 and raw.n_free == 1


def test_debug_mode_poisons_freed_blocks():
    raw = FakeRawAllocator(memory=True)
    a = CachingAllocator(raw, debug=True)
    b = a.malloc(1024)
    raw.write(b.addr, bytes(range(256)) * 4)
    a.free(b)
    assert raw.read(b.addr, 1024) == b"\xff" * 1024


def test_thread_safety():
    a, raw = make()
    errors = []

    def work(seed: int) -> None:
        try:
            live = []
            for i in range(2000):
                live.append(a.malloc(512 * (1 + (seed * 7 + i) % 300), stream=seed % 2))
                if len(live) > 20:
                    a.free(live.pop(0))
            for b in live:
                a.free(b)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert a.memory_allocated() == 0
    assert a.memory_stats()["allocation.all.allocated"] == 8 * 2000
    a.empty_cache()
    assert raw.live == {}


def test_public_stats_functions_use_installed_allocator():
    raw = FakeRawAllocator(capacity=1 << 30)
    alloc = CachingAllocator(raw)
    prev = gs.set_allocator(0, alloc)
    try:
        with gs.device(0) if gs.is_available() else _nullcontext():
            st = gs.CUDAStorage(3000)
            assert st.ptr % 512 == 0 and st.nbytes == 3000
            assert gs.memory_allocated() == 3072
            assert gs.memory_reserved() == 2 * MiB
            assert gs.max_memory_allocated() == 3072
            assert gs.memory_stats()["allocated_bytes.all.current"] == 3072
            assert gs.memory_snapshot()[0]["total_size"] == 2 * MiB
            st.free()
            with pytest.raises(gs.StorageClosedError):
                _ = st.ptr
            with pytest.raises(gs.DoubleFreeError):
                st.free()
            assert gs.memory_allocated() == 0
            st2 = gs.CUDAStorage(100)
            del st2  # freed by refcount
            assert gs.memory_allocated() == 0
            gs.reset_peak_memory_stats()
            assert gs.max_memory_allocated() == 0
            gs.empty_cache()
            assert gs.memory_reserved() == 0 and raw.live == {}
    finally:
        gs.set_allocator(0, prev)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_views_keep_storage_alive_and_bounds_checked():
    raw = FakeRawAllocator()
    prev = gs.set_allocator(0, CachingAllocator(raw))
    try:
        s = gs.CUDAStorage(4 * 12)
        v = gs.StridedView(s, "float32", (3, 4), (4, 1))
        assert v.is_contiguous() and v.numel == 12 and v.ptr == s.ptr
        t = v.as_strided((4, 3), (1, 4), 0)
        assert not t.is_contiguous()
        sub = v.as_strided((2, 2), (4, 1), 5)
        assert sub.ptr == s.ptr + 20 and sub.offset == 5
        with pytest.raises(IndexError, match="12 float32 elements"):
            v.as_strided((3, 4), (4, 1), 1)
        with pytest.raises(IndexError, match="negative"):
            v.as_strided((2,), (1,), -1)
        with pytest.raises(ValueError, match="strides"):
            gs.StridedView(s, "float32", (3, 4), (1,))
        with pytest.raises(TypeError, match="unknown dtype"):
            gs.StridedView(s, "complex64", (1,), (1,))
        rev = v.as_strided((12,), (-1,), 11)  # negative strides allowed within bounds
        assert rev.numel == 12
        del s, v, t, rev
        assert gs.memory_allocated() == 4 * 12 // 48 * 512  # still held by `sub`
        del sub
        assert gs.memory_allocated() == 0
        e = gs.empty((2, 3, 0), "int64")
        assert (e.numel == 0 and e.strides == (0, 0, 1)) or e.strides == gs.contiguous_strides((2, 3, 0))
    finally:
        gs.set_allocator(0, prev)
