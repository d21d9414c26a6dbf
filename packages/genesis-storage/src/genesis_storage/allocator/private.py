"""Private pools: the memory a CUDA graph's captured kernels read and write.

A captured graph replays with the addresses it saw at capture time, so every block allocated while
a stream captures must stay out of the general pool as long as a graph may replay: nothing else
may be handed that memory. PyTorch's answer, followed here: while stream S captures into pool P,
the caching allocator serves S's allocations from P's own segments and puts S's frees back into P
(reusable later in the same capture: stream order in the graph is the order of capture). P counts
the graphs that use it (`pool=` shares one P between graphs); when the last one is reset, P's free
segments become releasable by empty_cache.

Pool ids follow torch's convention: a graph's own pool is (graph id, 0); graph_pool_handle()
makes (0, n). Both come from one counter so they never collide.
"""

from __future__ import annotations

import itertools
import threading

from .block import BlockPool

PoolId = tuple[int, int]

_ids = itertools.count(1)
_ids_lock = threading.Lock()


def next_id() -> int:
    """A process-unique positive integer (graph ids and user pool handles)."""
    with _ids_lock:
        return next(_ids)


class PrivatePool:
    """One private pool of one device: free blocks keyed like the general pools, plus a use count."""

    __slots__ = ("id", "pools", "segments", "use_count")

    def __init__(self, pool_id: PoolId) -> None:
        self.id = pool_id
        self.pools: dict[tuple[int, int], BlockPool] = {}  # (stream, kind) -> free blocks, as in CachingAllocator
        self.segments = 0  # live segments owned by this pool
        self.use_count = 0  # graphs (and captures underway) that hold the pool

    @property
    def freeable(self) -> bool:
        """No graph holds the pool: its entirely free segments may go back to the device."""
        return self.use_count == 0

    def __repr__(self) -> str:
        return f"PrivatePool(id={self.id}, segments={self.segments}, use_count={self.use_count})"
