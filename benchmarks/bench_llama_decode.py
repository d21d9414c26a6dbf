"""Llama decode / prefill / training step: genesis (examples/llama) against a torch eager model with a static cache.

    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_llama_decode.py           # Llama-3.2-1B
    PYTHONPATH=$(ls -d packages/*/src | paste -sd:) python3 benchmarks/bench_llama_decode.py --quick   # small model

Shapes of Llama-3.2-1B (hidden 2048, 16 layers, 32 / 8 heads of 64, SwiGLU 8192, vocabulary 128,256, tied
embeddings, rope theta 500,000 with llama3 scaling), random weights, bf16. The torch side is written below
in the same architecture: an index_copy_ static cache at per-sequence positions, a boolean mask from them,
scaled_dot_product_attention with enable_gqa. Each framework has its own random weights (timings do not
depend on the values). Measured, in one process, the variants alternating:

* decode tokens/s at batch 1 and 16: 128 prompt tokens, 256 greedy new tokens (the prefill not timed):
  torch eager, genesis eager, genesis with the decode step replayed as a CUDA graph;
* prefill of 2,048 tokens (batch 1) into the cache: time; both sides as a generate's prefill: written from
  position 0, causal attention over the new tokens (no mask: the flash path), logits of the last position only;
* one training step, batch 1 x 2,048 (fp32 weights, bf16 autocast, fwd + bwd + fused AdamW).

Times are medians of each framework's own CUDA events; ratios are torch_time / genesis_time (> 1: genesis
faster). A variant that fails is reported and skipped.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn as tnn
import torch.nn.functional as TF

import genesis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "llama"))
from generate import Decoder
from model import LlamaConfig, LlamaForCausalLM

LLAMA_32_1B = dict(
    vocab_size=128256,
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=64,
    max_position_embeddings=131072,
    rms_norm_eps=1e-5,
    rope_theta=500000.0,
    rope_scaling=dict(
        rope_type="llama3",
        factor=32.0,
        low_freq_factor=1.0,
        high_freq_factor=4.0,
        original_max_position_embeddings=8192,
    ),
    tie_word_embeddings=True,
)
QUICK = {**LLAMA_32_1B, "vocab_size": 32000, "hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 4}


# --------------------------------------------------------------------------------------- the torch reference
class TorchCache:
    """keys / values (B, kv_heads, max_len, D) per layer, written with index_copy_ at per-sequence positions."""

    def __init__(self, c: LlamaConfig, batch: int, max_len: int) -> None:
        shape = (batch, c.num_key_value_heads, max_len, c.head_dim)
        self.k = [torch.zeros(shape, dtype=torch.bfloat16, device="cuda") for _ in range(c.num_hidden_layers)]
        self.v = [torch.zeros(shape, dtype=torch.bfloat16, device="cuda") for _ in range(c.num_hidden_layers)]
        heads = torch.arange(batch * c.num_key_value_heads, device="cuda")
        self.base, self.max_len = (heads * max_len).view(batch, -1, 1), max_len
        self.keys_pos = torch.arange(max_len, device="cuda")

    def update(self, layer: int, k, v, positions):
        b, _, t, d = k.shape
        rows = (self.base + (positions.view(-1, 1) + torch.arange(t, device="cuda")).view(b, 1, t)).reshape(-1)
        self.k[layer].view(-1, d).index_copy_(0, rows, k.reshape(-1, d))
        self.v[layer].view(-1, d).index_copy_(0, rows, v.reshape(-1, d))
        return self.k[layer], self.v[layer]

    def mask(self, positions, t: int):
        last = positions.view(-1, 1) + torch.arange(t, device="cuda")
        return (self.keys_pos.view(1, 1, -1) <= last.unsqueeze(-1)).unsqueeze(1)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


class TorchLayer(tnn.Module):
    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        h, d = c.hidden_size, c.head_dim
        self.heads, self.kv, self.d = c.num_attention_heads, c.num_key_value_heads, d
        self.q = tnn.Linear(h, self.heads * d, bias=False)
        self.k = tnn.Linear(h, self.kv * d, bias=False)
        self.v = tnn.Linear(h, self.kv * d, bias=False)
        self.o = tnn.Linear(self.heads * d, h, bias=False)
        self.gate = tnn.Linear(h, c.intermediate_size, bias=False)
        self.up = tnn.Linear(h, c.intermediate_size, bias=False)
        self.down = tnn.Linear(c.intermediate_size, h, bias=False)
        self.norm1, self.norm2 = tnn.RMSNorm(h, eps=c.rms_norm_eps), tnn.RMSNorm(h, eps=c.rms_norm_eps)

    def forward(self, x, cos, sin, layer: int, cache, positions, mask):
        b, t, _ = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, t, self.heads, self.d).transpose(1, 2)
        k = self.k(y).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v(y).view(b, t, self.kv, self.d).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if cache is not None:
            k_all, v_all = cache.update(layer, k, v, positions)
        if mask is None:  # no cache, or a prefill from position 0: causal over the new tokens (flash)
            a = TF.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            a = TF.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
        y = self.norm2(x)
        return x + self.down(TF.silu(self.gate(y)) * self.up(y))


class TorchLlama(tnn.Module):
    def __init__(self, c: LlamaConfig, max_len: int, inv_freq) -> None:
        super().__init__()
        self.embed = tnn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = tnn.ModuleList([TorchLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = tnn.RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.head = tnn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.head.weight = self.embed.weight
        for p in self.parameters():
            if p.ndim == 2:
                tnn.init.normal_(p, std=0.02)
        angles = torch.outer(torch.arange(max_len, dtype=torch.float64), torch.tensor(inv_freq, dtype=torch.float64))
        angles = torch.cat((angles, angles), -1)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, idx, cache=None, positions=None, last_only=False):
        b, t = idx.shape
        x = self.embed(idx)
        if positions is None:  # with a cache: the prefill, written from slot 0 (as the genesis model)
            ids, mask = torch.arange(t, device=idx.device).view(1, t), None
            if cache is not None:
                positions = torch.zeros(b, dtype=torch.int64, device=idx.device)
        else:
            ids, mask = positions.view(b, 1) + torch.arange(t, device=idx.device), cache.mask(positions, t)
        cos, sin = self.cos[ids].unsqueeze(1).to(x.dtype), self.sin[ids].unsqueeze(1).to(x.dtype)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, i, cache, positions, mask)
        x = self.norm(x)
        return self.head(x[:, -1:] if last_only else x)


# --------------------------------------------------------------------------------------------- the timing
def timed(lib, fn) -> float:
    """Milliseconds of fn() between two of ``lib``'s CUDA events (each framework on its own stream)."""
    start, end = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
    lib.cuda.synchronize()
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def interleave(variants: dict, reps: int, warmup: int = 1) -> dict[str, float]:
    """Median ms of each (lib, fn) variant, alternating; a failing variant is reported and dropped."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    alive = dict(variants)
    for r in range(warmup + reps):
        for name, (lib, fn) in list(alive.items()):
            try:
                ms = timed(lib, fn)
            except Exception:  # report the variant and go on with the others
                print(
                    f"  {name}: FAILED\n" + "".join("    " + line for line in traceback.format_exc().splitlines(True))
                )
                del alive[name]
                continue
            if r >= warmup:
                times[name].append(ms)
    return {name: statistics.median(v) for name, v in times.items() if v}


def ratio_line(label: str, ms: dict[str, float], unit_work: float | None = None, unit: str = "") -> None:
    torch_ms = ms.get("torch")
    print(f"{label}")
    for name, value in ms.items():
        rate = f"   {unit_work / value * 1e3:12,.1f} {unit}" if unit_work else ""
        ratio = f"   torch/genesis time {torch_ms / value:6.3f}" if torch_ms and name != "torch" else ""
        print(f"  {name:16s} {value:10.2f} ms{rate}{ratio}")


def decode_bench(config, gmodel, tmodel, batch: int, prompt: int, new: int, reps: int) -> None:
    max_len = prompt + new
    ids = torch.randint(0, config.vocab_size, (batch, prompt), device="cuda")
    g_ids = genesis.tensor(ids.cpu().numpy(), device="cuda")
    gcache = gmodel.make_cache(batch, max_len)
    tcache = TorchCache(config, batch, max_len)
    gstart = genesis.full((batch,), prompt, dtype=genesis.int64, device="cuda")
    tstart = torch.full((batch,), prompt, dtype=torch.int64, device="cuda")
    with genesis.inference_mode(), torch.inference_mode():  # the prefills, from position 0
        gmodel(g_ids, cache=gcache)
        tmodel(ids, cache=tcache)
    graph_decoder = Decoder(gmodel, gcache, cuda_graph=True)
    eager_decoder = Decoder(gmodel, gcache, cuda_graph=False)

    def genesis_loop(decoder):
        def run():
            with genesis.inference_mode():
                positions, token = gstart.clone(), g_ids[:, -1:]
                for _ in range(new):
                    token = decoder(token, positions)[:, -1].argmax(-1, keepdim=True)
                    positions.add_(1)

        return run

    def torch_loop():
        with torch.inference_mode():
            positions, token = tstart.clone(), ids[:, -1:]
            for _ in range(new):
                token = tmodel(token, cache=tcache, positions=positions)[:, -1].argmax(-1, keepdim=True)
                positions.add_(1)

    variants = {
        "torch": (torch, torch_loop),
        "genesis": (genesis, genesis_loop(eager_decoder)),
        "genesis graph": (genesis, genesis_loop(graph_decoder)),
    }
    ms = interleave(variants, reps)
    ratio_line(f"decode, batch {batch}: {prompt} prompt + {new} new tokens", ms, batch * new, "tokens/s")


def prefill_bench(config, gmodel, tmodel, length: int, reps: int) -> None:
    ids = torch.randint(0, config.vocab_size, (1, length), device="cuda")
    g_ids = genesis.tensor(ids.cpu().numpy(), device="cuda")
    gcache, tcache = gmodel.make_cache(1, length), TorchCache(config, 1, length)
    last = genesis.full((1,), length - 1, dtype=genesis.int64, device="cuda")

    def ours():
        with genesis.inference_mode():
            gmodel(g_ids, cache=gcache, logits_at=last)

    def theirs():
        with torch.inference_mode():
            tmodel(ids, cache=tcache, last_only=True)

    ms = interleave({"torch": (torch, theirs), "genesis": (genesis, ours)}, reps)
    ratio_line(f"prefill, 1 x {length} tokens into the cache", ms, length, "tokens/s")
    attribute_prefill({"torch": (torch, theirs), "genesis": (genesis, ours)})


def attribute_prefill(variants: dict) -> None:
    """Host issue time against GPU busy time, and the largest kernels, for each framework's prefill.

    Issue time is the host's wall time until the call returns (no synchronisation inside); GPU busy time is
    the sum of the kernels' durations that torch.profiler (CUPTI, process-wide, so it sees genesis's Triton
    kernels too) records. Issue time above busy time means the GPU waits on the host.
    """
    from torch.profiler import ProfilerActivity, profile

    for name, (lib, fn) in variants.items():
        lib.cuda.synchronize()
        start = time.perf_counter()
        fn()
        issue = (time.perf_counter() - start) * 1e3
        lib.cuda.synchronize()
        wall = (time.perf_counter() - start) * 1e3
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            lib.cuda.synchronize()
        kernels = [e for e in prof.key_averages() if e.device_time_total > 0]
        busy = sum(e.device_time_total for e in kernels) / 1e3
        launches = sum(e.count for e in kernels)
        print(f"  {name}: issue {issue:.2f} ms, wall {wall:.2f} ms, GPU busy {busy:.2f} ms over {launches} kernels")
        for e in sorted(kernels, key=lambda e: -e.device_time_total)[:8]:
            print(f"      {e.device_time_total / 1e3:7.2f} ms  x{e.count:<4d} {e.key[:90]}")


def train_bench(config, length: int, reps: int, inv_freq) -> None:
    gmodel = LlamaForCausalLM(config, max_seq_len=length).to("cuda")
    tmodel = TorchLlama(config, length, inv_freq).to("cuda")
    gopt = genesis.optim.AdamW(gmodel.parameters(), lr=1e-4, fused=True)
    topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-4, fused=True)
    x = torch.randint(0, config.vocab_size, (1, length + 1), device="cuda")
    gx, gy = (
        genesis.tensor(x[:, :-1].cpu().numpy(), device="cuda"),
        genesis.tensor(x[:, 1:].cpu().numpy(), device="cuda"),
    )
    tx, ty = x[:, :-1], x[:, 1:]

    def ours():
        with genesis.autocast("cuda", dtype=genesis.bfloat16):
            _, loss = gmodel(gx, gy)
        gopt.zero_grad(set_to_none=True)
        loss.backward()
        gopt.step()

    def theirs():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = tmodel(tx)
        loss = TF.cross_entropy(logits.view(-1, logits.shape[-1]).float(), ty.reshape(-1))
        topt.zero_grad(set_to_none=True)
        loss.backward()
        topt.step()

    ms = interleave({"torch": (torch, theirs), "genesis": (genesis, ours)}, reps)
    ratio_line(f"training step, 1 x {length} tokens (fp32 weights, bf16 autocast, AdamW)", ms, length, "tokens/s")
    peak = genesis.cuda.max_memory_allocated() / 2**30, torch.cuda.max_memory_allocated() / 2**30
    print(f"  peak memory: genesis {peak[0]:.1f} GiB, torch {peak[1]:.1f} GiB (whole run)")


def section(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:  # one failing section must not hide the others
        print(f"{fn.__name__} FAILED:\n{traceback.format_exc()}")
    gc.collect()
    genesis.cuda.empty_cache()
    torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 4-layer 512-wide model, shorter sequences")
    parser.add_argument("--reps", type=int, default=None, help="timed repetitions per variant (default 3, quick 2)")
    parser.add_argument("--skip-train", action="store_true", help="leave out the training step")
    args = parser.parse_args()
    config = LlamaConfig(**(QUICK if args.quick else LLAMA_32_1B))
    prompt, new = (32, 64) if args.quick else (128, 256)
    prefill, train_len = (256, 256) if args.quick else (2048, 2048)
    reps = args.reps or (2 if args.quick else 3)
    torch.manual_seed(0)
    genesis.manual_seed(0)
    print(
        f"Llama {'(quick)' if args.quick else '3.2-1B shapes'}: {config.parameter_count() / 1e9:.2f} B parameters, "
        f"{config.num_hidden_layers} layers, {config.num_attention_heads}/{config.num_key_value_heads} heads, "
        f"vocab {config.vocab_size}; bf16; {torch.cuda.get_device_name()}"
    )
    max_len = max(prefill, prompt + new)
    gmodel = LlamaForCausalLM(config, max_seq_len=max_len).to("cuda", dtype=genesis.bfloat16).eval()
    inv_freq = gmodel.model.rotary_emb.inv_freq
    tmodel = TorchLlama(config, max_len, inv_freq).to("cuda", dtype=torch.bfloat16).eval()
    for batch in (1, 16):
        section(decode_bench, config, gmodel, tmodel, batch, prompt, new, reps)
    section(prefill_bench, config, gmodel, tmodel, prefill, reps + 2)
    del gmodel, tmodel
    gc.collect()
    genesis.cuda.empty_cache()
    torch.cuda.empty_cache()
    if not args.skip_train:
        section(train_bench, config, train_len, reps + 1, inv_freq)
    print(f"(ratios: torch time / genesis time, each a median of {reps}+ timed runs after a warm-up)")


if __name__ == "__main__":
    main()
