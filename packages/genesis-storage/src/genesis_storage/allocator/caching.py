"""The caching allocator: PyTorch's CUDACachingAllocator design, as a small state machine in Python.

Plain data: a *segment* is one raw allocation; it is cut into *blocks* (a doubly linked list in
address order). Free blocks wait in a *pool* keyed by (stream, small/large), sorted by (size, addr)
for best fit. Operations: malloc (best fit, else new segment), split, free (merge with free
neighbours, back to the pool), release (give whole free segments back to the raw allocator).

- sizes round up to 512 B; requests <= 1 MiB come from 2 MiB "small" segments, larger ones from
  20 MiB segments (requests < 10 MiB) or segments rounded up to 2 MiB;
- a block is reused only by its own stream (stream order makes that safe without syncing);
  record_stream(block, s) defers reuse until an event recorded on s at free time has completed;
- on a failed raw allocation: wait for pending events, free all cached segments, retry, then
  raise OutOfMemoryError with the numbers a user needs;
- GENESIS_NO_CACHING=1 turns it into a pass-through (for compute-sanitizer);
- GENESIS_STORAGE_DEBUG=1 poisons freed blocks with 0xFF.
"""

from __future__ import annotations

import os
import threading
import time
from bisect import bisect_left, insort
from collections import deque
from typing import Any

from ..errors import DoubleFreeError, OutOfMemoryError
from .raw import RawAllocator
from .stats import STAT_NAMES, Stat, flatten, triple

MIN_BLOCK = 512  # every size rounds up to this; also the alignment of every block
SMALL_SIZE = 1 << 20  # largest "small" request
SMALL_BUFFER = 2 << 20  # segment size for small requests
LARGE_BUFFER = 20 << 20  # segment size for large requests below MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20  # larger requests get a segment rounded up to this
POISON = 0xFF

FREE, ALLOCATED, PENDING, DEAD = 0, 1, 2, 3
_STATE_NAMES = {FREE: "inactive", ALLOCATED: "active_allocated", PENDING: "active_pending_free"}


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Block:
    """A piece of a segment. `addr`/`size` in bytes; `requested` is what the caller asked for."""

    __slots__ = (
        "addr",
        "events",
        "next",
        "prev",
        "requested",
        "segment",
        "size",
        "small",
        "state",
        "stream",
        "stream_uses",
    )

    def __init__(self, addr: int, size: int, stream: int, small: bool, segment: int) -> None:
        self.addr = addr
        self.size = size
        self.requested = 0
        self.stream = stream
        self.state = FREE
        self.small = small
        self.prev: Block | None = None
        self.next: Block | None = None
        self.segment = segment  # address of the segment's first byte
        self.stream_uses: set[int] | None = None
        self.events = 0

    def __repr__(self) -> str:
        return f"Block({self.addr:#x}, {self.size}, stream={self.stream:#x}, {_STATE_NAMES.get(self.state)})"


class _Pool:
    """Free blocks of one (stream, small/large), sorted by (size, addr) for best fit."""

    __slots__ = ("blocks", "dirty", "keys")

    def __init__(self) -> None:
        self.keys: list[int] = []  # (size << 64) | addr, sorted
        self.blocks: dict[int, Block] = {}
        self.dirty = False  # some free block here may have a free neighbour (see _coalesce)

    def insert(self, b: Block) -> None:
        key = (b.size << 64) | b.addr
        insort(self.keys, key)
        self.blocks[key] = b

    def remove(self, b: Block) -> None:
        key = (b.size << 64) | b.addr
        del self.keys[bisect_left(self.keys, key)]
        del self.blocks[key]


class CachingAllocator:
    """One device's caching allocator over a RawAllocator. Thread-safe (one lock per device)."""

    def __init__(self, raw: RawAllocator, *, caching: bool | None = None, debug: bool | None = None,
                 trace: int = 0) -> None:
        self.raw = raw
        self.device = raw.device
        self.caching = (not _env_flag("GENESIS_NO_CACHING")) if caching is None else caching
        self.debug = _env_flag("GENESIS_STORAGE_DEBUG") if debug is None else debug
        self._lock = threading.Lock()
        self._small: dict[int, _Pool] = {}
        self._large: dict[int, _Pool] = {}
        self._segments: dict[int, Block] = {}  # segment address -> its first block
        self._seg_size: dict[int, int] = {}
        self._pending: list[tuple[Any, Block]] = []  # (event, block) awaiting record_stream work
        self._limit: int | None = None
        self._fraction: float | None = None
        self._trace: deque[dict[str, Any]] | None = deque(maxlen=trace) if trace else None
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

    # ------------------------------------------------------------------ hot path
    def malloc(self, nbytes: int, stream: int = 0) -> Block:
        """A block of at least nbytes (rounded to 512) usable on `stream`."""
        size = MIN_BLOCK if nbytes <= MIN_BLOCK else (nbytes + MIN_BLOCK - 1) & -MIN_BLOCK
        small = size <= SMALL_SIZE
        with self._lock:
            if self._pending:
                self._process_events()
            block = None
            if self.caching:
                pool = (self._small if small else self._large).get(stream)
                if pool is not None:
                    keys = pool.keys
                    i = bisect_left(keys, size << 64)
                    if i == len(keys) and pool.dirty:  # no fit: merge free neighbours, look again
                        self._coalesce(pool)
                        keys = pool.keys
                        i = bisect_left(keys, size << 64)
                    if i < len(keys):
                        block = pool.blocks.pop(keys.pop(i))
            if block is None:
                block = self._new_block(size, small, stream, nbytes)
            rem = block.size - size
            if self.caching and (rem >= MIN_BLOCK if small else rem > SMALL_SIZE):
                self._split(block, size)
            block.state = ALLOCATED
            block.requested = nbytes
            # statistics, unrolled: this is the path torch.empty is compared against
            bs = block.size
            p = self.n_alloc
            a = p[0]
            pp = p[1] if small else p[2]
            a.current += 1
            a.allocated += 1
            if a.current > a.peak:
                a.peak = a.current
            pp.current += 1
            pp.allocated += 1
            if pp.current > pp.peak:
                pp.peak = pp.current
            p = self.b_alloc
            a = p[0]
            pp = p[1] if small else p[2]
            a.current += bs
            a.allocated += bs
            if a.current > a.peak:
                a.peak = a.current
            pp.current += bs
            pp.allocated += bs
            if pp.current > pp.peak:
                pp.peak = pp.current
            p = self.b_req
            a = p[0]
            pp = p[1] if small else p[2]
            a.current += nbytes
            a.allocated += nbytes
            if a.current > a.peak:
                a.peak = a.current
            pp.current += nbytes
            pp.allocated += nbytes
            if pp.current > pp.peak:
                pp.peak = pp.current
            if self._pending:
                self._bump_active_peaks()
            if self._trace is not None:
                self._record("alloc", block.addr, bs, stream)
        return block

    def free(self, block: Block) -> None:
        """Return a block. Reuse waits for work recorded by record_stream on other streams."""
        with self._lock:
            if block.state != ALLOCATED:
                raise DoubleFreeError(f"double free of block at {block.addr:#x} ({block.size} bytes) "
                                      f"on device {self.device}")
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
            if self._trace is not None:
                self._record("free_requested", block.addr, bs, block.stream)
            uses = block.stream_uses
            if uses:
                block.stream_uses = None
                block.state = PENDING
                for s in uses:
                    self._pending.append((self.raw.record_event(s), block))
                    block.events += 1
                pi = 1 if block.small else 2
                for st, n in ((self.n_pend, 1), (self.b_pend, bs)):
                    st[0].add(n)
                    st[pi].add(n)
                self._bump_active_peaks()
            else:
                self._free_block(block)

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
    def _pool_for(self, block: Block) -> _Pool:
        pools = self._small if block.small else self._large
        pool = pools.get(block.stream)
        if pool is None:
            pool = pools[block.stream] = _Pool()
        return pool

    def _split(self, block: Block, size: int) -> None:
        rest = Block(block.addr + size, block.size - size, block.stream, block.small, block.segment)
        rest.prev = block
        rest.next = block.next
        if block.next is not None:
            block.next.prev = rest
        block.next = rest
        block.size = size
        pool = self._pool_for(rest)
        pool.insert(rest)
        if rest.next is not None and rest.next.state == FREE:
            pool.dirty = True

    def _free_block(self, block: Block) -> None:
        """Block is no longer used by any stream: cache it in its pool.

        Coalescing is lazy: merging with free neighbours happens when a lookup finds no fit (and
        before releasing memory), so the common free-then-allocate-the-same-size cycle neither
        splits nor merges. Nothing is lost: a block that fits is found without merging, and
        every miss merges the whole pool before a new segment is requested.
        """
        if self._trace is not None:
            self._record("free_completed", block.addr, block.size, block.stream)
        if self.debug:
            self.raw.memset(block.addr, block.size, POISON, block.stream)
        if not self.caching:
            block.state = DEAD
            self._release_segment(block)
            return
        block.state = FREE
        pool = (self._small if block.small else self._large).get(block.stream)
        if pool is None:
            pool = self._pool_for(block)
        key = (block.size << 64) | block.addr
        insort(pool.keys, key)
        pool.blocks[key] = block
        if not pool.dirty:
            p, n = block.prev, block.next
            pool.dirty = (p is not None and p.state == FREE) or (n is not None and n.state == FREE)

    def _coalesce(self, pool: _Pool) -> None:
        """Merge every run of adjacent free blocks in the pool into one block."""
        survivors = []
        for b in pool.blocks.values():
            if b.state != FREE:
                continue  # absorbed earlier in this loop
            p = b.prev
            if p is not None and p.state == FREE:
                continue  # its lower neighbour will absorb it (segment heads never change)
            n = b.next
            while n is not None and n.state == FREE:
                b.size += n.size
                n.state = DEAD
                n = n.next
            b.next = n
            if n is not None:
                n.prev = b
            survivors.append(b)
        pool.blocks = {(b.size << 64) | b.addr: b for b in survivors}
        pool.keys = sorted(pool.blocks)
        pool.dirty = False

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
    def _new_block(self, size: int, small: bool, stream: int, nbytes: int) -> Block:
        if not self.caching:
            alloc_size = size
        elif small:
            alloc_size = SMALL_BUFFER
        elif size < MIN_LARGE_ALLOC:
            alloc_size = LARGE_BUFFER
        else:
            alloc_size = (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE
        block = self._new_segment(alloc_size, small, stream)
        if block is not None:
            return block
        # Out of memory: let pending frees finish, look in the cache again, release it, retry.
        self.num_alloc_retries += 1
        if self._pending:
            self._synchronize_and_free_events()
            pool = (self._small if small else self._large).get(stream)
            if pool is not None:
                if pool.dirty:
                    self._coalesce(pool)
                i = bisect_left(pool.keys, size << 64)
                if i < len(pool.keys):
                    return pool.blocks.pop(pool.keys.pop(i))
        self._release_cached()
        block = self._new_segment(alloc_size, small, stream)
        if block is None:
            self.num_ooms += 1
            raise OutOfMemoryError(self._oom_message(nbytes, alloc_size))
        return block

    def _new_segment(self, alloc_size: int, small: bool, stream: int) -> Block | None:
        if self._limit is not None and self.b_res[0].current + alloc_size > self._limit:
            return None
        addr = self.raw.malloc(alloc_size)
        if addr is None:
            return None
        self.num_device_alloc += 1
        pi = 1 if small else 2
        for st, n in ((self.n_seg, 1), (self.b_res, alloc_size)):
            st[0].add(n)
            st[pi].add(n)
        block = Block(addr, alloc_size, stream, small, addr)
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

    def _release_cached(self) -> None:
        """Give every entirely free segment back to the raw allocator."""
        for pools in (self._small, self._large):
            for pool in pools.values():
                if pool.dirty:
                    self._coalesce(pool)
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
        limit = (f"{_fmt(self._limit)} (memory fraction {self._fraction})" if self._limit is not None
                 else "none")
        return (f"CUDA out of memory on device {self.device}. Tried to allocate {_fmt(nbytes)} "
                f"({nbytes} bytes; segment of {alloc_size} bytes). Device {self.device} has a total "
                f"capacity of {_fmt(total)} of which {_fmt(free)} is free. Of the memory in use, "
                f"{_fmt(alloc)} ({alloc} bytes) is allocated by Genesis and {_fmt(res - alloc)} "
                f"({res - alloc} bytes) is reserved by Genesis but unallocated. Limit: {limit}.")

    # ------------------------------------------------------------------ public management
    def empty_cache(self) -> None:
        with self._lock:
            self._synchronize_and_free_events()
            self._release_cached()

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
        return self.b_alloc[0].current

    def memory_reserved(self) -> int:
        return self.b_res[0].current

    def reset_peak_memory_stats(self) -> None:
        with self._lock:
            for st in (self.n_alloc, self.b_alloc, self.b_req, self.n_seg, self.b_res, self.n_pend,
                       self.b_pend):
                for s in st:
                    s.reset_peak()
            for i in range(3):
                self._active_peak[i] = self.n_alloc[i].current + self.n_pend[i].current
                self._active_peak[3 + i] = self.b_alloc[i].current + self.b_pend[i].current

    def reset_accumulated_memory_stats(self) -> None:
        with self._lock:
            for st in (self.n_alloc, self.b_alloc, self.b_req, self.n_seg, self.b_res, self.n_pend,
                       self.b_pend):
                for s in st:
                    s.reset_accumulated()
            self.num_alloc_retries = self.num_ooms = self.num_sync_all_streams = 0
            self.num_device_alloc = self.num_device_free = 0

    def memory_stats(self) -> dict[str, int]:
        """PyTorch's torch.cuda.memory_stats() keys and meanings."""
        with self._lock:
            out: dict[str, int] = {}
            active_n = triple()
            active_b = triple()
            for i in range(3):
                for act, al, pe, peak in ((active_n, self.n_alloc, self.n_pend, self._active_peak[i]),
                                          (active_b, self.b_alloc, self.b_pend, self._active_peak[3 + i])):
                    act[i].current = al[i].current + pe[i].current
                    act[i].allocated = al[i].allocated
                    act[i].base = al[i].base + pe[i].base
                    act[i].peak = max(al[i].peak, peak, act[i].current)
            split_n, split_b = self._inactive_split()
            table: dict[str, tuple[Stat, Stat, Stat]] = {
                "allocation": self.n_alloc, "segment": self.n_seg, "active": active_n,
                "inactive_split": split_n, "allocated_bytes": self.b_alloc, "reserved_bytes": self.b_res,
                "active_bytes": active_b, "inactive_split_bytes": split_b, "requested_bytes": self.b_req,
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
        for pools, pi in ((self._small, 1), (self._large, 2)):
            for pool in pools.values():
                for blk in pool.blocks.values():
                    if blk.prev is not None or blk.next is not None:
                        for st, v in ((n, 1), (b, blk.size)):
                            st[0].current += v
                            st[pi].current += v
        for st in (n, b):
            for s in st:
                s.peak = s.current
                s.allocated = s.current
        return n, b

    def coalesce(self) -> None:
        """Merge all adjacent free blocks now (normally done lazily, on a missed lookup)."""
        with self._lock:
            for pools in (self._small, self._large):
                for pool in pools.values():
                    if pool.dirty:
                        self._coalesce(pool)

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
                    state = _STATE_NAMES[b.state]
                    blocks.append({"address": b.addr, "size": b.size,
                                   "requested_size": b.requested if b.state != FREE else 0,
                                   "state": state, "frames": []})
                    if b.state == ALLOCATED:
                        alloc += b.size
                        req += b.requested
                    if b.state != FREE:
                        active += b.size
                    b = b.next
                segs.append({
                    "device": self.device, "address": addr, "total_size": self._seg_size[addr],
                    "allocated_size": alloc, "active_size": active, "requested_size": req,
                    "stream": head.stream, "segment_type": "small" if head.small else "large",
                    "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks,
                })
            return segs

    def trace(self) -> list[dict[str, Any]]:
        """The bounded alloc/free trace (empty unless created with trace=N or enable_trace)."""
        with self._lock:
            return list(self._trace) if self._trace is not None else []

    def enable_trace(self, max_entries: int | None) -> None:
        """Keep the last max_entries events (None or 0 turns tracing off)."""
        with self._lock:
            self._trace = deque(maxlen=max_entries) if max_entries else None

    def _record(self, action: str, addr: int, size: int, stream: int) -> None:
        assert self._trace is not None
        self._trace.append({"action": action, "addr": addr, "size": size, "stream": stream,
                            "device": self.device, "time_us": time.perf_counter_ns() // 1000})


def _fmt(n: int | None) -> str:
    if n is None or n < 0:
        return "unknown"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} bytes"
