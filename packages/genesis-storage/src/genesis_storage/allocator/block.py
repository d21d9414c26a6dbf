"""The allocator's data: a Block (a piece of a segment, in a doubly linked list of its segment's
pieces), the states it moves through, and a BlockPool (the free blocks of one (stream, kind), sorted
for best fit). CachingAllocator (caching.py) and PrivatePool (private.py) both hold BlockPools.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Protocol

FREE, ALLOCATED, PENDING, DEAD, CACHED = 0, 1, 2, 3, 4  # FREE: in a pool; CACHED: in the front cache
STATE_NAMES = {FREE: "inactive", CACHED: "inactive", ALLOCATED: "active_allocated", PENDING: "active_pending_free"}
SMALL_KIND, LARGE_KIND, HUGE_KIND = 0, 1, 2  # HUGE (>= 10 MiB) is its own pool only with a cap


class BlockOwner(Protocol):
    """What a block knows of the private pool (private.PrivatePool) whose segment it belongs to."""

    id: tuple[int, int]
    pools: dict[tuple[int, int], BlockPool]
    segments: int

    @property
    def freeable(self) -> bool: ...


class Block:
    """A piece of a segment. `addr`/`size` in bytes; `requested` is what the caller asked for."""

    __slots__ = (
        "addr",
        "events",
        "fkey",
        "kind",
        "next",
        "ppool",
        "prev",
        "requested",
        "segment",
        "size",
        "small",
        "state",
        "stream",
        "stream_uses",
    )

    def __init__(self, addr: int, size: int, stream: int, small: bool, segment: int, kind: int = 0) -> None:
        self.addr = addr
        self.size = size
        self.requested = 0
        self.stream = stream
        self.state = FREE
        self.small = small
        self.kind = kind
        self.prev: Block | None = None
        self.next: Block | None = None
        self.segment = segment  # address of the segment's first byte
        self.stream_uses: set[int] | None = None
        self.events = 0
        self.fkey = 0  # front-cache key of the request this block last served
        self.ppool: BlockOwner | None = None  # the private pool (CUDA graph) owning the segment

    def __repr__(self) -> str:
        return f"Block({self.addr:#x}, {self.size}, stream={self.stream:#x}, {STATE_NAMES.get(self.state)})"


class BlockPool:
    """Free blocks of one (stream, kind), sorted by (size, addr) for best fit."""

    __slots__ = ("blocks", "keys")

    def __init__(self) -> None:
        self.keys: list[int] = []  # (size << 64) | addr, sorted
        self.blocks: dict[int, Block] = {}

    def insert(self, b: Block) -> None:
        key = (b.size << 64) | b.addr
        insort(self.keys, key)
        self.blocks[key] = b

    def remove(self, b: Block) -> None:
        key = (b.size << 64) | b.addr
        del self.keys[bisect_left(self.keys, key)]
        del self.blocks[key]

    def best_fit(self, size: int, max_size: int | None = None) -> Block | None:
        """Remove and return the smallest block >= size (and <= max_size), or None."""
        keys = self.keys
        i = bisect_left(keys, size << 64)
        if i == len(keys) or (max_size is not None and keys[i] >> 64 > max_size):
            return None
        return self.blocks.pop(keys.pop(i))
