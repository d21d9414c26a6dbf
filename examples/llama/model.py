"""A Llama / Qwen2-style decoder written with genesis.nn, with Hugging Face's parameter names.

    model = LlamaForCausalLM(LlamaConfig(vocab_size=96, hidden_size=128, ...))
    logits = model(idx)                                    # training / full recompute: causal attention
    logits = model(idx, cache=cache, positions=positions)  # prefill or decode against a StaticKVCache

Pre-norm blocks of RMSNorm, grouped-query self-attention with rotary position embeddings (the half-split
"rotate_half" form of HF's Llama), and a SwiGLU MLP; a final RMSNorm and a head tied to the embedding or
not. The module tree is HF's LlamaForCausalLM / Qwen2ForCausalLM (``model.layers.N.self_attn.q_proj``,
``model.norm``, ``lm_head``, ...), so an HF checkpoint's state dict loads by name. Qwen2 is Llama with
biases on the q / k / v projections (``model_type="qwen2"``).

With a cache, ``positions`` (int64 (batch,) on the model's device) is where each sequence's first new
token goes (None: a prefill from position 0 of every sequence, which attends causally over the new tokens
alone: the fused flash-attention path with no mask, as a prompt of right-padded sequences needs); rotary
angles, the cache's write index and its attention mask come from it on the device, so a decode step reads
nothing back to the host and can be captured as a CUDA graph (see genesis.generation.StaticKVCache for the
right-padding convention of a batch of prompts of different lengths).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from genesis.generation import StaticKVCache


@dataclass
class LlamaConfig:
    """The fields of HF's LlamaConfig / Qwen2Config that the architecture uses (same names, same defaults)."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    initializer_range: float = 0.02
    model_type: str = "llama"

    def __post_init__(self) -> None:
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of num_key_value_heads "
                f"({self.num_key_value_heads})"
            )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LlamaConfig:
        """From an HF config.json's dict: the fields above are taken, the others ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (config.json / checkpoint metadata)."""
        return asdict(self)

    @property
    def qkv_bias(self) -> bool:
        """Biases on q / k / v: Llama's attention_bias, always for Qwen2."""
        return self.attention_bias or self.model_type == "qwen2"

    def parameter_count(self) -> int:
        """Parameters of the model (the tied head counted once)."""
        h, d, layers = self.hidden_size, self.head_dim, self.num_hidden_layers
        q, kv = self.num_attention_heads * d, self.num_key_value_heads * d
        attention = h * (q + 2 * kv) + q * h + (q + 2 * kv) * self.qkv_bias + h * self.attention_bias
        mlp = 3 * h * self.intermediate_size + (2 * self.intermediate_size + h) * self.mlp_bias
        embed = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        return layers * (attention + mlp + 2 * h) + h + embed


class LlamaAttention(nn.Module):
    """Grouped-query self-attention: num_key_value_heads key / value heads shared by groups of query heads."""

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.heads, self.kv_heads, self.head_dim = (
            config.num_attention_heads,
            config.num_key_value_heads,
            config.head_dim,
        )
        h, bias = config.hidden_size, config.qkv_bias
        self.q_proj = nn.Linear(h, self.heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.heads * self.head_dim, h, bias=config.attention_bias)

    def forward(
        self, x, rotary, position_ids, cache: StaticKVCache | None = None, positions=None, mask=None, index=None
    ):
        batch, length, _ = x.shape
        q = self.q_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotary(q, k, position_ids)  # one fused node for both
        if cache is not None:
            keys, values = cache.update(self.layer_idx, k, v, positions, index)
        if mask is None:  # no cache, or a prefill from position 0: causal over the new tokens, the fused path
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:  # against the whole cache; the mask hides slots past each sequence's position
            y = F.scaled_dot_product_attention(q, keys.to(q.dtype), values.to(q.dtype), attn_mask=mask, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(batch, length, self.heads * self.head_dim))


class LlamaMLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        h, i, bias = config.hidden_size, config.intermediate_size, config.mlp_bias
        self.gate_proj = nn.Linear(h, i, bias=bias)
        self.up_proj = nn.Linear(h, i, bias=bias)
        self.down_proj = nn.Linear(i, h, bias=bias)

    def forward(self, x):
        return self.down_proj(F.swiglu(self.gate_proj(x), self.up_proj(x)))  # silu(gate) * up, one fused op


def add_rms_norm(h, residual, norm: nn.RMSNorm):
    """(norm(residual + h), residual + h): the residual add and the norm after it, one fused op each way."""
    return F.add_rms_norm(h, residual, norm.normalized_shape, norm.weight, norm.eps)


class LlamaDecoderLayer(nn.Module):
    """x + attention(norm(x)), then + mlp(norm(.)), with the residual stream passed along beside.

    The layer takes and returns ``(h, residual)``, the stream being ``residual + h``: each add is left
    pending and fused with the norm that follows it (F.add_rms_norm), in this layer or the next one, or
    in the model's final norm. ``h`` is None before the first layer (the stream is ``residual`` alone).
    """

    def __init__(self, config: LlamaConfig, layer_idx: int) -> None:
        super().__init__()
        self.input_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = LlamaAttention(config, layer_idx)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = LlamaMLP(config)

    def forward(self, h, residual, rotary, position_ids, cache=None, positions=None, mask=None, index=None):
        if h is None:
            normed = self.input_layernorm(residual)
        else:
            normed, residual = add_rms_norm(h, residual, self.input_layernorm)
        h = self.self_attn(normed, rotary, position_ids, cache, positions, mask, index)
        normed, residual = add_rms_norm(h, residual, self.post_attention_layernorm)
        return self.mlp(normed), residual


class LlamaModel(nn.Module):
    """Embedding, decoder layers, final norm; the rotary tables (nn.RotaryEmbedding: HF's rope types, llama3
    scaling included) cover ``max_seq_len`` positions (default: max_position_embeddings)."""

    def __init__(self, config: LlamaConfig, max_seq_len: int | None = None) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = nn.RotaryEmbedding(
            config.head_dim,
            max_seq_len or config.max_position_embeddings,
            config.rope_theta,
            config.rope_scaling,
            seq_dim=2,  # (batch, heads, seq, head_dim), HF's layout
        )

    def forward(self, idx, cache: StaticKVCache | None = None, positions=None):
        batch, length = idx.shape
        x = self.embed_tokens(idx)
        if positions is None:  # positions 0 .. length - 1 (with a cache: the prefill, written from slot 0)
            position_ids, mask, index = None, None, None
            if cache is not None:
                positions = cache.zero_positions()
                index = cache.write_index(positions, length)
        else:  # each sequence from its own position, on the device
            index = cache.write_index(positions, length)  # once per step, shared by every layer's cache write
            # the slots written are the tokens' positions (clamped into the cache, as the writes are)
            position_ids, mask = index[2].view(batch, length), cache.attention_mask(positions, length)
        h = None  # the last block's output, still to be added to the stream (see LlamaDecoderLayer)
        for layer in self.layers:
            h, x = layer(h, x, self.rotary_emb, position_ids, cache, positions, mask, index)
        return self.norm(x) if h is None else add_rms_norm(h, x, self.norm)[0]


class LlamaForCausalLM(nn.Module):
    """The decoder and its language-model head (tied to embed_tokens when config.tie_word_embeddings)."""

    def __init__(self, config: LlamaConfig, max_seq_len: int | None = None) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config, max_seq_len)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight  # one Parameter, listed once
        self.apply(self._init_weights)

    def _init_weights(self, module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None, cache: StaticKVCache | None = None, positions=None, logits_at=None):
        """Logits (B, T, vocab), or (B, 1, vocab) at the int64 (B,) indices ``logits_at`` (each prompt's last
        token after a right-padded prefill); with ``targets`` also the mean cross-entropy."""
        hidden = self.model(idx, cache, positions)
        if logits_at is not None:
            # clamped into range: the gather's bounds are known on the host, so it waits for nothing
            last = logits_at.clamp(0, hidden.shape[1] - 1)
            index = last.view(-1, 1, 1).expand(hidden.shape[0], 1, hidden.shape[2])
            hidden = hidden.gather(1, index)
        logits = self.lm_head(hidden)
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))

    def make_cache(self, batch_size: int, max_len: int, dtype=None, device=None) -> StaticKVCache:
        """A StaticKVCache for this model (default: the weights' dtype and device)."""
        weight = self.lm_head.weight
        c = self.config
        return StaticKVCache(
            c.num_hidden_layers,
            batch_size,
            c.num_key_value_heads,
            max_len,
            c.head_dim,
            dtype=dtype or weight.dtype,
            device=device or weight.device,
        )


def estimate_memory(config: LlamaConfig, dtype, batch_size: int = 1, max_len: int = 0) -> dict[str, int]:
    """Bytes of the weights in ``dtype`` and of a KV cache for ``batch_size`` x ``max_len`` tokens."""
    itemsize = genesis.tensor([], dtype=dtype).element_size()
    weights = config.parameter_count() * itemsize
    cache = StaticKVCache.estimate_bytes(
        config.num_hidden_layers, batch_size, config.num_key_value_heads, max(max_len, 1), config.head_dim, dtype
    )
    return {"weights": weights, "kv_cache": cache if max_len else 0}
