"""genesis.generation: autoregressive decoding helpers (a static KV cache; sampling helpers alongside)."""

from .kv_cache import StaticKVCache
from .sampling import (
    apply_repetition_penalty,
    apply_temperature,
    sample_next_token,
    top_k_filter,
    top_p_filter,
)

__all__ = [
    "StaticKVCache",
    "apply_repetition_penalty",
    "apply_temperature",
    "sample_next_token",
    "top_k_filter",
    "top_p_filter",
]
