"""Sharded data-parallel GPT training: genesis fully_shard against torch's fully_shard (FSDP2), the same
model code, the same settings, in the same launch, on the same GPUs.

    torchrun --nproc_per_node=4 benchmarks/bench_fsdp.py --json out/fsdp4.json    # 4 GPUs, both frameworks
    torchrun --nproc_per_node=1 benchmarks/bench_fsdp.py --json out/fsdp1.json    # 1 GPU, bare models
    python benchmarks/bench_fsdp.py --scaling out/fsdp4.json out/fsdp1.json        # the ratios
    torchrun --nproc_per_node=4 benchmarks/bench_fsdp.py --loss-curve 200 --json out/loss4.json
    torchrun --nproc_per_node=1 benchmarks/bench_fsdp.py --loss-curve 200 --json out/loss1.json
    python benchmarks/bench_fsdp.py --compare out/loss4.json out/loss1.json         # loss curves side by side
    torchrun --nproc_per_node=2 benchmarks/bench_fsdp.py --device cpu --quick       # gloo, no GPU (a smoke run)

The model is examples/train_gpt.py's GPT, GPT-2 large by default (36 x 1280, vocabulary 50,304, context
1024: 774 M parameters; --model small for GPT-2 small), loaded twice as benchmarks/bench_gpt.py does: as
written (genesis) and with its genesis imports swapped for torch's. With more than one process each
framework shards every block and then the model (bf16 parameters for compute, fp32 reduction, fp32
master shards: MixedPrecisionPolicy(bfloat16, float32)), torch's over a DeviceMesh of a torch NCCL group
of the same ranks; fused AdamW over the shards, clip_grad_norm_ at 1.0. With one process both train bare
models (bf16 autocast): the baseline of the scaling. Steps alternate between the frameworks, each timed
from a synchronised start to a synchronised end; the medians after warm-up give tokens/s (summed over the
ranks); peak memory is each framework's own allocator's (max_memory_allocated), the largest over the ranks.

--profile: after the timed steps, one more step of each framework under torch.profiler on rank 0: its wall time,
the GPU time of its compute kernels and of its NCCL kernels (which overlap them on their own stream), so that
a shortfall against the 1-GPU step shows as compute that got slower or as time the GPU spent waiting.

--loss-curve N: genesis alone, N steps of one global batch of --batch x 4 sequences (the same on every
world size: each rank trains on its slice), every step's loss of the global batch written to --json;
--compare prints the largest and mean differences of two such curves (FSDP on 4 GPUs against one GPU).
"""

from __future__ import annotations

import os

os.environ["NCCL_NVLS_ENABLE"] = "0"  # before NCCL loads, in both frameworks (the device notes require it)

import argparse
import importlib
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

MODELS = {
    "large": dict(vocab_size=50304, block_size=1024, n_layer=36, n_head=20, n_embd=1280),
    "small": dict(vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768),
    "cpu": dict(vocab_size=256, block_size=32, n_layer=2, n_head=2, n_embd=64),
}
LOSS_CURVE_RANKS = 4  # the global batch of --loss-curve is --batch x this, whatever the world size


def shard(script: Any, model: Any, mesh: Any, cuda: bool) -> None:
    """Each block, then the model, with the framework's own fully_shard (torch's path is genesis')."""
    lib = script.genesis
    fsdp = importlib.import_module(lib.__name__ + ".distributed.fsdp")
    policy = fsdp.MixedPrecisionPolicy(param_dtype=lib.bfloat16, reduce_dtype=lib.float32) if cuda else None
    kwargs = {"mesh": mesh, **({"mp_policy": policy} if policy is not None else {})}
    for block in model.h:
        fsdp.fully_shard(block, **kwargs)
    fsdp.fully_shard(model, **kwargs)


class Trainer:
    """One framework's model (sharded when world > 1) and optimizer on this rank's device."""

    def __init__(self, name: str, config: dict, env: dict) -> None:
        self.name, self.script = name, load(f"gpt_fsdp_{name}", None if name == "genesis" else TO_TORCH)
        self.lib, self.cuda, self.index = self.script.genesis, env["cuda"], env["local"]
        self.device = f"cuda:{self.index}" if self.cuda else "cpu"
        self.lib.manual_seed(0)
        self.model = self.script.GPT(self.script.GPTConfig(**config)).to(self.device)
        self.sharded = env["world"] > 1
        if self.sharded:
            shard(self.script, self.model, env["mesh"][name], self.cuda)
        self.optimizer = self.script.configure_optimizer(self.model, lr=6e-4, weight_decay=0.1)
        # sharded: the parameters are bf16 already; bare: bf16 autocast over fp32 parameters
        self.low = self.lib.bfloat16 if self.cuda else None

    def sync(self) -> None:
        if self.cuda:
            self.lib.cuda.synchronize()

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        xs, ys = self.lib.tensor(x, device=self.device), self.lib.tensor(y, device=self.device)
        with self.lib.autocast("cuda" if self.cuda else "cpu", dtype=self.low, enabled=self.low is not None):
            _, loss = self.model(xs, ys)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.script.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return loss

    def peak_gib(self) -> float:
        return self.lib.cuda.max_memory_allocated(self.index) / 2**30 if self.cuda else 0.0


def setup(args: argparse.Namespace) -> dict:
    world, local = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = args.device == "cuda"
    if cuda:  # this process' GPU before anything allocates
        genesis.cuda.set_device(local)
        torch.cuda.set_device(local)
    env: dict[str, Any] = {"world": world, "local": local, "cuda": cuda, "rank": 0, "mesh": {}}
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")  # and torch's default (gloo) group, same store
        env["rank"] = dist.get_rank()
        from torch.distributed.device_mesh import DeviceMesh

        torch_group = tdist.new_group(backend="nccl") if cuda else tdist.group.WORLD
        kind = "cuda" if cuda else "cpu"
        env["mesh"] = {
            "genesis": dist.init_device_mesh(kind, (world,)),
            "torch": DeviceMesh.from_group(torch_group, kind),
        }
    return env


def profile_step(name: str, trainer: Trainer, x: np.ndarray, y: np.ndarray, env: dict) -> None:
    """One step of ``trainer`` (every rank runs it; rank 0 under torch.profiler, which sees genesis's kernels
    too): wall time, compute-kernel and NCCL-kernel GPU time, the largest kernels."""
    from profile_gpt_kernels import print_largest, profiled

    trainer.sync()
    if env["rank"] != 0:
        trainer.step(x, y)
        trainer.sync()
        return
    wall, kernels = profiled(lambda: (trainer.step(x, y), trainer.sync()))
    nccl = sum(e.device_time_total for e in kernels if "nccl" in e.key.lower()) / 1e3
    compute = sum(e.device_time_total for e in kernels if "nccl" not in e.key.lower()) / 1e3
    print(f"  profile {name}: step {wall:.1f} ms; compute kernels {compute:.1f} ms, NCCL kernels {nccl:.1f} ms")
    print_largest(kernels, 8, width=90)


def gather(value: Any, env: dict) -> list[Any]:
    """Every rank's ``value`` (through torch's default gloo group), or [value] alone."""
    if env["world"] == 1:
        return [value]
    out: list[Any] = [None] * env["world"]
    tdist.all_gather_object(out, value)
    return out


def throughput(args: argparse.Namespace, env: dict, config: dict, batch: int) -> None:
    names = args.frameworks.split(",")
    trainers = {n: Trainer(n, config, env) for n in names}
    rng = np.random.default_rng(1 + env["rank"])  # each rank its own batches; both frameworks the same ones
    vocab, block = config["vocab_size"], config["block_size"]
    step_s: dict[str, list[float]] = {n: [] for n in names}
    for step in range(args.warmup + args.steps):
        x, y = rng.integers(0, vocab, size=(batch, block)), rng.integers(0, vocab, size=(batch, block))
        for name, trainer in trainers.items():
            trainer.sync()
            start = time.perf_counter()
            trainer.step(x, y)
            trainer.sync()
            if step >= args.warmup:
                step_s[name].append(time.perf_counter() - start)
    if args.profile:
        x, y = rng.integers(0, vocab, size=(batch, block)), rng.integers(0, vocab, size=(batch, block))
        for name, trainer in trainers.items():
            profile_step(name, trainer, x, y, env)
    mine = {n: {"step_s": statistics.median(step_s[n]), "peak_gib": t.peak_gib()} for n, t in trainers.items()}
    everyone = gather(mine, env)
    if env["rank"] != 0:
        return
    world, tokens = env["world"], batch * block
    out: dict[str, Any] = {"world": world, "batch_per_rank": batch, "config": config, "device": args.device}
    precision = "bf16 params / fp32 reduce" if env["cuda"] else "fp32"
    how = f"fully_shard, {precision}" if world > 1 else f"bare models, {precision} (the 1-GPU baseline)"
    print(f"GPT {config['n_layer']} x {config['n_embd']}, {world} process(es) x {batch} x {block} tokens; {how}")
    for name in names:
        ranks = [r[name] for r in everyone]
        rate = sum(tokens / r["step_s"] for r in ranks)
        fig = {"tokens_per_s": rate, "step_ms": max(r["step_s"] for r in ranks) * 1e3}
        fig["peak_gib"] = max(r["peak_gib"] for r in ranks)
        print(f"  {name:8s} {rate:12,.0f} tokens/s  step {fig['step_ms']:8.1f} ms  peak {fig['peak_gib']:6.2f} GiB")
        out[name] = fig
    if "genesis" in out and "torch" in out:
        out["genesis_over_torch"] = out["genesis"]["tokens_per_s"] / out["torch"]["tokens_per_s"]
        out["memory_genesis_over_torch"] = out["genesis"]["peak_gib"] / max(out["torch"]["peak_gib"], 1e-9)
        print(
            f"  genesis / torch tokens/s: {out['genesis_over_torch']:.3f} (target >= 1.0); peak memory "
            f"{out['memory_genesis_over_torch']:.3f} (target <= 1.0)"
        )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


def loss_curve(args: argparse.Namespace, env: dict, config: dict, batch: int) -> None:
    trainer = Trainer("genesis", config, env)
    world, rank = env["world"], env["rank"]
    total = batch * LOSS_CURVE_RANKS
    if total % world:
        raise SystemExit(f"--loss-curve: the global batch {total} does not split over {world} ranks")
    mine = slice(rank * total // world, (rank + 1) * total // world)
    rng = np.random.default_rng(7)  # the same global batches on every rank and world size
    vocab, block = config["vocab_size"], config["block_size"]
    losses = []
    for _ in range(args.loss_curve):
        x, y = rng.integers(0, vocab, size=(total, block)), rng.integers(0, vocab, size=(total, block))
        x[:, 1:] = (x[:, :-1] * 7 + 3) % vocab  # a learnable pattern: the curve falls
        y = np.roll(x, -1, axis=1)
        loss = trainer.step(x[mine], y[mine]).detach().float().reshape(1).clone()
        if world > 1:
            dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        losses.append(float(loss.item()))
    if rank == 0:
        print(f"loss curve, {world} rank(s), global batch {total}: first {losses[0]:.4f} last {losses[-1]:.4f}")
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"world": world, "losses": losses, "config": config}))


def compare(a: Path, b: Path) -> None:
    one, two = json.loads(a.read_text()), json.loads(b.read_text())
    x, y = np.array(one["losses"]), np.array(two["losses"])
    n = min(len(x), len(y))
    diff = np.abs(x[:n] - y[:n])
    print(
        f"{n} steps, {one['world']} vs {two['world']} rank(s): largest |difference| {diff.max():.4f} (step "
        f"{int(diff.argmax())}), mean {diff.mean():.4f}; final losses {x[n - 1]:.4f} / {y[n - 1]:.4f}"
    )


def scaling(many: Path, one: Path) -> None:
    a, b = json.loads(many.read_text()), json.loads(one.read_text())
    for name in ("genesis", "torch"):
        if name in a and name in b:
            ratio = a[name]["tokens_per_s"] / b[name]["tokens_per_s"]
            print(f"  {name:8s} {a['world']}-GPU / 1-GPU tokens/s: {ratio:.2f} (target >= 3.6 for genesis on 4)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["large", "small"], default="large")
    parser.add_argument("--quick", action="store_true", help="GPT-2 small (a smoke run)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--batch", type=int, default=None, help="sequences per rank (8; cpu: 2)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per framework")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--frameworks", default="genesis,torch")
    parser.add_argument("--loss-curve", type=int, default=0, help="N: genesis' loss curve over N steps instead")
    parser.add_argument("--compare", type=Path, nargs=2, default=None, help="two --loss-curve JSON files")
    parser.add_argument("--scaling", type=Path, nargs=2, default=None, help="the N-GPU and 1-GPU JSON files")
    parser.add_argument("--json", type=Path, default=None, help="rank 0 writes the figures here")
    parser.add_argument("--profile", action="store_true", help="one more step of each under torch.profiler")
    args = parser.parse_args()
    if args.compare is not None:
        return compare(*args.compare)
    if args.scaling is not None:
        return scaling(*args.scaling)
    if args.profile and args.device != "cuda":
        raise SystemExit("--profile profiles the GPU kernels: it needs --device cuda")
    env = setup(args)
    model = "cpu" if args.device == "cpu" else ("small" if args.quick else args.model)
    config, batch = MODELS[model], args.batch or (2 if args.device == "cpu" else 8)
    if args.loss_curve:
        loss_curve(args, env, config, batch)
    else:
        throughput(args, env, config, batch)
    if env["world"] > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
