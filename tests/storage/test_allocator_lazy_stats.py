"""The caching allocator's lazily counted statistics against an eager model of the old counting.

malloc and free append events; the Stats (allocation, allocated_bytes, requested_bytes; all, small and
large pools; current, peak, allocated, freed) are replayed from them before any read. This checks every
one of them, after random sequences of mallocs and frees of small and large sizes with reads, peak resets
and accumulated resets at random points, through both replays (the Python loop and numpy's running sums)
and the periodic replay of a long run, against a model that counts each event when it happens (the
allocator's former hot path)."""

from __future__ import annotations

import random

import pytest

import genesis_storage.allocator.caching as caching
from genesis_storage.allocator import CachingAllocator, FakeRawAllocator

NAMES = ("allocation", "allocated_bytes", "requested_bytes")
POOLS = ("all", "small_pool", "large_pool")


class Model:
    """Eager counting: name -> pool -> [current, peak, allocated, freed]."""

    def __init__(self) -> None:
        self.s = {n: {p: [0, 0, 0, 0] for p in POOLS} for n in NAMES}

    def event(self, size: int, requested: int, small: bool, sign: int) -> None:
        for name, d in zip(NAMES, (1, size, requested)):
            for pool in ("all", "small_pool" if small else "large_pool"):
                st = self.s[name][pool]
                if sign > 0:
                    st[0] += d
                    st[2] += d
                    st[1] = max(st[1], st[0])
                else:
                    st[0] -= d
                    st[3] += d

    def reset_peak(self) -> None:
        for name in NAMES:
            for pool in POOLS:
                self.s[name][pool][1] = self.s[name][pool][0]

    def reset_accumulated(self) -> None:
        for name in NAMES:
            for pool in POOLS:
                self.s[name][pool][2] = self.s[name][pool][3] = 0


def _check(alloc: CachingAllocator, model: Model) -> None:
    stats = alloc.memory_stats()
    for name in NAMES:
        for pool in POOLS:
            want = dict(zip(("current", "peak", "allocated", "freed"), model.s[name][pool]))
            got = {k: stats[f"{name}.{pool}.{k}"] for k in want}
            assert got == want, (name, pool)
    # active == allocated while no block waits on another stream
    for pool in POOLS:
        assert stats[f"active.{pool}.peak"] == model.s["allocation"][pool][1]
        assert stats[f"active_bytes.{pool}.current"] == model.s["allocated_bytes"][pool][0]
    assert alloc.memory_allocated() == model.s["allocated_bytes"]["all"][0]
    assert alloc.b_alloc[0].peak == model.s["allocated_bytes"]["all"][1]


@pytest.mark.parametrize("numpy_from,flush_at", [(64, 8192), (1, 8192), (10**9, 8192), (64, 16), (1, 3)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lazy_stats_match_eager_counting(monkeypatch, numpy_from, flush_at, seed):
    monkeypatch.setattr(caching, "_NUMPY_EVENTS", numpy_from)
    monkeypatch.setattr(caching, "_FLUSH_EVENTS", flush_at)
    rng = random.Random(seed)
    alloc = CachingAllocator(FakeRawAllocator(capacity=1 << 40))
    model = Model()
    live: list = []
    sizes = [0, 1, 511, 512, 513, 4000, 65536, 1 << 20, (1 << 20) + 1, 3 << 20, 12 << 20]
    for _ in range(3000):
        r = rng.random()
        if r < 0.55 or not live:
            n = rng.choice(sizes) if rng.random() < 0.5 else rng.randrange(1, 3 << 20)
            block = alloc.malloc(n, stream=rng.choice((0, 0, 0, 7)))
            assert block.size % 512 == 0  # the event code keeps the pool in bit 0
            model.event(block.size, n, block.small, +1)
            live.append(block)
        elif r < 0.97:
            block = live.pop(rng.randrange(len(live)))
            model.event(block.size, block.requested, block.small, -1)
            alloc.free(block)
        elif r < 0.98:
            alloc.reset_peak_memory_stats()
            model.reset_peak()
        elif r < 0.985:
            alloc.reset_accumulated_memory_stats()
            model.reset_accumulated()
        else:
            _check(alloc, model)
    _check(alloc, model)
    for block in live:
        model.event(block.size, block.requested, block.small, -1)
        alloc.free(block)
    _check(alloc, model)


def test_public_readers_see_unflushed_events():
    """memory_allocated / max_memory_allocated / memory_stats read exact values straight after the hot path."""
    import genesis_storage.allocator as A

    alloc = CachingAllocator(FakeRawAllocator(capacity=1 << 40))
    blocks = [alloc.malloc(1000) for _ in range(5)]
    assert alloc.memory_allocated() == 5 * 1024
    for b in blocks[:3]:
        alloc.free(b)
    again = alloc.malloc(1000)  # from the front cache: no slow path ran since
    assert alloc.memory_allocated() == 3 * 1024 and alloc.b_alloc[0].peak == 5 * 1024
    assert alloc.n_alloc[0].allocated == 6 and alloc.b_req[1].current == 3000
    alloc.reset_peak_memory_stats()
    assert alloc.memory_stats()["allocated_bytes.all.peak"] == 3 * 1024
    assert A.memory_allocated.__doc__  # the module readers go through the same attributes
    alloc.free(again)
