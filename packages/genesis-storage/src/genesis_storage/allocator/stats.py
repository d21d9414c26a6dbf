"""Allocator statistics with PyTorch's names and meanings.

A Stat holds current/peak/allocated; `freed` is derived (allocated - current + base) so the hot
path updates three numbers, not four. Stats come in triples: all, small_pool, large_pool.
"""

from __future__ import annotations


class Stat:
    __slots__ = ("allocated", "base", "current", "peak")

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.allocated = 0
        self.base = 0  # `current` at the last reset of accumulated counters

    @property
    def freed(self) -> int:
        return self.allocated - self.current + self.base

    def add(self, n: int) -> None:
        self.current += n
        if n > 0:
            self.allocated += n
            if self.current > self.peak:
                self.peak = self.current

    def reset_peak(self) -> None:
        self.peak = self.current

    def reset_accumulated(self) -> None:
        self.allocated = 0
        self.base = self.current


def triple() -> tuple[Stat, Stat, Stat]:
    """(all, small_pool, large_pool)."""
    return Stat(), Stat(), Stat()


POOL_NAMES = ("all", "small_pool", "large_pool")

# The array stats PyTorch reports, in its order.
STAT_NAMES = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)


def flatten(name: str, stats: tuple[Stat, Stat, Stat], out: dict[str, int]) -> None:
    """Write `name.{all,small_pool,large_pool}.{current,peak,allocated,freed}` into out."""
    for pool, s in zip(POOL_NAMES, stats):
        out[f"{name}.{pool}.current"] = s.current
        out[f"{name}.{pool}.peak"] = s.peak
        out[f"{name}.{pool}.allocated"] = s.allocated
        out[f"{name}.{pool}.freed"] = s.freed
