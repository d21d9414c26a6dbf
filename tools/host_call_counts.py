"""Python-level calls per eager operation on the cuda path, counted without a GPU.

The cuda backend's Python runs over tools/profile_host.py's fake device (device memory faked, every
kernel launch a no-op), and ``sys.setprofile`` counts the calls one operation makes: Python functions
and builtins alike, as cProfile would. The counts are deterministic, so tests/repo/test_host_call_budgets.py
holds each against a budget: host cost is a design property, and a change that adds calls to the hot
path shows up in CI, with no timing involved.

    python tools/host_call_counts.py          # one line per case
    python tools/host_call_counts.py --json   # what the test reads
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_host


def count_calls(fn: Callable[[], object]) -> int:
    """Calls (Python and builtin) made by one call of ``fn``, itself excluded."""
    calls = [0]

    def profiler(frame: object, event: str, arg: object) -> None:
        if event in ("call", "c_call"):
            calls[0] += 1

    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls[0] - 2  # fn itself and the setprofile(None) call


def cases() -> dict[str, Callable[[], object]]:
    import genesis
    import genesis.nn as nn

    a, b = genesis.randn(1024, device="cuda"), genesis.randn(1024, device="cuda")
    ag = genesis.randn(1024, device="cuda", requires_grad=True)
    bg = genesis.randn(1024, device="cuda", requires_grad=True)
    linear = nn.Linear(256, 256).to("cuda")
    x = genesis.randn(64, 256, device="cuda")
    adam_params = [nn.Parameter(genesis.randn(256, 256, device="cuda")) for _ in range(8)]
    for p in adam_params:
        p.grad = genesis.randn(256, 256, device="cuda")
    adamw = genesis.optim.AdamW(adam_params, lr=1e-3)
    relu = nn.ReLU()
    # Llama-shaped inference pieces (bf16, GQA): the fused KV-cache write and the fused rotary of q and k.
    from genesis.generation import StaticKVCache

    cache = StaticKVCache(1, 1, 2, 64, 32, dtype=genesis.bfloat16, device="cuda")
    k_new = genesis.randn(1, 2, 16, 32, device="cuda", dtype=genesis.bfloat16)
    v_new = genesis.randn(1, 16, 2, 32, device="cuda", dtype=genesis.bfloat16).transpose(1, 2)
    positions = cache.zero_positions()
    rotary = nn.RotaryEmbedding(32, 64, seq_dim=2).to("cuda")
    q_rope = genesis.randn(1, 16, 8, 32, device="cuda", dtype=genesis.bfloat16).transpose(1, 2)
    position_ids = genesis.arange(16, device="cuda").view(1, 16)

    def linear_forward_backward() -> None:
        linear(x).sum().backward()

    # One GPT block of examples/train_gpt.py (the benchmarks' model) under bf16 autocast, forward and
    # backward: attention's head-split layouts (no copies back), autocast's kept float32 biases (no casts
    # of them), the fused Linear backward and the norm launch plans all show in this count.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_gpt import load

    script = load("gpt_host_call_counts", None)
    block = script.Block(script.GPTConfig(vocab_size=64, block_size=16, n_layer=1, n_head=2, n_embd=32)).to("cuda")
    hidden = genesis.randn(2, 16, 32, device="cuda", requires_grad=True)

    def gpt_block_step() -> None:
        with genesis.autocast("cuda", dtype=genesis.bfloat16):
            out = block(hidden)
        out.float().sum().backward()

    def adamw_step_per_param() -> None:
        adamw.step()

    return {
        "a + b": lambda: a + b,
        "a + b, requires_grad": lambda: ag + bg,
        "Linear forward + backward": linear_forward_backward,
        "GPT block forward + backward (bf16 autocast)": gpt_block_step,
        "empty": lambda: genesis.empty(262144, device="cuda"),
        "AdamW step (8 params)": adamw_step_per_param,
        "Module.__call__ (ReLU)": lambda: relu(a),
        "StaticKVCache.update (keys + values)": lambda: cache.update(0, k_new, v_new, positions),
        "RotaryEmbedding (q and k)": lambda: rotary(q_rope, v_new, position_ids),
    }


def measure() -> dict[str, int]:
    profile_host.fake_gpu()
    out = {}
    for name, fn in cases().items():
        for _ in range(3):  # warm: compiled plans, layouts and caches in place
            fn()
        out[name] = count_calls(fn)
    return out


def main() -> None:
    counts = measure()
    if "--json" in sys.argv:
        print(json.dumps(counts))
        return
    for name, n in counts.items():
        print(f"{name:30s} {n:6d}")


if __name__ == "__main__":
    main()
