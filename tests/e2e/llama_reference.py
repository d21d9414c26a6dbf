"""A plain-torch Llama / Qwen2 (RMSNorm, half-split RoPE, GQA, SwiGLU) with HF's parameter names, and a writer
of its weights as an HF model folder (config.json + safetensors shards + index): the reference the Llama
example is checked against."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.numpy import save_file


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(width)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c: dict) -> None:
        super().__init__()
        self.h, self.kv, self.d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        bias = c.get("attention_bias", False) or c["model_type"] == "qwen2"
        width = c["hidden_size"]
        self.q_proj = nn.Linear(width, self.h * self.d, bias=bias)
        self.k_proj = nn.Linear(width, self.kv * self.d, bias=bias)
        self.v_proj = nn.Linear(width, self.kv * self.d, bias=bias)
        self.o_proj = nn.Linear(self.h * self.d, width, bias=c.get("attention_bias", False))

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(self.h // self.kv, dim=1), v.repeat_interleave(self.h // self.kv, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        y = scores.softmax(-1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, c: dict) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], c["hidden_size"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c: dict) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Inner(nn.Module):
    def __init__(self, c: dict) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class TorchLlama(nn.Module):
    """HF's LlamaForCausalLM / Qwen2ForCausalLM forward (no cache), float64-capable, default rope only."""

    def __init__(self, c: dict) -> None:
        super().__init__()
        self.config = c
        self.model = Inner(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight
        with torch.no_grad():  # fresh random values everywhere, norms and biases included
            for p in self.parameters():
                p.copy_(torch.randn_like(p) * (0.3 if p.ndim > 1 else 0.1) + (1.0 if p.ndim == 1 else 0.0))

    def forward(self, idx):
        d = self.config["head_dim"]
        inv_freq = 1.0 / self.config["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = torch.outer(torch.arange(idx.shape[1], dtype=torch.float64), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        dtype = self.lm_head.weight.dtype
        cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
        x = self.model.embed_tokens(idx)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.model.norm(x))


def tiny_config(model_type: str, **overrides) -> dict:
    """A config.json dict of a few-parameter model of HF's ``model_type`` ("llama" or "qwen2")."""
    config = dict(
        model_type=model_type,
        architectures=["Qwen2ForCausalLM" if model_type == "qwen2" else "LlamaForCausalLM"],
        vocab_size=37,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=64,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        tie_word_embeddings=model_type == "qwen2",
        attention_bias=False,
        torch_dtype="float32",
    )
    config.update(overrides)
    return config


def write_hf_folder(model: TorchLlama, folder: Path, shards: int = 2) -> None:
    """model's weights as an HF folder: config.json, ``shards`` safetensors files and their index (a tied
    head stored once, as HF does)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(model.config))
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    if model.config["tie_word_embeddings"]:
        state.pop("lm_head.weight")
    names = sorted(state)
    weight_map = {}
    for i, part in enumerate(np.array_split(np.array(names), shards)):
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({n: np.ascontiguousarray(state[n]) for n in part}, str(folder / file))
        weight_map.update({n: file for n in part})
    index = {"metadata": {"total_size": sum(a.nbytes for a in state.values())}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
