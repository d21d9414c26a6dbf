"""Host storage: pageable (numpy) or pinned (cuMemHostAlloc) from a caching pinned pool.

Pinned blocks are cached by power-of-two size. An async copy records an event on the block; a
freed block returns to the cache only after all its events have completed, so the buffer a copy
reads or writes is never handed out again while the copy may still run.
"""

from __future__ import annotations

import threading
from bisect import bisect_right, insort
from collections import deque
from typing import Any

import numpy as np

from . import _driver
from ._driver import check
from .device import ensure_context
from .dtypes import NUMPY_DTYPES, itemsize
from .stream import Event, Stream


class _PinnedBlock:
    __slots__ = ("events", "ptr", "size")

    def __init__(self, ptr: int, size: int) -> None:
        self.ptr = ptr
        self.size = size
        self.events: list[Event] = []


class PinnedMemoryPool:
    """Caching pool of page-locked host memory (portable: usable from every device's context)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: deque[_PinnedBlock] = deque()  # frees that found the lock held (see free)
        self._free: dict[int, list[_PinnedBlock]] = {}
        self._pending: list[_PinnedBlock] = []
        self._starts: list[int] = []  # sorted block addresses, for contains()
        self._blocks: dict[int, _PinnedBlock] = {}
        self.allocated_bytes = 0
        self.reserved_bytes = 0
        self.num_host_alloc = 0
        self.num_host_free = 0

    def malloc(self, nbytes: int) -> _PinnedBlock:
        size = 512
        while size < nbytes:
            size <<= 1
        with self._lock:
            self._drain_queued()
            if self._pending:
                self._process_events()
            lst = self._free.get(size)
            if lst:
                block = lst.pop()
            else:
                block = self._host_alloc(size)
            self.allocated_bytes += size
            self._drain_queued()
            return block

    def _host_alloc(self, size: int) -> _PinnedBlock:
        drv = _driver.driver()
        ensure_context(0)  # cuMemHostAlloc needs a current context; PORTABLE makes it valid in all
        flags = drv.CU_MEMHOSTALLOC_PORTABLE
        err, ptr = drv.cuMemHostAlloc(size, flags)
        if err and _driver.is_oom(err):
            self._release_free()
            err, ptr = drv.cuMemHostAlloc(size, flags)
        if err:
            check("cuMemHostAlloc", (err,))
        block = _PinnedBlock(int(ptr), size)
        self._blocks[block.ptr] = block
        insort(self._starts, block.ptr)
        self.reserved_bytes += size
        self.num_host_alloc += 1
        return block

    def free(self, block: _PinnedBlock) -> None:
        # A lease's finalizer calls this, and the garbage collector may run it inside malloc's own
        # critical section on this thread: waiting for the lock would hang forever. A free that finds
        # the lock held is queued (an atomic append) for the holder, or the next caller, to finish
        # (CachingAllocator._queue_if_held says the same for device memory).
        self._queued.append(block)
        if not self._lock.acquire(False):
            return
        try:
            self._drain_queued()
        finally:
            self._lock.release()

    def _drain_queued(self) -> None:
        while self._queued:
            self._free_locked(self._queued.popleft())

    def _free_locked(self, block: _PinnedBlock) -> None:
        self.allocated_bytes -= block.size
        if block.events and not all(e.query() for e in block.events):
            self._pending.append(block)
        else:
            block.events.clear()
            self._free.setdefault(block.size, []).append(block)

    def _process_events(self) -> None:
        still = []
        for block in self._pending:
            if all(e.query() for e in block.events):
                block.events.clear()
                self._free.setdefault(block.size, []).append(block)
            else:
                still.append(block)
        self._pending = still

    def _release_free(self) -> None:
        drv = _driver.driver()
        for lst in self._free.values():
            for block in lst:
                check("cuMemFreeHost", drv.cuMemFreeHost(block.ptr))
                del self._blocks[block.ptr]
                self._starts.remove(block.ptr)
                self.reserved_bytes -= block.size
                self.num_host_free += 1
            lst.clear()

    def empty_cache(self) -> None:
        with self._lock:
            for block in self._pending:
                for e in block.events:
                    e.synchronize()
            self._process_events()
            if self._free:
                self._release_free()

    def contains(self, addr: int) -> bool:
        """True when addr lies inside a pinned block of this pool."""
        starts = self._starts
        if not starts:
            return False
        i = bisect_right(starts, addr) - 1
        if i < 0:
            return False
        b = self._blocks.get(starts[i])
        return b is not None and addr < b.ptr + b.size

    def stats(self) -> dict[str, int]:
        return {
            "allocated_bytes": self.allocated_bytes,
            "reserved_bytes": self.reserved_bytes,
            "num_host_alloc": self.num_host_alloc,
            "num_host_free": self.num_host_free,
        }


pinned_pool = PinnedMemoryPool()


class _PinnedLease:
    """Owns one pinned block; every numpy view and the HostStorage share it (no reference cycle),
    and the block goes back to the pool when the last of them is gone."""

    __slots__ = ("block",)

    def __init__(self, block: _PinnedBlock) -> None:
        self.block = block

    def __del__(self) -> None:
        if _driver.shutting_down:  # pinned_pool.free may query events: no driver calls at exit
            return
        try:
            pinned_pool.free(self.block)
        except Exception:
            pass


class _ArrayHolder:
    """Gives numpy an __array_interface__ whose base keeps the HostStorage alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, ptr: int, nbytes: int, owner: Any, readonly: bool = False) -> None:
        self.owner = owner
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, readonly), "version": 3}


class HostStorage:
    """nbytes of host memory: pageable (a numpy buffer) or pinned (page-locked, from the pool)."""

    __slots__ = ("__weakref__", "_bytes", "_lease", "nbytes", "pinned", "ptr")

    def __init__(self, nbytes: int, pinned: bool = False) -> None:
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        self.nbytes = nbytes
        self.pinned = pinned
        self._lease: _PinnedLease | None = None
        if pinned:
            self._lease = _PinnedLease(pinned_pool.malloc(nbytes))
            self.ptr = self._lease.block.ptr
            self._bytes = np.asarray(_ArrayHolder(self.ptr, nbytes, self._lease))
        else:
            self._bytes = np.empty(nbytes, dtype=np.uint8)
            self.ptr = self._bytes.ctypes.data

    @classmethod
    def from_numpy(cls, array: np.ndarray, pinned: bool = False) -> HostStorage:
        """A copy of `array`'s bytes (C order)."""
        a = np.ascontiguousarray(array)
        h = cls(a.nbytes, pinned=pinned)
        h._bytes[:] = a.reshape(-1).view(np.uint8)
        return h

    def numpy(self, dtype: str = "uint8", shape: tuple[int, ...] | None = None) -> np.ndarray:
        """A numpy view (no copy) of the bytes; bfloat16 is shown as uint16."""
        n = self.nbytes // itemsize(dtype)
        arr = self._bytes[: n * itemsize(dtype)].view(NUMPY_DTYPES[dtype])
        return arr.reshape(shape) if shape is not None else arr

    def _record(self, stream: Stream) -> None:
        """An async copy on `stream` uses this buffer: keep it out of reuse until it has run."""
        if self._lease is not None:
            ev = Event()
            ev.record(stream)
            self._lease.block.events.append(ev)

    def __repr__(self) -> str:
        return f"HostStorage(nbytes={self.nbytes}, pinned={self.pinned})"


def host_memory_stats() -> dict[str, int]:
    """Pinned pool statistics: allocated_bytes, reserved_bytes, num_host_alloc, num_host_free."""
    return pinned_pool.stats()


def host_empty_cache() -> None:
    """Return cached pinned blocks whose copies have finished to the driver."""
    pinned_pool.empty_cache()
