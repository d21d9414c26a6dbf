"""Train a small Llama-style (or Qwen2-style) model, character by character, on the King James Bible.

    python examples/llama/train.py                          # cpu: a small model, a few minutes on two cores
    python examples/llama/train.py --device cuda --steps 3000
    python examples/llama/train.py --model-type qwen2       # q / k / v biases, tied head
    python examples/llama/generate.py --checkpoint out/llama/ckpt.safetensors --prompt "And God said"

The data, its split, the learning-rate schedule and the loss plot are examples/train_gpt.py's. AdamW
(decay on matrices only), warm-up then cosine decay, gradient clipping, bf16 autocast on cuda. Writes
OUT_DIR/ckpt.safetensors (genesis.save: the weights with HF's names, the config and the vocabulary, for
generate.py) and OUT_DIR/loss.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from model import LlamaConfig, LlamaForCausalLM  # noqa: E402

import genesis  # noqa: E402
import genesis.nn as nn  # noqa: E402
from train_gpt import CharData, configure_optimizer, lr_factor, save_plot  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (every option documented in --help)."""
    cuda = genesis.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="cuda" if cuda else "cpu", help="cpu, cuda or cuda:N (default: cuda if present)"
    )
    parser.add_argument("--model-type", choices=["llama", "qwen2"], default="llama", help="qwen2: q/k/v biases")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default: 1000 cpu, 3000 cuda)")
    parser.add_argument("--batch-size", type=int, default=None, help="sequences per step (default: 16 cpu, 64 cuda)")
    parser.add_argument("--block-size", type=int, default=None, help="context length (default: 64 cpu, 256 cuda)")
    parser.add_argument("--hidden-size", type=int, default=None, help="model width (default: 128 cpu, 384 cuda)")
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default: 4 cpu, 6 cuda)")
    parser.add_argument("--heads", type=int, default=4, help="query heads")
    parser.add_argument("--kv-heads", type=int, default=2, help="key / value heads (grouped-query attention)")
    parser.add_argument("--intermediate-size", type=int, default=None, help="SwiGLU width (default: 8/3 x hidden)")
    parser.add_argument("--untied", action="store_true", help="a head of its own instead of the tied embedding")
    parser.add_argument("--lr", type=float, default=None, help="peak learning rate (default: 2e-3 cpu, 1e-3 cuda)")
    parser.add_argument("--weight-decay", type=float, default=0.1, help="AdamW weight decay of the matrices")
    parser.add_argument("--warmup", type=int, default=100, help="linear warm-up steps before the cosine decay")
    parser.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping threshold")
    parser.add_argument(
        "--dtype", choices=["float32", "bfloat16", "float16"], default=None, help="autocast dtype (bf16 on cuda)"
    )
    parser.add_argument("--eval-interval", type=int, default=250, help="steps between validation losses / checkpoints")
    parser.add_argument("--eval-batches", type=int, default=10, help="batches averaged for each validation loss")
    parser.add_argument("--log-interval", type=int, default=50, help="steps between progress lines without a bar")
    parser.add_argument("--out-dir", type=Path, default=Path("out/llama"), help="checkpoint, loss plot, summary")
    parser.add_argument("--sample-tokens", type=int, default=200, help="characters generated after training")
    parser.add_argument("--seed", type=int, default=1337, help="seed of the weights and batches")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (progress lines instead)")
    args = parser.parse_args(argv)
    on_gpu = args.device.startswith("cuda")
    defaults = (
        dict(steps=3000, batch_size=64, block_size=256, hidden_size=384, layers=6, lr=1e-3, dtype="bfloat16")
        if on_gpu
        else dict(steps=1000, batch_size=16, block_size=64, hidden_size=128, layers=4, lr=2e-3, dtype="float32")
    )
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.intermediate_size is None:
        args.intermediate_size = 8 * args.hidden_size // 3
    return args


@genesis.no_grad()
def estimate_loss(model, data: CharData, args, autocast) -> float:
    """Mean validation loss over --eval-batches batches of a fixed seed."""
    model.eval()
    rng, losses = np.random.default_rng(0), []
    for _ in range(args.eval_batches):
        x, y = data.batch("val", args.batch_size, args.block_size, rng)
        with autocast():
            _, loss = model(genesis.tensor(x, device=args.device), genesis.tensor(y, device=args.device))
        losses.append(loss.item())
    model.train()
    return float(np.mean(losses))


def main(argv=None) -> dict:
    """Train, checkpoint, plot, sample; returns a summary (first / last smoothed train loss, validation)."""
    args = parse_args(argv)
    genesis.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    data = CharData()
    config = LlamaConfig(
        vocab_size=len(data.chars),
        hidden_size=args.hidden_size,
        intermediate_size=args.intermediate_size,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.block_size,
        tie_word_embeddings=not args.untied,
        model_type=args.model_type,
    )
    prompt = "And God said"  # the sample's: rotary tables long enough for it (they are not saved)
    model = LlamaForCausalLM(config, max_seq_len=max(args.block_size, len(prompt) + args.sample_tokens))
    model = model.to(args.device)
    optimizer = configure_optimizer(model, args.lr, args.weight_decay)
    scheduler = genesis.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, args.warmup, args.steps))
    low = None if args.dtype == "float32" else getattr(genesis, args.dtype)
    device_type = "cuda" if args.device.startswith("cuda") else "cpu"

    def autocast():
        return genesis.autocast(device_type, dtype=low, enabled=low is not None)

    print(
        f"{config.model_type}: {config.parameter_count() / 1e6:.2f} M parameters, {config.num_hidden_layers} layers, "
        f"{config.hidden_size} wide, {config.num_attention_heads} / {config.num_key_value_heads} heads, "
        f"{len(data.chars)} characters; {args.device}, {args.dtype}; {args.steps} steps of "
        f"{args.batch_size} x {args.block_size}"
    )
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    bar = tqdm(total=args.steps, unit="step") if tqdm is not None and not args.quiet and sys.stderr.isatty() else None
    args.out_dir.mkdir(parents=True, exist_ok=True)
    ckpt = args.out_dir / "ckpt.safetensors"
    history: dict = {"step": [], "train": [], "eval_step": [], "val": []}
    smoothed = first = last = None
    last_time = time.perf_counter()
    model.train()
    for step in range(args.steps):
        x, y = data.batch("train", args.batch_size, args.block_size, rng)
        with autocast():
            _, loss = model(genesis.tensor(x, device=args.device), genesis.tensor(y, device=args.device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        scheduler.step()
        if step % 10 == 0 or step == args.steps - 1:
            value = last = loss.item()  # a host sync every ten steps only
            first = value if first is None else first
            smoothed = value if smoothed is None else 0.9 * smoothed + 0.1 * value
            history["step"].append(step)
            history["train"].append(smoothed)
            now = time.perf_counter()
            rate = args.batch_size * args.block_size * (10 if step else 1) / max(now - last_time, 1e-9)
            last_time = now
            if bar is not None:
                bar.set_postfix(loss=f"{smoothed:.3f}", tok_s=f"{rate:,.0f}")
            elif step % args.log_interval == 0 or step == args.steps - 1:
                print(f"step {step:5d}  loss {value:.4f}  (smoothed {smoothed:.4f})  {rate:,.0f} tokens/s")
        if bar is not None:
            bar.update()
        if (step + 1) % args.eval_interval == 0 or step == args.steps - 1:
            val = estimate_loss(model, data, args, autocast)
            history["eval_step"].append(step + 1)
            history["val"].append(val)
            (tqdm.write if bar is not None else print)(f"step {step + 1:5d}  train {smoothed:.4f}  val {val:.4f}")
            state = {"model": model.state_dict(), "config": config.to_dict(), "chars": data.chars, "step": step + 1}
            genesis.save(state, ckpt)
            save_plot(history, args.out_dir / "loss.png")
    if bar is not None:
        bar.close()
    if args.sample_tokens > 0:
        from generate import generate  # the KV-cache decoder

        model.eval()
        ids = [data.index[c] for c in prompt]
        new = generate(model, [ids], args.sample_tokens, temperature=0.8, top_k=40)[0]
        print("\n--- sample ---\n" + data.decode(ids + new) + "\n--------------")
    summary = {"first_train": first, "last_train": last, "final_val": history["val"][-1], "steps": args.steps}
    (args.out_dir / "summary.json").write_text(json.dumps(summary))
    print(f"wrote {ckpt} (checkpoint), {args.out_dir / 'loss.png'} (loss curve), {args.out_dir / 'summary.json'}")
    return summary


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
