"""Train a small GPT, character by character, on the King James Bible.

    ./dev gpt                                   # cpu: a small model, about three minutes on two cores
    ./dev gpt --device cuda                     # (the default when a GPU is present) larger, bf16 autocast
    ./dev gpt --steps 2000 --resume             # go on from out/gpt/ckpt.safetensors
    ./dev gpt --compile                         # genesis.compile the model (torch.compile's contract)
    torchrun --nproc_per_node=2 examples/train_gpt.py   # data-parallel: one process per GPU
    torchrun --nproc_per_node=4 examples/train_gpt.py --fsdp   # sharded (FSDP2): 1/4 of the state per GPU

A nanoGPT-shaped model: token and position embeddings, pre-norm blocks of causal
self-attention (scaled_dot_product_attention) and a GELU MLP, a final LayerNorm, and a
head tied to the token embedding. AdamW with decoupled weight decay on matrices only,
linear warm-up then cosine decay, gradient clipping. Every --eval-interval steps it
reports the validation loss and writes a checkpoint (genesis.save: safetensors) and a
loss-curve PNG next to it; at the end it prints a text sample.

Under torchrun (WORLD_SIZE > 1) each process takes one GPU (LOCAL_RANK), the model is wrapped in
DistributedDataParallel, each rank trains on its slice of --batch-size of a global batch of
--batch-size x WORLD_SIZE (drawn alike on every rank, so it trains as one process with the global
batch), and rank 0 alone reports the global batch's loss, evaluates, writes the checkpoint and samples.
With --fsdp each block and then the whole model are fully_shard-ed instead (parameters, gradients and
AdamW state split over the ranks; bf16 parameters for compute with --dtype bfloat16, fp32 reduction and
master weights): every rank evaluates (the forward all-gathers), ckpt.safetensors holds the weights
gathered on rank 0, and OUT_DIR/ckpt_sharded/ a sharded checkpoint (genesis.distributed.checkpoint: each
rank's shards of the weights and AdamW state, the scheduler, step and history) that --fsdp --resume reads
on the same or another number of processes (one process included: the shards are resharded on load).

The script uses torch's names only: replace its genesis imports by torch's and it runs
under PyTorch unchanged (tests/e2e/test_e2e_gpt.py does exactly that).
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

DATA = Path(__file__).resolve().parent / "data" / "kjv.txt.gz"


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_head, self.dropout = config.n_head, config.dropout
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        batch, time_, channels = x.shape
        q, k, v = self.c_attn(x).split(channels, dim=2)
        # (B, T, C) -> (B, heads, T, head size)
        q, k, v = (t.view(batch, time_, self.n_head, channels // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(batch, time_, channels)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied: one Parameter, listed once
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # GPT-2's scaled init of the residual projections
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        positions = genesis.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(positions))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))


class CharData:
    """The text as character ids; the first 90 % trains, the rest validates."""

    def __init__(self, path: Path = DATA) -> None:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            text = f.read()
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        ids = np.array([self.index[c] for c in text], dtype=np.int64)
        cut = int(0.9 * len(ids))
        self.split = {"train": ids[:cut], "val": ids[cut:]}

    def batch(self, split: str, batch_size: int, block_size: int, rng: np.random.Generator):
        data = self.split[split]
        starts = rng.integers(0, len(data) - block_size - 1, size=batch_size)
        x = np.stack([data[s : s + block_size] for s in starts])
        y = np.stack([data[s + 1 : s + 1 + block_size] for s in starts])
        return x, y

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)


def lr_factor(step: int, warmup: int, total: int, floor: float = 0.1) -> float:
    """Linear warm-up, then cosine decay to ``floor`` of the peak."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def configure_optimizer(model, lr: float, weight_decay: float):
    """AdamW; matrices (weights of Linear / Embedding) decay, vectors (biases, norms) do not. On a GPU the
    fused step (one launch per group, step counters kept on the device), as nanoGPT asks for."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    fused = all(p.is_cuda for p in params)
    return genesis.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), fused=fused)


@genesis.no_grad()
def estimate_loss(model, data: CharData, args, autocast, rng: np.random.Generator) -> float:
    model.eval()
    losses = []
    for _ in range(args.eval_batches):
        x, y = data.batch("val", args.batch_size, args.block_size, rng)
        with autocast():
            _, loss = model(genesis.tensor(x, device=args.device), genesis.tensor(y, device=args.device))
        losses.append(loss.item())
    model.train()
    return float(np.mean(losses))


@genesis.no_grad()
def sample(model, data: CharData, args, prompt: str, tokens: int, rng: np.random.Generator) -> str:
    model.eval()
    ids = [data.index[c] for c in prompt]
    for _ in range(tokens):
        context = genesis.tensor([ids[-args.block_size :]], device=args.device)
        logits, _ = model(context)
        probs = F.softmax(logits[0, -1].float() / args.temperature, dim=-1).cpu().numpy().astype(np.float64)
        ids.append(int(rng.choice(len(probs), p=probs / probs.sum())))
    model.train()
    return data.decode(ids)


def save_plot(history: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # matplotlib is in the examples extra; training does not need it
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(history["step"], history["train"], label="train (smoothed)", lw=1)
    ax.plot(history["eval_step"], history["val"], "o-", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats / char)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv=None):
    cuda = genesis.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="cuda" if cuda else "cpu", help="cpu, cuda or cuda:N (default: cuda if present)"
    )
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: 1500 on cpu, 3000 on cuda)")
    parser.add_argument(
        "--batch-size", type=int, default=None, help="sequences per step and process (default: 16 on cpu, 64 on cuda)"
    )
    parser.add_argument("--block-size", type=int, default=None, help="context length (default: 64 on cpu, 256 on cuda)")
    parser.add_argument("--n-layer", type=int, default=None, help="transformer blocks (default: 4 on cpu, 6 on cuda)")
    parser.add_argument("--n-head", type=int, default=None, help="attention heads (default: 4 on cpu, 6 on cuda)")
    parser.add_argument("--n-embd", type=int, default=None, help="model width (default: 128 on cpu, 384 on cuda)")
    parser.add_argument("--dropout", type=float, default=0.0, help="dropout probability (default: 0)")
    parser.add_argument(
        "--lr", type=float, default=None, help="peak learning rate (default: 2e-3 on cpu, 1e-3 on cuda)"
    )
    parser.add_argument("--weight-decay", type=float, default=0.1, help="AdamW weight decay of the matrices")
    parser.add_argument("--warmup", type=int, default=100, help="linear warm-up steps before the cosine decay")
    parser.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping threshold")
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16", "float16"],
        default=None,
        help="autocast dtype (default: bfloat16 on cuda, none on cpu)",
    )
    parser.add_argument(
        "--eval-interval", type=int, default=250, help="steps between validation losses and checkpoints"
    )
    parser.add_argument("--eval-batches", type=int, default=10, help="batches averaged for each validation loss")
    parser.add_argument(
        "--log-interval",
        type=int,
        default=50,
        help="steps between progress lines when no progress bar shows (output not a terminal, --quiet, no tqdm)",
    )
    parser.add_argument(
        "--out-dir", type=Path, default=Path("out/gpt"), help="where the checkpoint, loss plot and summary go"
    )
    parser.add_argument("--resume", action="store_true", help="continue from OUT_DIR/ckpt.safetensors")
    parser.add_argument(
        "--fsdp", action="store_true", help="under torchrun: shard the model with fully_shard (FSDP2) instead of DDP"
    )
    parser.add_argument("--sample-tokens", type=int, default=300, help="characters generated after training")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature of the generated text")
    parser.add_argument("--seed", type=int, default=1337, help="seed of the weights, batches and sample")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (progress lines instead)")
    parser.add_argument(
        "--compile", action="store_true", help="compile the training forward (genesis.compile, torch.compile's API)"
    )
    parser.add_argument(
        "--loss-log",
        type=Path,
        default=None,
        help="write every step's loss of the global batch to this JSON file (a host sync per step)",
    )
    args = parser.parse_args(argv)
    on_gpu = args.device.startswith("cuda")
    # cpu: small enough for a visibly falling loss in about three minutes on two cores.
    defaults = (
        dict(steps=3000, batch_size=64, block_size=256, n_layer=6, n_head=6, n_embd=384, lr=1e-3, dtype="bfloat16")
        if on_gpu
        else dict(steps=1500, batch_size=16, block_size=64, n_layer=4, n_head=4, n_embd=128, lr=2e-3, dtype="float32")
    )
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def shard_model(model, low):
    """FSDP2: each block, then the model (embeddings, final norm, tied head); ``low`` is the compute dtype of
    the all-gathered parameters (the optimizer steps fp32 shards; gradients reduced in fp32)."""
    fsdp = importlib.import_module(genesis.__name__ + ".distributed.fsdp")  # torch's path too
    policy = fsdp.MixedPrecisionPolicy(param_dtype=low, reduce_dtype=genesis.float32 if low is not None else None)
    for block in model.h:
        fsdp.fully_shard(block, mp_policy=policy)
    return fsdp.fully_shard(model, mp_policy=policy)


def gathered_weights(model) -> dict:
    """The whole model's weights on rank 0's host ({} elsewhere): a collective, every rank calls it."""
    sd = importlib.import_module(genesis.__name__ + ".distributed.checkpoint.state_dict")
    return sd.get_model_state_dict(model, options=sd.StateDictOptions(full_state_dict=True, cpu_offload=True))


def sharded_state(model, optimizer, scheduler, step: int, history: dict) -> dict:
    """The sharded checkpoint's contents: this rank's shards of the weights and AdamW state (whole tensors
    when the model is not sharded), the scheduler, the step and the history (as JSON text: one value)."""
    sd = importlib.import_module(genesis.__name__ + ".distributed.checkpoint.state_dict")
    model_sd, optim_sd = sd.get_state_dict(model, optimizer)
    sched = scheduler.state_dict()
    return {"model": model_sd, "optim": optim_sd, "scheduler": sched, "step": step, "history": json.dumps(history)}


def save_sharded(folder: Path, model, optimizer, scheduler, step: int, history: dict) -> None:
    """Every rank writes its shards to ``folder`` (genesis.distributed.checkpoint.save: safetensors, an index)."""
    dcp = importlib.import_module(genesis.__name__ + ".distributed.checkpoint")
    dcp.save(sharded_state(model, optimizer, scheduler, step, history), checkpoint_id=str(folder))


def load_sharded(folder: Path, model, optimizer, scheduler) -> tuple[int, dict]:
    """Read ``folder`` into the (sharded or whole) model, optimizer and scheduler, whatever number of ranks
    wrote it; returns (step, history)."""
    dcp = importlib.import_module(genesis.__name__ + ".distributed.checkpoint")
    sd = importlib.import_module(genesis.__name__ + ".distributed.checkpoint.state_dict")
    state = sharded_state(model, optimizer, scheduler, 0, {})
    dcp.load(state, checkpoint_id=str(folder))
    sd.set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    scheduler.load_state_dict(state["scheduler"])
    return state["step"], json.loads(state["history"])


def init_distributed(args):
    """Under torchrun: join the process group, one GPU per process; returns (rank, world size)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return 0, 1
    dist = genesis.distributed
    if args.device.startswith("cuda"):
        local_rank = int(os.environ["LOCAL_RANK"])
        args.device = f"cuda:{local_rank}"
        genesis.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if args.device.startswith("cuda") else "gloo")
    return dist.get_rank(), world_size


def main(argv=None) -> dict:
    args = parse_args(argv)
    rank, world_size = init_distributed(args)
    genesis.manual_seed(args.seed)
    # Every rank draws the same global batch of batch_size x world_size and trains on its own slice: N
    # processes of batch B see exactly what one process of batch B x N sees (the same loss curve).
    rng = np.random.default_rng(args.seed)
    mine = slice(rank * args.batch_size, (rank + 1) * args.batch_size)
    data = CharData()
    config = GPTConfig(
        vocab_size=len(data.chars),
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=args.n_head,
        n_embd=args.n_embd,
        dropout=args.dropout,
    )
    model = raw_model = GPT(config).to(args.device)
    n_params = sum(p.numel() for p in model.parameters())  # before any sharding
    low = None if args.dtype == "float32" else getattr(genesis, args.dtype)
    fsdp = args.fsdp and world_size > 1
    if fsdp:  # before the optimizer, which then steps the shards (every rank built the same weights)
        shard_model(model, low)
    optimizer = configure_optimizer(model, args.lr, args.weight_decay)
    scheduler = genesis.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, args.warmup, args.steps))
    device_type = "cuda" if args.device.startswith("cuda") else "cpu"

    def autocast():
        return genesis.autocast(device_type, dtype=low, enabled=low is not None)

    args.out_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path = args.out_dir / "ckpt.safetensors"
    history = {"step": [], "train": [], "eval_step": [], "val": []}
    start_step = 0
    sharded_path = args.out_dir / "ckpt_sharded"
    if args.resume and args.fsdp:  # the sharded checkpoint, written by any number of ranks
        start_step, history = load_sharded(sharded_path, model, optimizer, scheduler)
        rng = np.random.default_rng([args.seed, start_step])
        if rank == 0:
            print(f"resumed from {sharded_path} at step {start_step}")
    elif args.resume:
        state = genesis.load(ckpt_path, map_location=args.device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_step, history = state["step"], state["history"]
        rng = np.random.default_rng([args.seed, start_step])
        if rank == 0:
            print(f"resumed from {ckpt_path} at step {start_step}")
    if world_size > 1 and not fsdp:  # after loading: rank 0's weights are broadcast to the others
        # .grad as views of the all-reduce buckets: no copy back after each backward
        model = nn.parallel.DistributedDataParallel(raw_model, gradient_as_bucket_view=True)
    if args.compile:  # the first step captures the forward; later steps replay it, pointwise chains fused
        model = genesis.compile(model)

    print_ = print if rank == 0 else (lambda *a, **k: None)
    print_(
        f"GPT: {n_params / 1e6:.2f} M parameters, {config.n_layer} layers, {config.n_embd} wide, "
        f"{len(data.chars)} characters, context {config.block_size}; {args.device}, "
        f"{args.dtype}; {args.steps} steps of {args.batch_size} x {args.block_size} tokens"
        + (f" on each of {world_size} processes" if world_size > 1 else "")
        + (" (FSDP)" if fsdp else "")
    )

    try:
        from tqdm import tqdm
    except ImportError:  # the examples extra brings it; without it, no bar
        tqdm = None
    # A bar only on a terminal; elsewhere (a log file, a pipe, CI) plain progress lines every --log-interval steps.
    show_bar = tqdm is not None and not args.quiet and rank == 0 and sys.stderr.isatty()
    bar = tqdm(total=args.steps, initial=start_step, unit="step") if show_bar else None
    smoothed, tokens_per_step = None, args.batch_size * args.block_size * world_size
    step_losses: list[float] = []  # --loss-log: each step's global-batch loss
    last_time = time.perf_counter()
    model.train()
    for step in range(start_step, args.steps):
        x, y = data.batch("train", args.batch_size * world_size, args.block_size, rng)
        x, y = genesis.tensor(x[mine], device=args.device), genesis.tensor(y[mine], device=args.device)
        with autocast():
            _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        scheduler.step()
        report = step % 10 == 0 or step == args.steps - 1
        if report or args.loss_log is not None:
            if world_size > 1:  # the whole batch's loss: the mean of the ranks' equal-sized slices
                loss = loss.detach().clone()
                genesis.distributed.all_reduce(loss, op=genesis.distributed.ReduceOp.AVG)
            value = loss.item()  # a host sync every ten steps, not every step (unless --loss-log)
            step_losses.append(value)
        if report:
            smoothed = value if smoothed is None else 0.9 * smoothed + 0.1 * value
            history["step"].append(step)
            history["train"].append(smoothed)
            now = time.perf_counter()
            rate = tokens_per_step * (10 if step else 1) / max(now - last_time, 1e-9)
            last_time = now
            if bar is not None:
                bar.set_postfix(loss=f"{smoothed:.3f}", tok_s=f"{rate:,.0f}")
            elif step == start_step or step % args.log_interval == 0 or step == args.steps - 1:
                print_(f"step {step:5d}  loss {value:.4f}  (smoothed {smoothed:.4f})  {rate:,.0f} tokens/s")
        if bar is not None:
            bar.update()
        if (rank == 0 or fsdp) and ((step + 1) % args.eval_interval == 0 or step == args.steps - 1):
            val = estimate_loss(raw_model, data, args, autocast, np.random.default_rng(0))
            weights = gathered_weights(model) if fsdp else raw_model.state_dict()
            if rank == 0:
                history["eval_step"].append(step + 1)
                history["val"].append(val)
            if fsdp:  # every rank writes its shards of the weights and the AdamW state (rank 0: the history)
                save_sharded(sharded_path, model, optimizer, scheduler, step + 1, history)
            if rank != 0:
                continue
            message = f"step {step + 1:5d}  train {smoothed:.4f}  val {val:.4f}"
            if bar is not None:
                tqdm.write(message)
            else:
                print(message)
            genesis.save(
                {
                    "model": weights,
                    **({} if fsdp else {"optimizer": optimizer.state_dict()}),
                    "scheduler": scheduler.state_dict(),
                    "step": step + 1,
                    "history": history,
                    "config": asdict(config),
                },
                ckpt_path,
            )
            save_plot(history, args.out_dir / "loss.png")
    if bar is not None:
        bar.close()
    if args.loss_log is not None and rank == 0:
        log = {"losses": step_losses, "world_size": world_size, "batch_size": args.batch_size, "start": start_step}
        args.loss_log.write_text(json.dumps(log))
    if fsdp:  # sampling runs on rank 0 alone: an unsharded copy of the weights
        weights = gathered_weights(model)
        if rank == 0:
            raw_model = GPT(config).to(args.device)
            raw_model.load_state_dict(weights)
    if world_size > 1:
        genesis.distributed.destroy_process_group()
        if rank != 0:
            return {"final_val": None, "first_train": history["train"][0] if history["train"] else None}
    text = sample(raw_model, data, args, "And God said", args.sample_tokens, np.random.default_rng(args.seed))
    print("\n--- sample ---\n" + text + "\n--------------")
    summary = {
        "final_val": history["val"][-1] if history["val"] else None,
        "first_train": history["train"][0] if history["train"] else None,
        "steps": args.steps,
    }
    (args.out_dir / "summary.json").write_text(json.dumps(summary))
    plot = args.out_dir / "loss.png"
    written = [f"{ckpt_path} (checkpoint)", f"{plot} (loss curve)" if plot.exists() else None]
    written.append(f"{args.out_dir / 'summary.json'} (summary)")
    print("wrote " + ", ".join(w for w in written if w))
    return summary


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
