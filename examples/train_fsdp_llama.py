"""Train a Llama-style model too big for one GPU with fully_shard (FSDP2), on synthetic tokens.

    torchrun --nproc_per_node=4 examples/train_fsdp_llama.py                  # 7 B on 4 x 80 GB, 5 steps
    torchrun --nproc_per_node=2 examples/train_fsdp_llama.py --config tiny --device cpu --steps 3   # a smoke run

A 7 B Llama (examples/llama/model.py: 32 layers, 4096 wide) in fp32 needs 16 bytes a parameter for the
weights, gradients and AdamW's two moments: 112 GB, more than any one GPU holds. Sharded over 4 GPUs each
holds a quarter (28 GB) of that state; the layers are all-gathered one at a time in bf16 for compute
(MixedPrecisionPolicy: bf16 parameters, fp32 gradient reduction, fp32 master shards the fused AdamW steps),
each layer's activations are recomputed in backward (activation checkpointing), and the next layer's
all-gather is prefetched while the current one computes.

The model is built one layer at a time on the device and sharded at once, so no rank ever holds the whole
model. Each step prints the loss (mean over ranks) and tokens/s; the end prints every GPU's peak memory
(genesis.cuda.max_memory_allocated) against its capacity.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "llama")]

from model import LlamaConfig, LlamaDecoderLayer, LlamaForCausalLM  # noqa: E402

import genesis  # noqa: E402
import genesis.distributed as dist  # noqa: E402
import genesis.nn as nn  # noqa: E402
from genesis.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402
from genesis.utils.checkpoint import checkpoint  # noqa: E402

CONFIGS = {
    "7b": LlamaConfig(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32),
    "1b": LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22),
    "tiny": LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4
    ),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="7b", help="model size (default: 7b)")
    parser.add_argument("--device", default="cuda", help="cuda (one GPU per process) or cpu (gloo, a smoke run)")
    parser.add_argument("--steps", type=int, default=5, help="training steps")
    parser.add_argument("--batch-size", type=int, default=2, help="sequences per rank and step")
    parser.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence")
    parser.add_argument("--lr", type=float, default=3e-4, help="AdamW learning rate")
    parser.add_argument("--no-checkpointing", action="store_true", help="keep every layer's activations")
    parser.add_argument("--fp32", action="store_true", help="compute in fp32 (no mixed precision)")
    return parser.parse_args(argv)


def checkpointed(layer: nn.Module) -> None:
    """Recompute the layer's activations in its backward instead of keeping them (non-reentrant)."""
    inner = layer.forward
    layer.forward = lambda *args, **kwargs: checkpoint(inner, *args, use_reentrant=False, **kwargs)


def build_sharded(config: LlamaConfig, device: str, policy: MixedPrecisionPolicy, activation_checkpointing: bool):
    """The model, each layer made on the device, initialised and sharded before the next one exists."""
    genesis.manual_seed(0)  # every rank draws the same weights, then keeps its rows
    model = LlamaForCausalLM(replace(config, num_hidden_layers=0), max_seq_len=4096).to(device)
    model.config = config
    layers = []
    for i in range(config.num_hidden_layers):
        layer = LlamaDecoderLayer(config, i).to(device)
        layer.apply(model._init_weights)
        if activation_checkpointing:
            checkpointed(layer)
        fully_shard(layer, mp_policy=policy)
        layers.append(layer)
    model.model.layers = nn.ModuleList(layers)
    return fully_shard(model, mp_policy=policy)


def main(argv=None) -> None:
    args = parse_args(argv)
    cuda = args.device.startswith("cuda")
    if cuda:
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        genesis.cuda.set_device(local_rank)
        args.device = f"cuda:{local_rank}"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    config = CONFIGS[args.config]
    say = print if rank == 0 else (lambda *a, **k: None)
    n = config.parameter_count()
    state_gb = 16 * n / 1e9  # fp32 weights, gradients, exp_avg, exp_avg_sq
    capacity = genesis.cuda.get_device_properties(args.device).total_memory / 1e9 if cuda else float("nan")
    say(
        f"Llama {args.config}: {n / 1e9:.2f} B parameters; fp32 weights + grads + AdamW = {state_gb:.1f} GB "
        + (f"(one GPU: {capacity:.1f} GB); " if cuda else "; ")
        + f"sharded over {world} ranks: {state_gb / world:.1f} GB each"
    )
    policy = MixedPrecisionPolicy() if args.fp32 else MixedPrecisionPolicy(genesis.bfloat16, genesis.float32)
    model = build_sharded(config, args.device, policy, not args.no_checkpointing)
    opt = genesis.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)
    tokens = args.batch_size * args.seq_len * world
    for step in range(args.steps):
        start = time.perf_counter()
        genesis.manual_seed(1000 + step * world + rank)  # each rank its own synthetic batch
        idx = genesis.randint(0, config.vocab_size, (args.batch_size, args.seq_len + 1), device=args.device)
        _, loss = model(idx[:, :-1].contiguous(), idx[:, 1:].contiguous())
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        value = loss.detach().float().reshape(1).clone()
        dist.all_reduce(value, op=dist.ReduceOp.AVG)
        if cuda:
            genesis.cuda.synchronize()
        elapsed = time.perf_counter() - start
        say(f"step {step}  loss {value.item():.4f}  grad norm {norm.item():.3f}  {tokens / elapsed:,.0f} tokens/s")
    peak = genesis.tensor([genesis.cuda.max_memory_allocated(args.device) / 1e9 if cuda else 0.0], device=args.device)
    peaks = [genesis.zeros(1, device=args.device) for _ in range(world)]
    dist.all_gather(peaks, peak)
    if cuda:
        for r, p in enumerate(peaks):
            say(f"GPU {r}: peak {p.item():.1f} GB of {capacity:.1f} GB")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
