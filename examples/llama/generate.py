"""Generate text with the Llama example: prefill + decode against a static KV cache, optionally a CUDA graph.

    python examples/llama/generate.py --checkpoint out/llama/ckpt.safetensors --prompt "And God said"
    python examples/llama/generate.py --checkpoint out/llama/ckpt.safetensors --prompt "In the" --prompt "Jesus" \\
        --temperature 0.8 --top-k 40 --top-p 0.95 --repetition-penalty 1.1
    python examples/llama/generate.py --checkpoint path/to/hf-folder --prompt-ids 128000,791,6864 --cuda-graph

A checkpoint is train.py's file (character vocabulary included) or a Hugging Face folder (config.json and
safetensors shards: Llama / Qwen2 layouts; prompts as token ids, since no tokenizer ships here). The
model's memory (weights and cache) is printed before it loads; on cuda the weights are bfloat16. The
prompts of a batch are right-padded and each sequence decodes at its own position (see
genesis.generation.StaticKVCache). With --cuda-graph the decode step (the model's forward for one token
of every sequence) is captured once as a CUDA graph and replayed per token; sampling runs outside it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from checkpoint import load_model, read_config
from model import LlamaForCausalLM, estimate_memory

import genesis
from genesis.generation import sample_next_token


def sample_next(logits, seen, temperature: float, top_k: int, top_p: float, repetition_penalty: float):
    """Next token ids (B,) from last-position logits (B, V): HF's repetition penalty on the tokens marked in
    ``seen`` (bool (B, V): a fixed shape, unlike a growing id history), then genesis.generation's
    sample_next_token: greedy (temperature 0) or temperature / top-k / top-p sampling, no host sync."""
    logits = logits.float()
    if repetition_penalty != 1.0:
        penalised = genesis.where(logits < 0, logits * repetition_penalty, logits / repetition_penalty)
        logits = genesis.where(seen, penalised, logits)
    return sample_next_token(
        logits,
        temperature=max(temperature, 1e-6),
        top_k=top_k or None,
        top_p=top_p,
        greedy=temperature <= 0,
    )


class Decoder:
    """The decode step ``logits = model(tokens (B, 1), cache, positions)``, eager or as a replayed CUDA graph
    over static ``tokens`` / ``positions`` tensors (captured at the first call)."""

    def __init__(self, model: LlamaForCausalLM, cache, cuda_graph: bool) -> None:
        self.model, self.cache, self.cuda_graph = model, cache, cuda_graph
        self.graph = None

    def __call__(self, tokens, positions):
        if not self.cuda_graph:
            return self.model(tokens, cache=self.cache, positions=positions)
        if self.graph is None:
            self.tokens, self.positions = tokens.clone(), positions.clone()
            # torch's recipe: warm up on a side stream, then capture. The warm-up writes the same keys and
            # values at the same positions as the first replay will: harmless.
            side = genesis.cuda.Stream()
            side.wait_stream(genesis.cuda.current_stream())
            with genesis.cuda.stream(side):
                self.model(self.tokens, cache=self.cache, positions=self.positions)
            genesis.cuda.current_stream().wait_stream(side)
            self.graph = genesis.cuda.CUDAGraph()
            with genesis.cuda.graph(self.graph):
                self.logits = self.model(self.tokens, cache=self.cache, positions=self.positions)
        self.tokens.copy_(tokens)
        self.positions.copy_(positions)
        self.graph.replay()
        return self.logits


@genesis.inference_mode()
def generate(
    model: LlamaForCausalLM,
    prompts: list[list[int]],
    max_new_tokens: int,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    repetition_penalty: float = 1.0,
    cuda_graph: bool = False,
    progress=None,
) -> list[list[int]]:
    """``max_new_tokens`` new token ids for each prompt (a list of token ids; lengths may differ), decoded
    with a StaticKVCache; ``progress(n)`` (e.g. a tqdm bar's update) is called after each token."""
    device = model.lm_head.weight.device
    lengths = [len(p) for p in prompts]
    if min(lengths) == 0:
        raise ValueError("generate: every prompt needs at least one token")
    batch, width = len(prompts), max(lengths)
    table = model.model.rotary_emb.cos_cached.shape[0]
    if width + max_new_tokens > table:
        raise ValueError(
            f"generate: {width} prompt + {max_new_tokens} new tokens exceed the model's {table} rotary positions "
            "(build it with a larger max_seq_len)"
        )
    cache = model.make_cache(batch, width + max_new_tokens)
    padded = [p + [0] * (width - len(p)) for p in prompts]  # right padding (never attended)
    seen = genesis.zeros(batch, model.config.vocab_size, dtype=genesis.bool)
    for b, p in enumerate(prompts):
        seen[b, genesis.tensor(p)] = True
    seen = seen.to(device)
    lengths_t = genesis.tensor(lengths, device=device)
    # the prefill from position 0 (positions None): causal attention over the prompts, the fused path
    logits = model(genesis.tensor(padded, device=device), cache=cache, logits_at=lengths_t - 1)
    positions = lengths_t.clone()  # where each sequence's next token goes
    decode = Decoder(model, cache, cuda_graph)
    out = []
    for step in range(max_new_tokens):
        token = sample_next(logits[:, -1], seen, temperature, top_k, top_p, repetition_penalty)
        out.append(token)
        seen.scatter_(1, token.view(-1, 1), True)
        if progress is not None:
            progress(1)
        if step + 1 < max_new_tokens:
            logits = decode(token.view(-1, 1), positions)
            positions.add_(1)
    return genesis.stack(out, dim=1).tolist()


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (every option documented in --help)."""
    cuda = genesis.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkpoint", type=Path, default=Path("out/llama/ckpt.safetensors"), help="train.py's file or an HF folder"
    )
    parser.add_argument("--prompt", action="append", help="a text prompt (repeat for a batch; char checkpoints)")
    parser.add_argument("--prompt-ids", action="append", help="a prompt as comma-separated token ids (repeatable)")
    parser.add_argument("--max-new-tokens", type=int, default=200, help="tokens generated per prompt")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature; 0 = greedy")
    parser.add_argument("--top-k", type=int, default=0, help="sample among the k most likely tokens (0: all)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling probability mass (1: all)")
    parser.add_argument("--repetition-penalty", type=float, default=1.0, help="HF's penalty of tokens already seen")
    parser.add_argument(
        "--device", default="cuda" if cuda else "cpu", help="cpu, cuda or cuda:N (default: cuda if present)"
    )
    parser.add_argument(
        "--dtype", choices=["float32", "bfloat16", "float16"], default=None, help="weights (bfloat16 on cuda)"
    )
    parser.add_argument("--cuda-graph", action="store_true", help="capture the decode step as a CUDA graph")
    parser.add_argument("--seed", type=int, default=1337, help="seed of the sampling")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (progress lines instead)")
    parser.add_argument("--log-interval", type=int, default=50, help="tokens between progress lines without a bar")
    args = parser.parse_args(argv)
    if args.dtype is None:
        args.dtype = "bfloat16" if args.device.startswith("cuda") else "float32"
    if args.cuda_graph and not args.device.startswith("cuda"):
        parser.error("--cuda-graph needs a cuda device")
    return args


def main(argv=None) -> list[str]:
    """Load, generate, print each prompt's continuation and the decode rate; returns the texts."""
    args = parse_args(argv)
    genesis.manual_seed(args.seed)
    config = read_config(args.checkpoint)
    chars = None
    if not args.checkpoint.is_dir():
        chars = genesis.load(args.checkpoint, map_location="cpu").get("chars")
    if args.prompt_ids:
        prompts = [[int(t) for t in p.split(",")] for p in args.prompt_ids]
    elif chars is not None:
        index = {c: i for i, c in enumerate(chars)}
        prompts = [[index[c] for c in p if c in index] for p in (args.prompt or ["And God said"])]
    else:
        raise SystemExit("this checkpoint has no vocabulary: give the prompts as --prompt-ids")
    dtype = getattr(genesis, args.dtype)
    max_len = max(len(p) for p in prompts) + args.max_new_tokens
    memory = estimate_memory(config, dtype, len(prompts), max_len)
    print(
        f"{config.model_type}: {config.parameter_count() / 1e6:,.1f} M parameters; weights "
        f"{memory['weights'] / 2**20:,.1f} MiB in {args.dtype}, KV cache {memory['kv_cache'] / 2**20:,.1f} MiB "
        f"for {len(prompts)} x {max_len} tokens; loading onto {args.device}"
    )
    model = load_model(args.checkpoint, args.device, dtype, max_seq_len=max_len).eval()
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    total = args.max_new_tokens
    bar = tqdm(total=total, unit="tok") if tqdm is not None and not args.quiet and sys.stderr.isatty() else None
    done = [0]

    def progress(n: int) -> None:
        done[0] += n
        if bar is not None:
            bar.update(n)
        elif done[0] % args.log_interval == 0 or done[0] == total:
            print(f"token {done[0]:5d} / {total}")

    began = time.perf_counter()
    tokens = generate(
        model,
        prompts,
        args.max_new_tokens,
        args.temperature,
        args.top_k,
        args.top_p,
        args.repetition_penalty,
        args.cuda_graph,
        progress,
    )
    elapsed = time.perf_counter() - began  # tolist() above waited for the device
    if bar is not None:
        bar.close()
    texts = []
    for prompt, new in zip(prompts, tokens):
        text = "".join(chars[i] for i in prompt + new) if chars is not None else " ".join(map(str, prompt + new))
        texts.append(text)
        print("---\n" + text)
    rate = len(prompts) * args.max_new_tokens / elapsed
    print(
        f"--- {len(prompts)} x {args.max_new_tokens} tokens in {elapsed:.2f} s: {rate:,.1f} tokens/s (prefill included)"
    )
    return texts


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
