"""Frees that arrive while the allocator's lock is held: by the garbage collector on the same thread
(a finalizer run inside malloc's critical section: a CUDAStorage in a reference cycle) and by
another thread. Waiting for the lock in the first case hangs the process forever, which the GPU
suite saw as workers stuck at random gradcheck tests; the free is queued for the lock's holder."""

from __future__ import annotations

import gc
import threading

import pytest

from genesis_storage.allocator import CachingAllocator, FakeRawAllocator


class _Cyclic:
    """Owns a block and frees it when collected; a reference cycle so only the collector frees it."""

    def __init__(self, alloc: CachingAllocator, nbytes: int) -> None:
        self.alloc, self.block, self.me = alloc, alloc.malloc(nbytes), self

    def __del__(self) -> None:
        self.alloc.free(self.block)


def _finishes(fn, seconds: float = 20.0) -> bool:
    """Whether fn() returns within `seconds` (run in a daemon thread, so a hang fails the test)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:  # re-raised in the caller
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if errors:
        raise errors[0]
    return not t.is_alive()


def test_a_collection_inside_malloc_frees_without_deadlock():
    alloc = CachingAllocator(FakeRawAllocator())
    thresholds = gc.get_threshold()

    def churn() -> None:
        gc.set_threshold(1, 1, 1)  # a collection at (nearly) every allocation, inside malloc's too
        try:
            for i in range(3000):
                _Cyclic(alloc, 512 * (1 + i % 7))  # garbage at once: freed by some later collection
                alloc.free(alloc.malloc(1 << (9 + i % 12)))  # new sizes: malloc's slow path allocates
        finally:
            gc.set_threshold(*thresholds)
        gc.collect()

    assert _finishes(churn), "a free from a finalizer inside the allocator deadlocked"
    assert alloc.memory_allocated() == 0
    assert alloc.memory_stats()["allocation.all.current"] == 0


def test_a_free_queued_inside_malloc_is_done_before_malloc_returns(monkeypatch):
    alloc = CachingAllocator(FakeRawAllocator())
    victim = alloc.malloc(4096)
    original = alloc._malloc_slow

    def slow_with_a_finalizer(*args, **kwargs):  # what the collector does at an unlucky moment
        alloc.free(victim)
        return original(*args, **kwargs)

    monkeypatch.setattr(alloc, "_malloc_slow", slow_with_a_finalizer)
    assert _finishes(lambda: alloc.malloc(1 << 20))
    monkeypatch.undo()
    # The queued free ran before malloc released the lock: only the new block is allocated.
    assert alloc.memory_allocated() == 1 << 20
    assert alloc.memory_stats()["allocation.all.current"] == 1


def test_a_free_from_another_thread_while_held_is_not_lost():
    alloc = CachingAllocator(FakeRawAllocator())
    block = alloc.malloc(4096)
    with alloc._lock:  # another thread's critical section, as far as the freeing thread can tell
        t = threading.Thread(target=alloc.free, args=(block,))
        t.start()
        t.join(5)
        assert not t.is_alive()  # it did not wait for us
    assert alloc.memory_allocated() == 0  # the reader ran the queued free first
    assert alloc.malloc(4096).addr == block.addr  # and the block is reusable


def test_a_direct_double_free_still_raises():
    from genesis_storage.errors import DoubleFreeError

    alloc = CachingAllocator(FakeRawAllocator())
    block = alloc.malloc(512)
    alloc.free(block)
    with pytest.raises(DoubleFreeError):
        alloc.free(block)


def test_the_pinned_pool_too(monkeypatch):
    """The pinned host pool has the same shape: a lease's finalizer frees into it."""
    from genesis_storage import host

    pool = host.PinnedMemoryPool()
    addresses = iter(range(1 << 20, 1 << 30, 1 << 16))
    victim = host._PinnedBlock(next(addresses), 512)
    pool.allocated_bytes = 512  # as if malloc had handed `victim` out

    def host_alloc_with_a_finalizer(size: int):  # the collector runs a lease's __del__ in malloc
        pool.free(victim)
        return host._PinnedBlock(next(addresses), size)

    monkeypatch.setattr(pool, "_host_alloc", host_alloc_with_a_finalizer)
    block = None

    def malloc() -> None:
        nonlocal block
        block = pool.malloc(4096)

    assert _finishes(malloc)
    assert pool.allocated_bytes == 4096  # the queued free was done before malloc returned
    assert pool._free[512] == [victim]
    assert block is not None and block.size == 4096
