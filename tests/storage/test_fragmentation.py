"""The benchmark's random workload replayed on the fake allocator (CPU tier).

Sizes log-uniform 1 KiB - 128 MiB, 200 live slots, each step frees a slot and refills it (exactly
what benchmarks/bench_storage.py does on the GPU). A compact model of PyTorch's
CUDACachingAllocator defaults (free merges neighbours, best fit, split rules, 2 / 20 MiB segments,
no release) gives torch's ratio on the same sequence; the model reproduces the H200 measurement
(1.276 on the --quick workload, seed 0).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, insort

import pytest

from genesis_storage.allocator.caching import CachingAllocator
from genesis_storage.allocator.raw import FakeRawAllocator

KiB, MiB = 1 << 10, 1 << 20


def workload(total: int, seed: int = 0) -> list[tuple[int, int]]:
    """Same generator as bench_storage.workload."""
    rng = random.Random(seed)
    lo, hi = math.log(KiB), math.log(128 * MiB)
    return [(rng.randrange(200), int(math.exp(rng.uniform(lo, hi)))) for _ in range(total)]


def torch_model_ratio(seq: list[tuple[int, int]]) -> float:
    """Peak reserved / peak allocated under PyTorch's default caching policy."""

    class B:
        __slots__ = ("addr", "free", "next", "prev", "size", "small")

    pools: dict[bool, list[tuple[int, int]]] = {True: [], False: []}
    blocks: dict[tuple[int, int], B] = {}
    res = res_peak = al = al_peak = 0
    next_addr = 0
    live: list[B | None] = [None] * 200

    def ins(b: B) -> None:
        insort(pools[b.small], (b.size, b.addr))
        blocks[b.size, b.addr] = b

    def rem(b: B) -> None:
        p = pools[b.small]
        del p[bisect_left(p, (b.size, b.addr))]
        del blocks[b.size, b.addr]

    for slot, n in seq:
        b = live[slot]
        if b is not None:  # free_block: merge with free neighbours
            al -= b.size
            b.free = True
            p = b.prev
            if p is not None and p.free:
                rem(p)
                p.size += b.size
                p.next = b.next
                if b.next:
                    b.next.prev = p
                b = p
            nx = b.next
            if nx is not None and nx.free:
                rem(nx)
                b.size += nx.size
                b.next = nx.next
                if nx.next:
                    nx.next.prev = b
            ins(b)
        size = 512 if n < 512 else (n + 511) // 512 * 512
        small = size <= MiB
        pool = pools[small]
        i = bisect_left(pool, (size, -1))
        if i < len(pool):
            b = blocks[pool[i]]
            rem(b)
        else:
            asz = 2 * MiB if small else (20 * MiB if size < 10 * MiB else -(-size // (2 * MiB)) * 2 * MiB)
            b = B()
            b.addr, b.size, b.prev, b.next, b.small = next_addr, asz, None, None, small
            next_addr += asz
            res += asz
            res_peak = max(res_peak, res)
        remaining = b.size - size
        if (remaining >= 512) if small else (remaining > MiB):
            r = B()
            r.addr, r.size, r.prev, r.next, r.small, r.free = b.addr + size, remaining, b, b.next, small, True
            if b.next:
                b.next.prev = r
            b.next = r
            b.size = size
            ins(r)
        b.free = False
        al += b.size
        al_peak = max(al_peak, al)
        live[slot] = b
    return res_peak / al_peak


def replay(seq: list[tuple[int, int]], **kw) -> tuple[float, dict[str, int]]:
    raw = FakeRawAllocator(capacity=1 << 44)
    a = CachingAllocator(raw, **kw)
    live: list = [None] * 200
    for slot, size in seq:
        if live[slot] is not None:
            a.free(live[slot])
        live[slot] = a.malloc(size)
        if len(a._pools) > 0 and slot % 97 == 0:  # spot-check consistency as we go
            _check(a, raw, [b for b in live if b is not None])
    blocks = [b for b in live if b is not None]
    _check(a, raw, blocks)
    st = a.memory_stats()
    for b in blocks:
        a.free(b)
    assert a.memory_allocated() == 0 and a.memory_stats()["requested_bytes.all.current"] == 0
    a.empty_cache()
    assert raw.live == {} and a.memory_reserved() == 0
    return st["reserved_bytes.all.peak"] / st["allocated_bytes.all.peak"], st


def _check(a: CachingAllocator, raw: FakeRawAllocator, live: list) -> None:
    st = a.memory_stats()
    assert st["allocated_bytes.all.current"] == sum(b.size for b in live) == a.memory_allocated()
    assert st["requested_bytes.all.current"] == sum(b.requested for b in live)
    assert st["allocation.all.current"] == len(live)
    assert st["reserved_bytes.all.current"] == sum(raw.live.values()) == a.memory_reserved()
    assert st["segment.all.current"] == len(raw.live)
    for name in ("allocated_bytes", "reserved_bytes", "allocation", "segment"):
        assert st[f"{name}.all.current"] == st[f"{name}.small_pool.current"] + st[f"{name}.large_pool.current"]
        assert st[f"{name}.all.peak"] >= st[f"{name}.all.current"]
        assert st[f"{name}.all.allocated"] - st[f"{name}.all.freed"] == st[f"{name}.all.current"]
    assert st["num_device_alloc"] - st["num_device_free"] == len(raw.live)


QUICK = workload(4000, 0)  # bench_storage.py --quick


def test_default_policy_matches_pytorch_on_quick_workload():
    ratio, st = replay(QUICK)
    torch_ratio = torch_model_ratio(QUICK)
    assert torch_ratio == pytest.approx(1.2756, abs=1e-4)  # H200 measurement: torch 1.276
    assert ratio <= torch_ratio + 1e-9  # measured: 1.2756 (was 1.450 with lazy coalescing)
    assert ratio == pytest.approx(1.2756, abs=1e-4)
    assert st["num_device_free"] == 0  # no release: no cuMemFree, no device sync


def test_fragmentation_cap_beats_pytorch():
    ratio, st = replay(QUICK, max_fragmentation=1.0)
    assert ratio <= 1.059  # measured 1.0580 (torch 1.2756); stretch target 1.12
    # the price: segments released and re-allocated (each cuMemFree synchronises the device)
    assert st["num_device_alloc"] <= 360 and st["num_device_free"] <= 290  # measured 357 / 284


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_full_workload_seeds(seed):
    seq = workload(20000, seed)
    default, _ = replay(seq)
    capped, _ = replay(seq, max_fragmentation=1.0)
    torch_ratio = torch_model_ratio(seq)
    assert default <= torch_ratio + 0.002  # measured within 0.001 of the model on every seed
    assert capped <= 1.112  # measured 1.065 / 1.067 / 1.111 / 1.087 (torch 1.397 / 1.274 / 1.420 / 1.275)
    assert capped < torch_ratio


def _training_step(a: CachingAllocator, layers: list[list[int]], grads: list) -> None:
    """The allocation pattern of a training step: the forward keeps two activations of every three
    (the third is a temporary), zero_grad(set_to_none) frees last step's gradients, the backward
    frees the activations in reverse while it allocates temporaries and one gradient per layer."""
    kept = []
    for sizes in layers:
        for j, size in enumerate(sizes):
            block = a.malloc(size)
            if j % 3 == 0:
                a.free(block)
            else:
                kept.append(block)
    for g in grads:
        a.free(g)
    grads.clear()
    for sizes in reversed(layers):
        for j, size in enumerate(sizes):
            a.free(a.malloc(size))
            if j % 3:
                a.free(kept.pop())
        grads.append(a.malloc(2 * sizes[0]))


def _count_misses(a: CachingAllocator) -> list[int]:
    misses = [0]
    count = a._count_miss

    def counted() -> None:
        misses[0] += 1
        count()

    a._count_miss = counted  # type: ignore[method-assign]
    return misses


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_training_steps_are_served_from_the_front_cache(seed):
    """Steps of a training loop repeat their sizes: after four steps no device call is made, and the
    front-cache misses fall from about 80 % of the allocations (the coalesce-at-every-miss policy, which
    keeps flushing the very blocks the next requests want) to a steady count well below."""
    rng = random.Random(seed)
    layers = [[rng.choice([3000, 70000, 4 * MiB, 6 * MiB, 12 * MiB, 48 * MiB]) for _ in range(9)] for _ in range(12)]
    raw = FakeRawAllocator(capacity=1 << 44)
    a = CachingAllocator(raw)
    misses, grads, per_step = _count_misses(a), [], []
    for step in range(8):
        if step == 4:
            n_malloc = raw.n_malloc
        before = misses[0]
        _training_step(a, layers, grads)
        per_step.append(misses[0] - before)
    allocations_per_step = 12 * 9 + 12 * 9 + 12
    assert raw.n_malloc == n_malloc and raw.n_free == 0
    assert per_step[0] > 0.75 * allocations_per_step  # the first steps coalesce at every miss
    assert max(per_step[4:]) < 0.05 * allocations_per_step  # measured 0 / 0 / 9 of 228 (seeds 0 / 1 / 2)
    assert len(set(per_step[4:])) == 1  # a steady state
    # Reserved memory stays within a few % of the peak: measured 1.059 / 1.062 / 1.010. (Coalescing the whole
    # front cache whenever a pool ran short gave 1.059 / 1.023 / 1.010 with 0 / 75 / 60 misses a step.)
    assert a.memory_reserved() <= 1.07 * a.memory_stats()["allocated_bytes.all.peak"]


def test_random_sizes_keep_coalescing_at_every_miss():
    """Sizes that do not repeat hardly ever hit the front cache: the policy stays the one that matches
    torch's fragmentation (test_default_policy_matches_pytorch_on_quick_workload)."""
    a = CachingAllocator(FakeRawAllocator(capacity=1 << 44))
    live: list = [None] * 200
    lazy_epochs = 0
    for i, (slot, size) in enumerate(QUICK):
        if live[slot] is not None:
            a.free(live[slot])
        live[slot] = a.malloc(size)
        lazy_epochs += a._lazy and i % 512 == 0
    assert lazy_epochs == 0


def test_max_fragmentation_validation_and_env(monkeypatch):
    with pytest.raises(ValueError):
        CachingAllocator(FakeRawAllocator(), max_fragmentation=0.5)
    monkeypatch.setenv("GENESIS_MAX_FRAGMENTATION", "1.1")
    assert CachingAllocator(FakeRawAllocator()).max_fragmentation == 1.1
    monkeypatch.delenv("GENESIS_MAX_FRAGMENTATION")
    a = CachingAllocator(FakeRawAllocator())
    assert a.max_fragmentation is None
    a.set_max_fragmentation(1.0)
    assert a.max_fragmentation == 1.0


def test_front_cache_reuses_exact_size_without_split_or_merge():
    raw = FakeRawAllocator()
    a = CachingAllocator(raw)
    x = a.malloc(3000)
    addr = x.addr
    a.free(x)
    for _ in range(100):
        y = a.malloc(3000)
        assert y.addr == addr
        a.free(y)
    assert raw.n_malloc == 1
    st = a.memory_stats()
    assert st["allocation.all.allocated"] == 101 and st["allocation.all.current"] == 0
    assert st["inactive_split.all.current"] == 2  # the cached block and the segment's remainder
    a.coalesce()
    assert a.memory_stats()["inactive_split.all.current"] == 0
    (seg,) = a.snapshot()
    assert [b["state"] for b in seg["blocks"]] == ["inactive"]
