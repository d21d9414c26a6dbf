"""all_reduce bus bandwidth, genesis.distributed (NCCL through CuPy) against torch.distributed's NCCL,
in the same launch, on the same GPUs: the 2-GPU machine (nvidia-h200-x2).

    torchrun --nproc_per_node=2 benchmarks/bench_distributed.py            # 256 MiB of bfloat16
    torchrun --nproc_per_node=2 benchmarks/bench_distributed.py --mib 64 --iters 50

Bus bandwidth is NCCL's definition: bytes x 2 (n - 1) / n / time, for n ranks. Each side runs
--warmup all-reduces, then --iters timed back to back between two events on the issuing stream;
the two frameworks alternate over --rounds and the medians are reported by rank 0, with the ratio
(target: genesis >= 0.95 x torch). NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as the device
notes require.
"""

from __future__ import annotations

import os

os.environ["NCCL_NVLS_ENABLE"] = "0"  # before NCCL loads, in both frameworks

import argparse
import json
import statistics
from pathlib import Path

import torch
import torch.distributed as tdist

import genesis
import genesis.distributed as dist


def bus_gbps(nbytes: int, seconds: float, world: int) -> float:
    return nbytes * 2 * (world - 1) / world / seconds / 1e9


def time_genesis(x, iters: int, warmup: int) -> float:
    for _ in range(warmup):
        dist.all_reduce(x)
    start, end = genesis.cuda.Event(enable_timing=True), genesis.cuda.Event(enable_timing=True)
    genesis.cuda.synchronize()
    start.record()
    for _ in range(iters):
        dist.all_reduce(x)  # each waits (on the stream) for the last: back to back, as torch's
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def time_torch(x, group, iters: int, warmup: int) -> float:
    for _ in range(warmup):
        tdist.all_reduce(x, group=group)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        tdist.all_reduce(x, group=group)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None, help="rank 0 writes the figures here")
    args = parser.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    genesis.cuda.set_device(local)
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")  # also torch's default (gloo) group on torchrun's store
    torch_nccl = tdist.new_group(backend="nccl")  # torch's own NCCL communicator, same ranks
    rank, world = dist.get_rank(), dist.get_world_size()
    n = args.mib * 2**20 // 2
    ours = genesis.ones(n, dtype=genesis.bfloat16, device=f"cuda:{local}")
    theirs = torch.ones(n, dtype=torch.bfloat16, device=f"cuda:{local}")
    times = {"genesis": [], "torch": []}
    for _ in range(args.rounds):
        times["genesis"].append(time_genesis(ours, args.iters, args.warmup))
        times["torch"].append(time_torch(theirs, torch_nccl, args.iters, args.warmup))
    if rank == 0:
        nbytes = n * 2
        bw = {k: bus_gbps(nbytes, statistics.median(v), world) for k, v in times.items()}
        print(f"all_reduce {args.mib} MiB bfloat16 over {world} GPUs (median of {args.rounds} x {args.iters}):")
        for name, value in bw.items():
            print(f"  {name:8s} {statistics.median(times[name]) * 1e3:8.3f} ms   bus {value:7.1f} GB/s")
        print(f"  genesis / torch: {bw['genesis'] / bw['torch']:.3f}  (target >= 0.95)")
        if args.json is not None:
            ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            figures = {"mib": args.mib, "world": world, "bus_gbps": bw, "ms": ms, "ratio": bw["genesis"] / bw["torch"]}
            args.json.write_text(json.dumps(figures, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
