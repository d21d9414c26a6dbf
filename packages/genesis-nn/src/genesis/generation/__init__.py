"""genesis.generation: autoregressive decoding helpers (a static KV cache; sampling helpers alongside)."""

from .kv_cache import StaticKVCache

__all__ = ["StaticKVCache"]
