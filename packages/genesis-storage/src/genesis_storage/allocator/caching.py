"""The caching allocator: PyTorch's CUDACachingAllocator design, as a small state machine in Python.

Plain data: a *segment* is one raw allocation; it is cut into *blocks* (a doubly linked list in
address order). Free blocks wait in a *pool* keyed by (stream, kind), sorted by (size, addr) for
best fit. Operations: malloc (best fit, else new segment), split, free (merge with free
neighbours, back to the pool), release (give whole free segments back to the raw allocator).

- sizes round up to 512 B; requests <= 1 MiB come from 2 MiB "small" segments, larger ones from
  20 MiB segments (requests < 10 MiB) or segments rounded up to 2 MiB;
- hot path: a freed block first goes to an exact-size *front cache* ((stream, rounded size) ->
  blocks). A malloc of that size takes it back with no search, split or merge. Any malloc that
  misses the front cache first moves every block in it to the pools (merging free neighbours, as
  PyTorch does at free time), so every best-fit decision sees fully coalesced pools;
- a block is reused only by its own stream (stream order makes that safe without syncing);
  record_stream(block, s) defers reuse until an event recorded on s at free time has completed;
- on a failed raw allocation: wait for pending events, free all cached segments, retry, then
  raise OutOfMemoryError with the numbers a user needs;
- optional fragmentation cap (`max_fragmentation=r`, or GENESIS_MAX_FRAGMENTATION=r): requests
  of 1-10 MiB and of >= 10 MiB use separate pools, a request >= 10 MiB does not take a cached
  block more than 20 MiB larger than itself, and before a new segment would push reserved memory
  above r x max(peak allocated, allocated + request), whole free segments are released (largest
  first). Trades cuMemFree/cuMemAlloc calls (cuMemFree synchronises the device) for memory; off by
  default, where the placement policy is PyTorch's;
- CUDA graph capture (see private.py): while stream S captures into private pool P
  (begin_allocate_to_pool), S's allocations come from P's segments and its frees go back to P;
  no event is queried while a capture is underway (frees that need events wait for its end);
- GENESIS_NO_CACHING=1 turns it into a pass-through (for compute-sanitizer);
- GENESIS_STORAGE_DEBUG=1 poisons freed blocks with 0xFF.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from typing import Any

from ..errors import DoubleFreeError, OutOfMemoryError
from .block import (
    ALLOCATED,
    CACHED,
    DEAD,
    FREE,
    HUGE_KIND,
    LARGE_KIND,
    PENDING,
    SMALL_KIND,
    STATE_NAMES,
    Block,
    BlockPool,
)
from .private import PoolId, PrivatePool
from .raw import RawAllocator
from .stats import STAT_NAMES, Stat, flatten, triple

MIN_BLOCK = 512  # every size rounds up to this; also the alignment of every block
SMALL_SIZE = 1 << 20  # largest "small" request
SMALL_BUFFER = 2 << 20  # segment size for small requests
LARGE_BUFFER = 20 << 20  # segment size for large requests below MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20  # larger requests get a segment rounded up to this
OVERSIZE_SLACK = 20 << 20  # with a fragmentation cap: largest excess a >= 10 MiB request may take
POISON = 0xFF
_STREAM_SHIFT = 48  # front-cache key: (stream << 48) | rounded size (sizes stay below 2**48)
# What a front-cache miss does (see _malloc_slow), chosen per epoch of allocations from the epoch's hits.
# Sizes that never repeat (a random workload) hardly ever hit the front cache, and coalescing it at every
# miss keeps fragmentation at torch's. A loop that repeats its sizes (a training step) hits it often, and
# coalescing at every miss would flush the very blocks its next requests want: each miss would cascade
# into the next. So an epoch with at least LAZY_HIT_RATIO hits coalesces only when the pools come up short.
EPOCH = 512  # allocations
LAZY_HIT_RATIO = 0.05


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _env_float(name: str) -> float | None:
    v = os.environ.get(name, "").strip()
    return float(v) if v else None


class CachingAllocator:
    """One device's caching allocator over a RawAllocator. Thread-safe (one lock per device)."""

    def __init__(
        self,
        raw: RawAllocator,
        *,
        caching: bool | None = None,
        debug: bool | None = None,
        trace: int = 0,
        max_fragmentation: float | None = None,
    ) -> None:
        self.raw = raw
        self.device = raw.device
        self.caching = (not _env_flag("GENESIS_NO_CACHING")) if caching is None else caching
        self.debug = _env_flag("GENESIS_STORAGE_DEBUG") if debug is None else debug
        self._lock = threading.Lock()
        # Calls that found the lock held (see _queue_if_held): drained by the lock's next holder.
        self._queued: deque[tuple[Any, Any]] = deque()
        self._front: dict[int, list[Block]] = {}  # (stream << 48) | size -> freed blocks (CACHED)
        self._pools: dict[tuple[int, int], BlockPool] = {}  # (stream, kind) -> free blocks (FREE)
        self._segments: dict[int, Block] = {}  # segment address -> its first block
        self._seg_size: dict[int, int] = {}
        self._pending: list[tuple[Any, Block]] = []  # (event, block) awaiting record_stream work
        self._captures: dict[int, PrivatePool] = {}  # stream handle -> pool it captures into
        self._private: dict[PoolId, PrivatePool] = {}  # live private pools by id
        self._deferred: list[Block] = []  # freed during a capture, their events not recorded yet
        self._limit: int | None = None
        self._fraction: float | None = None
        self._trace: deque[dict[str, Any]] | None = deque(maxlen=trace) if trace else None
        self.max_fragmentation: float | None = None
        self.set_max_fragmentation(
            _env_float("GENESIS_MAX_FRAGMENTATION") if max_fragmentation is None else max_fragmentation
        )
        # statistics (all, small, large); active = allocation + pending, see memory_stats()
        self.n_alloc = triple()
        self.b_alloc = triple()  # allocated_bytes: the allocated_bytes.all.current is memory_allocated()
        self.b_req = triple()
        self.n_seg = triple()
        self.b_res = triple()
        self.n_pend = triple()
        self.b_pend = triple()
        self._active_peak = [0, 0, 0, 0, 0, 0]  # counts (3) then bytes (3), while blocks are pending
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_sync_all_streams = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self._lazy = False  # the miss policy of this epoch (see EPOCH)
        self._epoch_start = 0  # n_alloc.all.allocated when the epoch began
        self._epoch_misses = 0
        self._update_fast()

    def _update_fast(self) -> None:
        # free() may use the front cache only when nothing else has to happen at free time
        self._fast = self.caching and not self.debug and self._trace is None

    def set_max_fragmentation(self, ratio: float | None) -> None:
        """Cap reserved memory at ratio x peak allocated by releasing whole free segments before a
        new one is allocated (None: no cap, PyTorch's behaviour). Applies to segments made later."""
        if ratio is not None and not ratio >= 1.0:
            raise ValueError(f"max_fragmentation must be >= 1.0 or None, got {ratio}")
        with self._lock:
            self.max_fragmentation = ratio

    # ------------------------------------------------------------------ hot path
    def malloc(self, nbytes: int, stream: int = 0) -> Block:
        """A block of at least nbytes (rounded to 512) usable on `stream`."""
        size = MIN_BLOCK if nbytes <= MIN_BLOCK else (nbytes + MIN_BLOCK - 1) & -MIN_BLOCK
        key = (stream << _STREAM_SHIFT) | size if stream else size
        lock = self._lock
        lock.acquire()  # (faster than `with`; the allocator is hit once per op)
        try:
            if self._queued:
                self._drain_queued()
            if self._captures:  # a graph captures on this device: maybe a private pool, no event query
                ppool = self._captures.get(stream)
                if ppool is not None:
                    block = self._malloc_slow(size, nbytes, stream, key, ppool)
                else:
                    lst = self._front.get(key)
                    block = lst.pop() if lst else self._malloc_slow(size, nbytes, stream, key)
            else:
                if self._pending:
                    self._process_events()
                lst = self._front.get(key)
                block = lst.pop() if lst else self._malloc_slow(size, nbytes, stream, key)
            block.state = ALLOCATED
            block.requested = nbytes
            # statistics, unrolled: this is the path torch.empty is compared against
            bs = block.size
            if block.small:
                n0, n1, _ = self.n_alloc
                b0, b1, _ = self.b_alloc
                r0, r1, _ = self.b_req
            else:
                n0, _, n1 = self.n_alloc
                b0, _, b1 = self.b_alloc
                r0, _, r1 = self.b_req
            c = n0.current = n0.current + 1
            n0.allocated += 1
            if c > n0.peak:
                n0.peak = c
            c = n1.current = n1.current + 1
            n1.allocated += 1
            if c > n1.peak:
                n1.peak = c
            c = b0.current = b0.current + bs
            b0.allocated += bs
            if c > b0.peak:
                b0.peak = c
            c = b1.current = b1.current + bs
            b1.allocated += bs
            if c > b1.peak:
                b1.peak = c
            c = r0.current = r0.current + nbytes
            r0.allocated += nbytes
            if c > r0.peak:
                r0.peak = c
            c = r1.current = r1.current + nbytes
            r1.allocated += nbytes
            if c > r1.peak:
                r1.peak = c
            if self._pending:
                self._bump_active_peaks()
            if self._trace is not None:
                self._record("alloc", block.addr, bs, stream)
            if self._queued:  # (frees a garbage collection run inside this section queued)
                self._drain_queued()
        finally:
            lock.release()
        return block

    def free(self, block: Block) -> None:
        """Return a block. Reuse waits for work recorded by record_stream on other streams."""
        lock = self._lock
        if not lock.acquire(False):
            self._queue_if_held(self._free_queued, block)
            return
        try:
            if self._queued:
                self._drain_queued()
            self._free_locked(block)
            if self._queued:
                self._drain_queued()
        finally:
            lock.release()

    def _queue_if_held(self, fn: Any, arg: Any) -> None:
        """Run ``fn(arg)`` under the lock, which was found held; or queue it for the holder.

        The garbage collector can run anywhere a Python object is allocated, inside this allocator's
        own critical sections too, and the finalizers it runs free blocks (a CUDAStorage in a
        reference cycle) and release graph pools. Waiting for the lock there would wait on this very
        thread forever: an intermittent hang of the whole process. So a call that finds the lock held
        is queued (a deque's append is atomic) and whoever holds the lock next runs it: the holder
        itself before it releases, or the next malloc / free / reader. A call queued behind another
        thread's section is as correct, only a moment later."""
        self._queued.append((fn, arg))
        if self._lock.acquire(False):  # released meanwhile: nobody may look at the queue again soon
            try:
                self._drain_queued()
            finally:
                self._lock.release()

    def _drain_queued(self) -> None:
        """Run the queued calls (the lock is held)."""
        queued = self._queued
        while queued:
            fn, arg = queued.popleft()
            fn(arg)

    def _free_queued(self, block: Block) -> None:
        # A double free found here has no caller left to raise to (finalizers swallow errors anyway).
        if block.state == ALLOCATED:
            self._free_locked(block)

    def _free_locked(self, block: Block) -> None:
        if block.state != ALLOCATED:
            raise DoubleFreeError(
                f"double free of block at {block.addr:#x} ({block.size} bytes) on device {self.device}"
            )
        bs = block.size
        nb = block.requested
        if block.small:
            n0, n1, _ = self.n_alloc
            b0, b1, _ = self.b_alloc
            r0, r1, _ = self.b_req
        else:
            n0, _, n1 = self.n_alloc
            b0, _, b1 = self.b_alloc
            r0, _, r1 = self.b_req
        n0.current -= 1
        n1.current -= 1
        b0.current -= bs
        b1.current -= bs
        r0.current -= nb
        r1.current -= nb
        if block.stream_uses is None and self._fast and block.ppool is None:
            block.state = CACHED
            lst = self._front.get(block.fkey)
            if lst is None:
                self._front[block.fkey] = [block]
            else:
                lst.append(block)
            return
        self._free_slow(block)

    def _free_slow(self, block: Block) -> None:
        if self._trace is not None:
            self._record("free_requested", block.addr, block.size, block.stream)
        if block.stream_uses:
            block.state = PENDING
            pi = 1 if block.small else 2
            for st, n in ((self.n_pend, 1), (self.b_pend, block.size)):
                st[0].add(n)
                st[pi].add(n)
            self._bump_active_peaks()
            if self._captures:
                # An event recorded on a capturing stream would become part of the graph, and it
                # could not be queried: record the events once no capture is underway (torch too).
                self._deferred.append(block)
            else:
                self._insert_events(block)
        else:
            block.stream_uses = None
            self._free_block(block)

    def _insert_events(self, block: Block) -> None:
        """Record an event on every stream that used the pending block; reuse waits for them all."""
        uses = block.stream_uses or ()
        block.stream_uses = None
        for s in uses:
            self._pending.append((self.raw.record_event(s), block))
            block.events += 1
        if block.events == 0:  # (no stream left: nothing to wait for)
            block.events = 1
            self._event_done(block)

    def record_stream(self, block: Block, stream: int) -> None:
        """Note that `block` is used on `stream`: at free time, reuse waits for that stream's work."""
        with self._lock:
            if block.state != ALLOCATED:
                raise DoubleFreeError(f"record_stream on a freed block at {block.addr:#x}")
            if stream == block.stream:
                return
            if block.stream_uses is None:
                block.stream_uses = set()
            block.stream_uses.add(stream)

    # ------------------------------------------------------------------ block state machine
    def _malloc_slow(self, size: int, nbytes: int, stream: int, key: int, ppool: PrivatePool | None = None) -> Block:
        """Front-cache miss: the front cache coalesced into the pools (at every miss, or in a lazy epoch
        only when the pools cannot serve the request without it), best fit, else a new segment. With
        `ppool` (the stream captures a graph) only that private pool's blocks are candidates.

        In a lazy epoch a training step, which allocates the same sizes in the same order every step,
        is soon served from the front cache alone. A new segment is still made only after everything
        cached that could serve it was coalesced."""
        if ppool is None:
            self._count_miss()
        small = size <= SMALL_SIZE
        if not self.caching and ppool is None:  # a private pool always caches: its blocks outlive frees
            block = self._new_block(size, SMALL_KIND if small else LARGE_KIND, stream, nbytes)
            block.fkey = key
            return block
        cap = self.max_fragmentation
        if small:
            kind = SMALL_KIND
        elif cap is not None and size >= MIN_LARGE_ALLOC:
            kind = HUGE_KIND
        else:
            kind = LARGE_KIND
        max_size = size + OVERSIZE_SLACK if kind == HUGE_KIND else None
        pools = self._pools if ppool is None else ppool.pools
        pool = pools.get((stream, kind))
        if ppool is None and self._front and not self._lazy:
            self._flush_front()
            pool = pools.get((stream, kind))
        fit = None if pool is None else pool.best_fit(size, max_size)
        if fit is None and self._front and ppool is None:
            fit = self._coalesce_until_fit(stream, kind, size, max_size)
            pool = pools.get((stream, kind))
        block = fit if fit is not None else self._new_block(size, kind, stream, nbytes, ppool)
        block.state = ALLOCATED  # before splitting: the remainder must not merge back into it
        rem = block.size - size
        if rem >= MIN_BLOCK if small else rem > SMALL_SIZE:
            self._split(block, size)
        block.fkey = key
        return block

    def _count_miss(self) -> None:
        """Count a front-cache miss; at an epoch's end, choose the next epoch's miss policy."""
        self._epoch_misses += 1
        done = self.n_alloc[0].allocated - self._epoch_start  # this request not counted yet
        if done >= EPOCH or done < 0:  # (< 0: the statistics were reset)
            self._lazy = done > 0 and self._epoch_misses <= (1.0 - LAZY_HIT_RATIO) * done
            self._epoch_start = self.n_alloc[0].allocated
            self._epoch_misses = 0

    def _pool_for(self, block: Block) -> BlockPool:
        pools = self._pools if block.ppool is None else block.ppool.pools
        k = (block.stream, block.kind)
        pool = pools.get(k)
        if pool is None:
            pool = pools[k] = BlockPool()
        return pool

    def _split(self, block: Block, size: int) -> None:
        rest = Block(block.addr + size, block.size - size, block.stream, block.small, block.segment, block.kind)
        rest.ppool = block.ppool
        rest.prev = block
        rest.next = block.next
        if block.next is not None:
            block.next.prev = rest
        block.next = rest
        block.size = size
        self._pool_insert(rest)

    def _pool_insert(self, block: Block) -> None:
        """Put a free block in its pool, merged with free (pooled) neighbours, as PyTorch does."""
        pool = self._pool_for(block)
        p = block.prev
        if p is not None and p.state == FREE:
            pool.remove(p)
            p.size += block.size
            p.next = n = block.next
            if n is not None:
                n.prev = p
            block.state = DEAD
            block = p
        n = block.next
        if n is not None and n.state == FREE:
            pool.remove(n)
            block.size += n.size
            block.next = nn = n.next
            if nn is not None:
                nn.prev = block
            n.state = DEAD
        block.state = FREE
        pool.insert(block)

    def _coalesce_until_fit(self, stream: int, kind: int, size: int, max_size: int | None) -> Block | None:
        """The pool of (stream, kind) is short of a request: move that pool's front-cache lists into it,
        largest blocks first, until best fit finds a block (None: not even with all of them). The lists
        left behind keep serving the requests that come back to them."""
        front = self._front
        keys = [k for k, lst in front.items() if lst and lst[0].stream == stream and lst[0].kind == kind]
        keys.sort(key=lambda k: front[k][0].size, reverse=True)
        pools = self._pools
        for k in keys:
            for b in front.pop(k):
                self._pool_insert(b)
            fit = pools[(stream, kind)].best_fit(size, max_size)
            if fit is not None:
                return fit
        return None

    def _flush_front(self) -> None:
        """Move every block of the front cache to its pool (merging neighbours)."""
        front = self._front
        self._front = {}
        for lst in front.values():
            for b in lst:
                self._pool_insert(b)

    def _free_block(self, block: Block) -> None:
        """Block is no longer used by any stream: cache it in its pool (merged with neighbours)."""
        if self._trace is not None:
            self._record("free_completed", block.addr, block.size, block.stream)
        if self.debug:
            self.raw.memset(block.addr, block.size, POISON, block.stream)
        if not self.caching and block.ppool is None:
            block.state = DEAD
            self._release_segment(block)
            return
        self._pool_insert(block)

    def _process_events(self) -> None:
        still: list[tuple[Any, Block]] = []
        for ev, block in self._pending:
            if self.raw.query_event(ev):
                self.raw.release_event(ev)
                self._event_done(block)
            else:
                still.append((ev, block))
        self._pending = still

    def _event_done(self, block: Block) -> None:
        block.events -= 1
        if block.events == 0:
            pi = 1 if block.small else 2
            for st, n in ((self.n_pend, 1), (self.b_pend, block.size)):
                st[0].current -= n
                st[pi].current -= n
            self._free_block(block)

    def _synchronize_and_free_events(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            self.num_sync_all_streams += 1
        for ev, block in pending:
            self.raw.synchronize_event(ev)
            self.raw.release_event(ev)
            self._event_done(block)

    def _bump_active_peaks(self) -> None:
        ap = self._active_peak
        for i in range(3):
            ap[i] = max(ap[i], self.n_alloc[i].current + self.n_pend[i].current)
            ap[3 + i] = max(ap[3 + i], self.b_alloc[i].current + self.b_pend[i].current)

    # ------------------------------------------------------------------ segments
    def _new_block(self, size: int, kind: int, stream: int, nbytes: int, ppool: PrivatePool | None = None) -> Block:
        if not self.caching and ppool is None:
            alloc_size = size
        elif kind == SMALL_KIND:
            alloc_size = SMALL_BUFFER
        elif size < MIN_LARGE_ALLOC:
            alloc_size = LARGE_BUFFER
        else:
            alloc_size = (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE
        capturing = bool(self._captures)
        if self.max_fragmentation is not None and self.caching and not capturing:
            self._release_over_cap(alloc_size, size)
        block = self._new_segment(alloc_size, kind, stream, ppool)
        if block is not None:
            return block
        # Out of memory: let pending frees finish, look in the cache again, release it, retry.
        # Not while a graph captures: waiting on events or freeing device memory (cuMemFree
        # synchronises) would invalidate the capture; that allocation fails with the error below.
        self.num_alloc_retries += 1
        if self._pending and not capturing:
            self._synchronize_and_free_events()
            pool = self._pools.get((stream, kind)) if ppool is None else None
            if pool is not None:
                block = pool.best_fit(size)
                if block is not None:
                    return block
        if not capturing:
            self._release_cached()
        block = self._new_segment(alloc_size, kind, stream, ppool)
        if block is None:
            self.num_ooms += 1
            raise OutOfMemoryError(self._oom_message(nbytes, alloc_size))
        return block

    def _release_over_cap(self, alloc_size: int, size: int) -> None:
        """Release whole free segments (largest first) while a new segment of alloc_size would take
        reserved memory above max_fragmentation x max(peak allocated, allocated + size)."""
        assert self.max_fragmentation is not None
        b = self.b_alloc[0]
        cap = self.max_fragmentation * max(b.peak, b.current + size)
        res = self.b_res[0]
        if res.current + alloc_size <= cap:
            return
        whole = [
            (blk.size, blk.addr, pool, blk)
            for pool in self._pools.values()
            for blk in pool.blocks.values()
            if blk.prev is None and blk.next is None
        ]
        whole.sort(reverse=True, key=lambda t: (t[0], t[1]))
        for _, _, pool, blk in whole:
            if res.current + alloc_size <= cap:
                break
            pool.remove(blk)
            blk.state = DEAD
            self._release_segment(blk)

    def _new_segment(self, alloc_size: int, kind: int, stream: int, ppool: PrivatePool | None = None) -> Block | None:
        if self._limit is not None and self.b_res[0].current + alloc_size > self._limit:
            return None
        addr = self.raw.malloc(alloc_size)
        if addr is None:
            return None
        self.num_device_alloc += 1
        small = kind == SMALL_KIND
        pi = 1 if small else 2
        for st, n in ((self.n_seg, 1), (self.b_res, alloc_size)):
            st[0].add(n)
            st[pi].add(n)
        block = Block(addr, alloc_size, stream, small, addr, kind)
        if ppool is not None:
            block.ppool = ppool
            ppool.segments += 1
        self._segments[addr] = block
        self._seg_size[addr] = alloc_size
        if self._trace is not None:
            self._record("segment_alloc", addr, alloc_size, stream)
        return block

    def _release_segment(self, head: Block) -> None:
        addr = head.segment
        size = self._seg_size.pop(addr)
        del self._segments[addr]
        self.raw.free(addr, size)
        self.num_device_free += 1
        pi = 1 if head.small else 2
        for st, n in ((self.n_seg, 1), (self.b_res, size)):
            st[0].current -= n
            st[pi].current -= n
        if self._trace is not None:
            self._record("segment_free", addr, size, head.stream)
        pp = head.ppool
        if pp is not None:
            pp.segments -= 1
            if pp.freeable and pp.segments == 0:
                self._private.pop(pp.id, None)

    def _release_cached(self) -> None:
        """Give every entirely free segment back to the raw allocator: those of the general pools and
        of private pools no graph holds any more (a live graph's pool keeps its memory)."""
        if self._front:
            self._flush_front()
        pools = list(self._pools.values())
        for pp in list(self._private.values()):
            if pp.freeable:
                pools.extend(pp.pools.values())
        for pool in pools:
            for b in [b for b in pool.blocks.values() if b.prev is None and b.next is None]:
                pool.remove(b)
                b.state = DEAD
                self._release_segment(b)

    def _oom_message(self, nbytes: int, alloc_size: int) -> str:
        try:
            free, total = self.raw.mem_info()
        except Exception:
            free = total = -1
        alloc = self.b_alloc[0].current
        res = self.b_res[0].current
        limit = f"{_fmt(self._limit)} (memory fraction {self._fraction})" if self._limit is not None else "none"
        return (
            f"CUDA out of memory on device {self.device}. Tried to allocate {_fmt(nbytes)} "
            f"({nbytes} bytes; segment of {alloc_size} bytes). Device {self.device} has a total "
            f"capacity of {_fmt(total)} of which {_fmt(free)} is free. Of the memory in use, "
            f"{_fmt(alloc)} ({alloc} bytes) is allocated by Genesis and {_fmt(res - alloc)} "
            f"({res - alloc} bytes) is reserved by Genesis but unallocated. Limit: {limit}."
        )

    # ------------------------------------------------------------------ public management
    def empty_cache(self) -> None:
        with self._lock:
            if self._queued:
                self._drain_queued()
            if self._captures:
                raise RuntimeError(
                    f"empty_cache() cannot run while a CUDA graph is being captured on device {self.device}: "
                    "it waits for pending work and frees device memory (call it before or after the capture)"
                )
            self._synchronize_and_free_events()
            self._release_cached()

    # ------------------------------------------------------------------ CUDA graph private pools
    def begin_allocate_to_pool(self, pool_id: PoolId, stream: int) -> None:
        """From now on `stream`'s allocations and frees use private pool `pool_id` (created on first
        use); the pool gains one user (the graph being captured), released by release_pool."""
        with self._lock:
            if stream in self._captures:
                raise RuntimeError(f"stream {stream:#x} is already capturing into pool {self._captures[stream].id}")
            pp = self._private.get(pool_id)
            if pp is None:
                pp = self._private[pool_id] = PrivatePool(pool_id)
            pp.use_count += 1
            self._captures[stream] = pp

    def end_allocate_to_pool(self, stream: int) -> None:
        """`stream` stops capturing: its allocations come from the general pool again. Once no capture
        is underway, the frees deferred during captures record their events."""
        with self._lock:
            self._captures.pop(stream, None)
            if not self._captures and self._deferred:
                deferred, self._deferred = self._deferred, []
                for block in deferred:
                    self._insert_events(block)

    def release_pool(self, pool_id: PoolId) -> None:
        """A graph using `pool_id` is gone. With no user left the pool's free segments become
        releasable (empty_cache, or a failed allocation); blocks still held are released after
        they are freed. (A graph's finalizer calls this: see _queue_if_held.)"""
        if not self._lock.acquire(False):
            self._queue_if_held(self._release_pool_locked, pool_id)
            return
        try:
            if self._queued:
                self._drain_queued()
            self._release_pool_locked(pool_id)
        finally:
            self._lock.release()

    def _release_pool_locked(self, pool_id: PoolId) -> None:
        pp = self._private.get(pool_id)
        if pp is None or pp.use_count == 0:
            raise RuntimeError(f"release_pool: private pool {pool_id} has no user on device {self.device}")
        pp.use_count -= 1
        if pp.freeable and pp.segments == 0:
            del self._private[pool_id]

    def private_pool(self, pool_id: PoolId) -> PrivatePool | None:
        """The live private pool `pool_id` (for statistics and tests), or None."""
        return self._private.get(pool_id)

    @property
    def captures_underway(self) -> dict[int, PoolId]:
        """stream handle -> id of the pool it captures into (a copy)."""
        return {s: pp.id for s, pp in self._captures.items()}

    def set_memory_fraction(self, fraction: float) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"memory fraction must be in [0, 1], got {fraction}")
        _, total = self.raw.mem_info()
        with self._lock:
            self._fraction = fraction
            self._limit = int(fraction * total)

    @property
    def limit(self) -> int | None:
        return self._limit

    def memory_allocated(self) -> int:
        if self._queued:
            with self._lock:
                self._drain_queued()
        return self.b_alloc[0].current

    def memory_reserved(self) -> int:
        return self.b_res[0].current

    def reset_peak_memory_stats(self) -> None:
        with self._lock:
            if self._queued:
                self._drain_queued()
            for st in (self.n_alloc, self.b_alloc, self.b_req, self.n_seg, self.b_res, self.n_pend, self.b_pend):
                for s in st:
                    s.reset_peak()
            for i in range(3):
                self._active_peak[i] = self.n_alloc[i].current + self.n_pend[i].current
                self._active_peak[3 + i] = self.b_alloc[i].current + self.b_pend[i].current

    def reset_accumulated_memory_stats(self) -> None:
        with self._lock:
            if self._queued:
                self._drain_queued()
            for st in (self.n_alloc, self.b_alloc, self.b_req, self.n_seg, self.b_res, self.n_pend, self.b_pend):
                for s in st:
                    s.reset_accumulated()
            self.num_alloc_retries = self.num_ooms = self.num_sync_all_streams = 0
            self.num_device_alloc = self.num_device_free = 0

    def memory_stats(self) -> dict[str, int]:
        """PyTorch's torch.cuda.memory_stats() keys and meanings."""
        with self._lock:
            if self._queued:
                self._drain_queued()
            out: dict[str, int] = {}
            active_n = triple()
            active_b = triple()
            for i in range(3):
                for act, al, pe, peak in (
                    (active_n, self.n_alloc, self.n_pend, self._active_peak[i]),
                    (active_b, self.b_alloc, self.b_pend, self._active_peak[3 + i]),
                ):
                    act[i].current = al[i].current + pe[i].current
                    act[i].allocated = al[i].allocated
                    act[i].base = al[i].base + pe[i].base
                    act[i].peak = max(al[i].peak, peak, act[i].current)
            split_n, split_b = self._inactive_split()
            table: dict[str, tuple[Stat, Stat, Stat]] = {
                "allocation": self.n_alloc,
                "segment": self.n_seg,
                "active": active_n,
                "inactive_split": split_n,
                "allocated_bytes": self.b_alloc,
                "reserved_bytes": self.b_res,
                "active_bytes": active_b,
                "inactive_split_bytes": split_b,
                "requested_bytes": self.b_req,
            }
            for name in STAT_NAMES:
                flatten(name, table[name], out)
            out["num_alloc_retries"] = self.num_alloc_retries
            out["num_ooms"] = self.num_ooms
            out["num_sync_all_streams"] = self.num_sync_all_streams
            out["num_device_alloc"] = self.num_device_alloc
            out["num_device_free"] = self.num_device_free
            out["max_split_size"] = -1
            for k in ("oversize_allocations", "oversize_segments"):
                for f in ("current", "peak", "allocated", "freed"):
                    out[f"{k}.{f}"] = 0
            return dict(sorted(out.items()))

    def _inactive_split(self) -> tuple[tuple[Stat, Stat, Stat], tuple[Stat, Stat, Stat]]:
        """Free blocks inside partly used segments. Only `current` is meaningful (computed by a scan;
        peak is the current value, allocated/freed are not tracked on the hot path)."""
        n, b = triple(), triple()
        pools = list(self._pools.values()) + [p for pp in self._private.values() for p in pp.pools.values()]
        free_blocks = [blk for pool in pools for blk in pool.blocks.values()]
        free_blocks += [blk for lst in self._front.values() for blk in lst]
        for blk in free_blocks:
            if blk.prev is not None or blk.next is not None:
                pi = 1 if blk.small else 2
                for st, v in ((n, 1), (b, blk.size)):
                    st[0].current += v
                    st[pi].current += v
        for st in (n, b):
            for s in st:
                s.peak = s.current
                s.allocated = s.current
        return n, b

    def coalesce(self) -> None:
        """Merge all adjacent free blocks now (normally done on the first front-cache miss)."""
        with self._lock:
            if self._front:
                self._flush_front()

    def snapshot(self) -> list[dict[str, Any]]:
        """Segments and their blocks in the schema of torch.cuda.memory_snapshot()."""
        with self._lock:
            segs = []
            for addr in sorted(self._segments):
                head = self._segments[addr]
                blocks = []
                alloc = active = req = 0
                b: Block | None = head
                while b is not None:
                    state = STATE_NAMES[b.state]
                    blocks.append(
                        {
                            "address": b.addr,
                            "size": b.size,
                            "requested_size": b.requested if b.state in (ALLOCATED, PENDING) else 0,
                            "state": state,
                            "frames": [],
                        }
                    )
                    if b.state == ALLOCATED:
                        alloc += b.size
                        req += b.requested
                    if b.state != FREE and b.state != CACHED:
                        active += b.size
                    b = b.next
                segs.append(
                    {
                        "device": self.device,
                        "address": addr,
                        "total_size": self._seg_size[addr],
                        "allocated_size": alloc,
                        "active_size": active,
                        "requested_size": req,
                        "stream": head.stream,
                        "segment_type": "small" if head.small else "large",
                        "segment_pool_id": head.ppool.id if head.ppool is not None else (0, 0),
                        "is_expandable": False,
                        "frames": [],
                        "blocks": blocks,
                    }
                )
            return segs

    def trace(self) -> list[dict[str, Any]]:
        """The bounded alloc/free trace (empty unless created with trace=N or enable_trace)."""
        with self._lock:
            return list(self._trace) if self._trace is not None else []

    def enable_trace(self, max_entries: int | None) -> None:
        """Keep the last max_entries events (None or 0 turns tracing off)."""
        with self._lock:
            self._trace = deque(maxlen=max_entries) if max_entries else None
            self._update_fast()

    def _record(self, action: str, addr: int, size: int, stream: int) -> None:
        assert self._trace is not None
        self._trace.append(
            {
                "action": action,
                "addr": addr,
                "size": size,
                "stream": stream,
                "device": self.device,
                "time_us": time.perf_counter_ns() // 1000,
            }
        )


def _fmt(n: int | None) -> str:
    if n is None or n < 0:
        return "unknown"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} bytes"
