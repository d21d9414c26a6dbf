"""genesis-storage vs torch, in one process, interleaved; prints medians and ratios (GPU machine only).

    PYTHONPATH=packages/genesis-storage/src python3 benchmarks/bench_storage.py [--quick]

Ratios are genesis / torch: below 1.0 means Genesis is faster (or, for fragmentation, tighter).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time

import numpy as np
import torch

import genesis_storage as gs

KiB, MiB = 1 << 10, 1 << 20


def median_us(fn, n: int, reps: int) -> float:
    """Median over `reps` rounds of the mean per-call time of `n` calls, in microseconds."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(n)
        out.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(out)


def bench_alloc(quick: bool) -> None:
    print("\n== cached allocate + free (host-side cost, us; median) ==")
    n, reps = (2000, 5) if quick else (20000, 11)
    print(f"{'size':>10} {'storage':>9} {'gs.empty':>9} {'torch':>9} {'ratio':>7} {'empty/torch':>11}")
    for size in (512, 4 * KiB, 64 * KiB, 1 * MiB, 8 * MiB, 64 * MiB):
        numel = size // 4

        def g(k: int, size: int = size) -> None:
            for _ in range(k):
                s = gs.CUDAStorage(size)
                del s

        def e(k: int, numel: int = numel) -> None:
            shape = (numel,)
            for _ in range(k):
                v = gs.empty(shape, "float32")
                del v

        def t(k: int, numel: int = numel) -> None:
            for _ in range(k):
                x = torch.empty(numel, dtype=torch.float32, device="cuda")
                del x

        g(200)
        e(200)
        t(200)
        gt, et, tt = [], [], []
        for _ in range(3):  # interleave
            gt.append(median_us(g, n, reps))
            et.append(median_us(e, n, reps))
            tt.append(median_us(t, n, reps))
        gm, em, tm = statistics.median(gt), statistics.median(et), statistics.median(tt)
        print(f"{size:>10} {gm:9.3f} {em:9.3f} {tm:9.3f} {gm / tm:7.2f} {em / tm:11.2f}")

    def cs(k: int) -> None:
        for _ in range(k):
            gs.current_stream(0).handle  # noqa: B018 - what genesis_ndarray does on every op

    def tcs(k: int) -> None:
        for _ in range(k):
            torch.cuda.current_stream(0).cuda_stream  # noqa: B018

    print(
        f"current_stream(0).handle: genesis {median_us(cs, n * 5, reps):.3f} us  "
        f"torch.cuda.current_stream(0).cuda_stream {median_us(tcs, n * 5, reps):.3f} us"
    )


def workload(quick: bool, seed: int = 0) -> list[tuple[int, int]]:
    """(slot, size) sequence: 200 live slots, sizes log-uniform 1 KiB - 128 MiB."""
    rng = random.Random(seed)
    total = 4000 if quick else 20000
    lo, hi = math.log(KiB), math.log(128 * MiB)
    return [(rng.randrange(200), int(math.exp(rng.uniform(lo, hi)))) for _ in range(total)]


def _genesis_workload(seq: list[tuple[int, int]], max_fragmentation: float | None) -> tuple[float, float, int, int]:
    a = gs.get_allocator(0)
    prev = a.max_fragmentation
    a.set_max_fragmentation(max_fragmentation)
    gs.empty_cache()
    gs.reset_peak_memory_stats()
    st0 = gs.memory_stats()
    live: list = [None] * 200
    t0 = time.perf_counter()
    for slot, size in seq:
        live[slot] = None
        live[slot] = gs.CUDAStorage(size)
    gs.synchronize()
    dt = (time.perf_counter() - t0) / len(seq) * 1e6
    live = [None] * 200
    st = gs.memory_stats()
    ratio = st["reserved_bytes.all.peak"] / st["allocated_bytes.all.peak"]
    n_alloc = st["num_device_alloc"] - st0["num_device_alloc"]
    n_free = st["num_device_free"] - st0["num_device_free"]
    a.set_max_fragmentation(prev)
    gs.empty_cache()
    return ratio, dt, n_alloc, n_free


def bench_fragmentation(quick: bool) -> None:
    print("\n== random workload: peak reserved / peak allocated (and us per step, device alloc/free) ==")
    seq = workload(quick)
    g_ratio, g_us, g_na, g_nf = _genesis_workload(seq, None)
    c_ratio, c_us, c_na, c_nf = _genesis_workload(seq, 1.0)
    # torch
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    n0 = torch.cuda.memory_stats().get("num_device_alloc", 0)
    tl: list = [None] * 200
    t0 = time.perf_counter()
    for slot, size in seq:
        tl[slot] = None
        tl[slot] = torch.empty(size, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    t_us = (time.perf_counter() - t0) / len(seq) * 1e6
    tl = [None] * 200
    t_ratio = torch.cuda.max_memory_reserved() / torch.cuda.max_memory_allocated()
    t_na = torch.cuda.memory_stats().get("num_device_alloc", 0) - n0
    torch.cuda.empty_cache()
    print(
        f"genesis (default)                {g_ratio:.3f}  ratio {g_ratio / t_ratio:.3f}  {g_us:8.2f} us/step  "
        f"device alloc/free {g_na}/{g_nf}"
    )
    print(
        f"genesis (max_fragmentation=1.0)  {c_ratio:.3f}  ratio {c_ratio / t_ratio:.3f}  {c_us:8.2f} us/step  "
        f"device alloc/free {c_na}/{c_nf}"
    )
    print(f"torch                            {t_ratio:.3f}                {t_us:8.2f} us/step  device alloc {t_na}")


_KEEP_ALIVE: list = []


def bench_pinned(quick: bool) -> None:
    print("\n== pinned copies (GB/s, CUDA events, median) ==")
    size = 256 * MiB
    reps = 5 if quick else 15
    h = gs.HostStorage(size, pinned=True)
    h.numpy()[:] = np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8)
    d = gs.CUDAStorage(size)
    th = torch.empty(size, dtype=torch.uint8).pin_memory()
    td = torch.empty(size, dtype=torch.uint8, device="cuda")
    s = gs.Stream()
    ts = torch.cuda.ExternalStream(s.handle)

    def timed(fn) -> float:
        a, b = gs.Event(enable_timing=True), gs.Event(enable_timing=True)
        a.record(s)
        fn()
        b.record(s)
        b.synchronize()
        return size / (a.elapsed_time(b) * 1e-3) / 1e9

    for name, gfn, tfn in (
        ("H2D", lambda: d.copy_from_host_async(h, s), lambda: td.copy_(th, non_blocking=True)),
        ("D2H", lambda: d.copy_to_host_async(h, s), lambda: th.copy_(td, non_blocking=True)),
    ):
        gb, tb = [], []
        with torch.cuda.stream(ts):
            for _ in range(reps):
                gb.append(timed(gfn))
                tb.append(timed(tfn))
        gm, tm = statistics.median(gb), statistics.median(tb)
        print(f"{name}: genesis {gm:6.1f} GB/s  torch {tm:6.1f} GB/s  ratio {gm / tm:.3f}")

    def pa(k: int) -> None:
        for _ in range(k):
            x = gs.HostStorage(MiB, pinned=True)
            del x

    pa(100)
    print(f"cached pinned allocate+free (1 MiB): {median_us(pa, 2000, 7):.3f} us")
    # torch's pinned allocator records an event on every stream a pinned tensor was used on when
    # that tensor is freed; our stream `s` (torch's ExternalStream `ts`) must outlive `th`.
    _KEEP_ALIVE.append(s)


def bench_memory_allocated(quick: bool) -> None:
    print("\n== memory_allocated() call (us) ==")
    n = 10000 if quick else 100000

    def g(k: int) -> None:
        for _ in range(k):
            gs.memory_allocated()

    def t(k: int) -> None:
        for _ in range(k):
            torch.cuda.memory_allocated()

    gm, tm = median_us(g, n, 7), median_us(t, max(n // 100, 100), 7)
    print(f"genesis {gm:.3f}   torch {tm:.3f}   ratio {gm / tm:.4f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and a shorter workload")
    args = ap.parse_args()
    if not gs.is_available():
        raise SystemExit("no CUDA device: run this on the GPU machine")
    torch.cuda.init()
    gs.set_device(0)
    print(f"device: {gs.get_device_name(0)}  torch {torch.__version__}")
    bench_alloc(args.quick)
    bench_fragmentation(args.quick)
    bench_pinned(args.quick)
    bench_memory_allocated(args.quick)


if __name__ == "__main__":
    main()
