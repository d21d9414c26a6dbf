"""The host (Python) cost of genesis DistributedDataParallel's gradient reduction, on cpu over gloo.

    python benchmarks/bench_ddp_host.py [--layers 12] [--width 64] [--profile]

Two processes (gloo, localhost) train a GPT-2-shaped stack of small parameters (per layer: 2 LayerNorms,
an attention projection and its output, an MLP up and down, with biases: 12 tensors, as GPT-2's blocks,
so 12 layers give GPT-2 small's 148 parameter tensors) on tiny inputs, so that the kernels cost little
and what DDP adds on the host shows: the median backward with synchronisation minus the median inside
no_sync() (no reduction at all) is the reducer's host time plus gloo's, per step. On the GPU the step is
host-bound, so this is the part of 'exposed communication' the Python hook path causes. --profile prints
cProfile's top entries of the synchronised backwards (rank 0).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import socket
import statistics
import sys
import time

import torch.multiprocessing as mp

import genesis
import genesis.distributed as dist
import genesis.nn as nn


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.ln1, self.attn, self.proj = nn.LayerNorm(width), nn.Linear(width, 3 * width), nn.Linear(3 * width, width)
        self.ln2, self.up, self.down = nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.proj(self.attn(self.ln1(x)))
        return x + self.down(self.up(self.ln2(x)).relu())


def worker(rank: int, world: int, port: int, args: argparse.Namespace) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    genesis.manual_seed(0)
    model = nn.Sequential(*[Block(args.width) for _ in range(args.layers)], nn.LayerNorm(args.width))
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    x = genesis.randn(4, args.width)
    times: dict[str, list[float]] = {"sync": [], "no_sync": []}
    profiler = cProfile.Profile() if args.profile and rank == 0 else None
    for step in range(args.warmup + args.steps):
        for variant in ("sync", "no_sync"):
            model.zero_grad()
            ctx = ddp.no_sync() if variant == "no_sync" else contextlib.nullcontext()
            with ctx:
                loss = ddp(x).square().mean()
                dist.barrier()
                start = time.perf_counter()
                if profiler is not None and variant == "sync" and step >= args.warmup:
                    profiler.enable()
                loss.backward()
                if profiler is not None:
                    profiler.disable()
                elapsed = time.perf_counter() - start
            if step >= args.warmup:
                times[variant].append(elapsed * 1e3)
    if rank == 0:
        n = len(list(model.parameters()))
        sync, quiet = statistics.median(times["sync"]), statistics.median(times["no_sync"])
        print(
            f"{n} parameters, {len(ddp.reducer.buckets)} bucket(s): backward {sync:.2f} ms with DDP, {quiet:.2f} ms "
            f"in no_sync: DDP adds {sync - quiet:.2f} ms per step ({1e3 * (sync - quiet) / n:.1f} us per parameter)",
            flush=True,
        )
        if profiler is not None:
            stats = pstats.Stats(profiler, stream=sys.stdout)
            # the reducer's own host time: its entry points (the hooks, the end-of-backward callback) less the
            # transport (torch's gloo calls), which on the GPU is NCCL's asynchronous launch instead
            entry = sum(v[3] for k, v in stats.stats.items() if "reducer.py" in k[0] and k[2] in ("hook", "_finalize"))
            transport = sum(v[2] for k, v in stats.stats.items() if "_distributed_c10d" in k[2])
            print(f"reducer host time without gloo: {1e3 * (entry - transport) / args.steps:.2f} ms per step")
            stats.sort_stats("tottime").print_stats(18)
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--bucket-mb", type=float, default=0.05, help="small: several buckets, as GPT-2's 25 MiB")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(2, port, args), nprocs=2)


if __name__ == "__main__":
    main()
