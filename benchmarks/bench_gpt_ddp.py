"""Data-parallel GPT training throughput: genesis DistributedDataParallel against torch's, the same model
code, in the same launch, on the same GPUs.

    torchrun --nproc_per_node=2 benchmarks/bench_gpt_ddp.py --json out/ddp2.json   # 2 GPUs, DDP
    torchrun --nproc_per_node=1 benchmarks/bench_gpt_ddp.py --json out/ddp1.json   # 1 GPU, bare models
    torchrun --nproc_per_node=2 benchmarks/bench_gpt_ddp.py --quick                # a small model, smoke run
    torchrun --nproc_per_node=2 benchmarks/bench_gpt_ddp.py --device cpu --quick   # gloo, no GPU (a smoke run)

The model is examples/train_gpt.py's GPT (GPT-2 small: 12 x 768, vocabulary 50,304, context 1024), loaded
twice as benchmarks/bench_gpt.py does: as written (genesis) and with its genesis imports swapped for
torch's. Each rank trains on its own batch of --batch x 1024 tokens with bf16 autocast, fused AdamW and
gradient clipping; with more than one process each model is wrapped in its framework's
DistributedDataParallel (25 MiB buckets, gradient_as_bucket_view in both unless --grad-as-bucket-view 0;
torch's on a torch NCCL group of the same ranks), with one
process in neither (the single-GPU baseline of the scaling efficiency). Steps alternate between the two
frameworks; each is timed from a synchronised start to a synchronised end, and the medians after warm-up
give tokens/s, summed over the ranks.

Exposed communication, what of the gradient all-reduce backward does not hide, is measured two ways:
  * bwd sync - bwd no_sync: the GPU time of loss.backward() (CUDA events around it; with DDP the events
    also cover the hooks' copies into the buckets, the final wait for the all-reduces and, without
    gradient_as_bucket_view, the copy of the averages into .grad), median over
    --probes backwards with synchronisation, minus the median over as many inside ddp.no_sync() (no
    communication at all); both frameworks alike;
  * genesis only, directly: the GPU time from the start of the reducer's end-of-backward callback (queued
    after backward's last kernel) to its end (the current stream waited for the last all-reduces and
    copied the averages back, if it does): from the last compute kernel to the optimizer step being able to
    start.
Both are GPU-timeline intervals: where the step is host-bound, the host time the hooks and the callback
add (launches, Python) shows in them as idle GPU time, which is what it costs (benchmarks/bench_ddp_host.py
measures that host time alone, on cpu).
Both are reported as a share of the median step time (target: under 10 %).
"""

from __future__ import annotations

import os

os.environ["NCCL_NVLS_ENABLE"] = "0"  # before NCCL loads, in both frameworks (the device notes require it)

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as tdist

import genesis
import genesis.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_gpt import TO_TORCH, load


class HostEvent:
    """A CUDA event's interface over the host clock (the cpu smoke run)."""

    def __init__(self, enable_timing: bool = True) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: HostEvent) -> float:
        return (end.t - self.t) * 1e3


class Trainer:
    """One framework's model, DDP wrapper (world > 1) and optimizer on this rank's device."""

    def __init__(self, name: str, script: Any, config: dict, args: argparse.Namespace, env: dict) -> None:
        self.name, self.script, self.lib = name, script, script.genesis
        self.cuda = env["cuda"]
        self.index = env["local"]
        self.device = f"cuda:{self.index}" if self.cuda else "cpu"
        self.lib.manual_seed(0)
        self.model = script.GPT(script.GPTConfig(**config)).to(self.device)
        self.ddp = self.model
        if env["world"] > 1:
            if name == "genesis":
                self.ddp = genesis.nn.parallel.DistributedDataParallel(
                    self.model, bucket_cap_mb=args.bucket_mb, gradient_as_bucket_view=args.grad_as_bucket_view
                )
            else:
                self.ddp = torch.nn.parallel.DistributedDataParallel(
                    self.model,
                    device_ids=[env["local"]] if self.cuda else None,
                    bucket_cap_mb=args.bucket_mb,
                    process_group=env["torch_group"],
                    gradient_as_bucket_view=args.grad_as_bucket_view,
                )
        self.optimizer = script.configure_optimizer(self.model, lr=6e-4, weight_decay=0.1)
        self.low = self.lib.bfloat16 if self.cuda else None
        self.finalize_ms: list[float] = []
        if name == "genesis" and env["world"] > 1:
            self._time_finalize()

    def _event(self) -> Any:
        return self.lib.cuda.Event(enable_timing=True) if self.cuda else HostEvent()

    def _time_finalize(self) -> None:
        """Events around the reducer's end-of-backward callback (the direct exposed-communication time)."""
        reducer = self.ddp.reducer
        plain = reducer._finalize
        self.finalize_events: list[tuple[Any, Any]] = []

        def timed() -> None:
            start, end = self._event(), self._event()
            start.record()
            plain()
            end.record()
            self.finalize_events.append((start, end))

        reducer._finalize = timed  # the hook looks the callback up on the instance at each backward

    def sync(self) -> None:
        if self.cuda:
            self.lib.cuda.synchronize()

    def tensors(self, x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
        return self.lib.tensor(x, device=self.device), self.lib.tensor(y, device=self.device)

    def autocast(self) -> Any:
        return self.lib.autocast("cuda" if self.cuda else "cpu", dtype=self.low, enabled=self.low is not None)

    def step(self, x: np.ndarray, y: np.ndarray) -> None:
        xs, ys = self.tensors(x, y)
        with self.autocast():
            _, loss = self.ddp(xs, ys)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.script.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()

    def backward_ms(self, x: np.ndarray, y: np.ndarray, sync: bool) -> float:
        """The time of one backward (with the gradient all-reduce, or inside no_sync without it); no step."""
        xs, ys = self.tensors(x, y)
        quiet = contextlib.nullcontext() if sync or self.ddp is self.model else self.ddp.no_sync()
        start, end = self._event(), self._event()
        with quiet:
            with self.autocast():
                _, loss = self.ddp(xs, ys)
            self.optimizer.zero_grad(set_to_none=True)
            start.record()
            loss.backward()
            end.record()
        end.synchronize()
        self.optimizer.zero_grad(set_to_none=True)
        return start.elapsed_time(end)

    def peak_gib(self) -> float:
        if not self.cuda:
            return 0.0
        return self.lib.cuda.max_memory_allocated(self.index) / 2**30


def setup(args: argparse.Namespace) -> dict:
    world, local = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = args.device == "cuda"
    if cuda:  # this process' GPU before anything allocates (genesis' "cuda" alone means cuda:0)
        genesis.cuda.set_device(local)
        torch.cuda.set_device(local)
    env: dict[str, Any] = {"world": world, "local": local, "cuda": cuda, "rank": 0, "torch_group": None}
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")  # and torch's default (gloo) group, same store
        env["rank"] = dist.get_rank()
        env["torch_group"] = tdist.new_group(backend="nccl") if cuda else tdist.group.WORLD
    return env


def gather(value: Any, env: dict) -> list[Any]:
    """Every rank's ``value`` (through torch's default gloo group), or [value] alone."""
    if env["world"] == 1:
        return [value]
    out: list[Any] = [None] * env["world"]
    tdist.all_gather_object(out, value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small model (a smoke run)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--batch", type=int, default=None, help="sequences per rank (8; quick: 8, cpu: 2)")
    parser.add_argument("--steps", type=int, default=12, help="timed steps per framework")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--probes", type=int, default=6, help="timed backwards per framework and variant")
    parser.add_argument("--bucket-mb", type=float, default=25.0)
    parser.add_argument(
        "--grad-as-bucket-view",
        type=int,
        choices=[0, 1],
        default=1,
        help="gradient_as_bucket_view for both frameworks' DDP (1: genesis' default; torch's default is 0)",
    )
    parser.add_argument("--frameworks", default="genesis,torch")
    parser.add_argument("--json", type=Path, default=None, help="rank 0 writes the figures here")
    args = parser.parse_args()
    env = setup(args)
    if args.device == "cpu":  # two cores: tiny
        config, batch = dict(vocab_size=256, block_size=32, n_layer=2, n_head=2, n_embd=64), 2
    elif args.quick:
        config, batch = dict(vocab_size=8192, block_size=256, n_layer=4, n_head=8, n_embd=512), 8
    else:
        config, batch = dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768), 8
    batch = args.batch or batch
    names = args.frameworks.split(",")
    sources = {"genesis": None, "torch": TO_TORCH}
    trainers = {n: Trainer(n, load(f"gpt_ddp_{n}", sources[n]), config, args, env) for n in names}
    rng = np.random.default_rng(1 + env["rank"])  # each rank its own batches; both frameworks the same ones
    vocab, block = config["vocab_size"], config["block_size"]

    def draw() -> tuple[np.ndarray, np.ndarray]:
        return rng.integers(0, vocab, size=(batch, block)), rng.integers(0, vocab, size=(batch, block))

    step_s: dict[str, list[float]] = {n: [] for n in names}
    first: dict[str, float] = {}
    for step in range(args.warmup + args.steps):
        x, y = draw()
        for name, trainer in trainers.items():
            trainer.sync()
            start = time.perf_counter()
            trainer.step(x, y)
            trainer.sync()
            elapsed = time.perf_counter() - start
            if step == 0:
                first[name] = elapsed
            if step >= args.warmup:
                step_s[name].append(elapsed)
    bwd: dict[str, dict[str, list[float]]] = {n: {"sync": [], "no_sync": []} for n in names}
    for trainer in trainers.values():
        if hasattr(trainer, "finalize_events"):
            trainer.finalize_events.clear()  # only the probes' own
    variants = ["sync", "no_sync"] if env["world"] > 1 else ["sync"]
    for _ in range(args.probes):
        x, y = draw()
        for name, trainer in trainers.items():
            for variant in variants:
                trainer.sync()
                bwd[name][variant].append(trainer.backward_ms(x, y, variant == "sync"))
    mine = {}
    for name, trainer in trainers.items():
        finalize = [s.elapsed_time(e) for s, e in getattr(trainer, "finalize_events", [])]
        mine[name] = {
            "step_s": statistics.median(step_s[name]),
            "bwd_sync_ms": statistics.median(bwd[name]["sync"]),
            "bwd_no_sync_ms": statistics.median(bwd[name]["no_sync"]) if bwd[name]["no_sync"] else None,
            "finalize_ms": statistics.median(finalize) if finalize else None,
            "peak_gib": trainer.peak_gib(),
            "first_step_s": first[name],
        }
    everyone = gather(mine, env)
    if env["rank"] == 0:
        report(everyone, names, config, batch, env, args)
    if env["world"] > 1:
        dist.destroy_process_group()


def report(everyone: list[dict], names: list[str], config: dict, batch: int, env: dict, args) -> None:
    world, tokens = env["world"], batch * config["block_size"]
    out: dict[str, Any] = {"world": world, "batch_per_rank": batch, "config": config, "device": args.device}
    print(
        f"GPT {config['n_layer']} x {config['n_embd']}, vocabulary {config['vocab_size']}, {world} process(es) x "
        f"{batch} x {config['block_size']} tokens, {'bf16 autocast' if env['cuda'] else 'fp32'}, fused AdamW, clip; "
        + (
            f"DDP ({args.bucket_mb:g} MiB buckets, gradient_as_bucket_view={bool(args.grad_as_bucket_view)} in both)"
            if world > 1
            else "bare models (no DDP): the 1-GPU baseline"
        )
    )
    for name in names:
        ranks = [r[name] for r in everyone]
        rate = sum(tokens / r["step_s"] for r in ranks)  # tokens/s summed over the ranks
        step_ms = max(r["step_s"] for r in ranks) * 1e3
        sync = statistics.median(r["bwd_sync_ms"] for r in ranks)
        fig: dict[str, Any] = {"tokens_per_s": rate, "step_ms": step_ms, "bwd_sync_ms": sync}
        fig["peak_gib"] = max(r["peak_gib"] for r in ranks)
        fig["first_step_s"] = max(r["first_step_s"] for r in ranks)
        line = f"  {name:8s} {rate:12,.0f} tokens/s  step {step_ms:7.1f} ms  backward {sync:6.1f} ms"
        if world > 1:
            quiet = statistics.median(r["bwd_no_sync_ms"] for r in ranks)
            exposed = sync - quiet
            fig.update(bwd_no_sync_ms=quiet, exposed_ms=exposed, exposed_pct=100 * exposed / step_ms)
            share = 100 * exposed / step_ms
            line += f" (no_sync {quiet:6.1f})  exposed comm {exposed:6.2f} ms = {share:4.1f} % of step"
            finalize = [r["finalize_ms"] for r in ranks if r["finalize_ms"] is not None]
            if finalize:
                direct = statistics.median(finalize)
                fig.update(finalize_ms=direct, finalize_pct=100 * direct / step_ms)
                line += f"; last kernel -> step ready {direct:6.2f} ms = {100 * direct / step_ms:4.1f} %"
        line += f"  peak {fig['peak_gib']:5.2f} GiB  first step {fig['first_step_s']:.1f} s"
        print(line)
        out[name] = fig
    if "genesis" in out and "torch" in out:
        ratio = out["genesis"]["tokens_per_s"] / out["torch"]["tokens_per_s"]
        out["genesis_over_torch"] = ratio
        print(f"  genesis / torch tokens/s: {ratio:.3f}" + ("  (target >= 1.0 with DDP)" if world > 1 else ""))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
