"""StaticKVCache: preallocated keys and values for autoregressive decoding, written at device-side positions.

Layout: for each layer one keys and one values tensor of shape (batch, kv_heads, max_len, head_dim), one
dtype and device, allocated once. ``update(layer, k_new, v_new, positions)`` writes the new tokens of
every sequence at that sequence's own position, held in an int64 device tensor: nothing is read back to
the host and every shape is fixed, so a decode step can be captured as a CUDA graph and replayed.

Batches of prompts of different lengths: **right padding with per-sequence lengths**. The prompts are
padded on the right to one length and prefilled at positions 0.. (the causal mask keeps every real token
off the padding behind it); sequence b's first generated token then goes to position ``lengths[b]``, and
its padded slots are overwritten by its own later tokens. Each query token t of sequence b may attend to
the keys at positions ``<= positions[b] + t`` (``attention_mask``), so stale or padded slots beyond a
sequence's end are never seen. Rotary position ids are the same per-sequence positions.
"""

from __future__ import annotations

from genesis_autograd import Device, DType, Tensor, arange, as_device, as_dtype, float32, int64, kv_cache_write_, zeros

__all__ = ["StaticKVCache"]


class StaticKVCache:
    """Keys and values of ``num_layers`` attention layers for ``batch_size`` sequences of up to ``max_len``
    tokens: ``keys[layer]`` / ``values[layer]`` of shape (batch_size, num_kv_heads, max_len, head_dim)."""

    def __init__(
        self,
        num_layers: int,
        batch_size: int,
        num_kv_heads: int,
        max_len: int,
        head_dim: int,
        dtype: DType | str = float32,
        device: Device | str | None = None,
    ) -> None:
        """Allocate (zeroed) the cache; ``device`` None means the cpu, as genesis.zeros."""
        for name, value in (
            ("num_layers", num_layers),
            ("batch_size", batch_size),
            ("num_kv_heads", num_kv_heads),
            ("max_len", max_len),
            ("head_dim", head_dim),
        ):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"StaticKVCache: {name} must be a positive int, got {value!r}")
        self.num_layers, self.batch_size, self.num_kv_heads = num_layers, batch_size, num_kv_heads
        self.max_len, self.head_dim = max_len, head_dim
        self.dtype = as_dtype(dtype)
        self.device = as_device(device if device is not None else "cpu")
        shape = (batch_size, num_kv_heads, max_len, head_dim)
        self.keys: list[Tensor] = [zeros(*shape, dtype=self.dtype, device=self.device) for _ in range(num_layers)]
        self.values: list[Tensor] = [zeros(*shape, dtype=self.dtype, device=self.device) for _ in range(num_layers)]
        self.device = self.keys[0].device  # with its index: "cuda" means the current device, as in torch
        # Index arrays of the cache write keys[b, h, slot] = k_new[b, h, t]: aranges (bounds the host knows)
        # broadcast against the clamped slots (B, 1, T), so the write needs no bounds check's stream wait.
        self._batch_ids = arange(batch_size, dtype=int64, device=self.device).view(batch_size, 1, 1)
        self._head_ids = arange(num_kv_heads, dtype=int64, device=self.device).view(1, num_kv_heads, 1)
        self._offsets: dict[int, Tensor] = {}  # arange(T) per query length T, made once (graph-safe)
        self._key_positions = arange(max_len, dtype=int64, device=self.device)
        self._zeros: Tensor | None = None
        self._new_dims = (batch_size, num_kv_heads, head_dim)  # what update checks its operands against
        self._positions_shape = (batch_size,)

    @staticmethod
    def estimate_bytes(
        num_layers: int, batch_size: int, num_kv_heads: int, max_len: int, head_dim: int, dtype: DType | str
    ) -> int:
        """Bytes a cache of these sizes takes (keys and values of every layer), without allocating it."""
        return 2 * num_layers * batch_size * num_kv_heads * max_len * head_dim * as_dtype(dtype).itemsize

    def memory_bytes(self) -> int:
        """Bytes held by the cache's keys and values."""
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))

    def report(self) -> str:
        """One line describing the cache's shape and memory, for printing."""
        return (
            f"KV cache: {self.num_layers} layers x 2 x ({self.batch_size}, {self.num_kv_heads}, {self.max_len}, "
            f"{self.head_dim}) {self.dtype.name} on {self.device} = {self.memory_bytes() / 2**20:,.1f} MiB"
        )

    def reset(self) -> None:
        """Zero every key and value in place (the buffers stay the same objects: captured graphs keep working)."""
        for t in (*self.keys, *self.values):
            t.zero_()

    def zero_positions(self) -> Tensor:
        """int64 zeros (batch,) on the cache's device, made once: the positions of a prefill from slot 0."""
        if self._zeros is None:
            self._zeros = zeros(self.batch_size, dtype=int64, device=self.device)
        return self._zeros

    def _offset(self, length: int) -> Tensor:
        if length not in self._offsets:
            self._offsets[length] = arange(length, dtype=int64, device=self.device)
        return self._offsets[length]

    def write_index(self, positions: Tensor, length: int) -> tuple[Tensor, Tensor, Tensor]:
        """The advanced index (batch ids, head ids, slots) that ``update`` writes ``length`` new tokens of every
        sequence through, from ``positions``; compute it once per forward and pass it to every layer's update.
        Slots outside [0, max_len) are clamped (on the device): the clamp's bounds are known to the host, so the
        write waits for no bounds check."""
        slots = (positions.view(-1, 1) + self._offset(length)).clamp(0, self.max_len - 1)
        return self._batch_ids, self._head_ids, slots.view(self.batch_size, 1, length)

    def update(
        self,
        layer: int,
        k_new: Tensor,
        v_new: Tensor,
        positions: Tensor,
        index: tuple[Tensor, Tensor, Tensor] | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Write ``k_new`` / ``v_new`` (batch, kv_heads, T, head_dim) of every sequence b at positions
        ``positions[b] .. positions[b] + T - 1`` (``positions``: int64 (batch,) on the cache's device) and
        return the layer's whole keys and values. Positions outside [0, max_len) are clamped to the first /
        last slot (on the device, without a host check: the caller keeps within max_len); where the clamp
        sends several tokens to one slot, the last of them stays.

        One fused write of keys and values (genesis_autograd.kv_cache_write_: one kernel launch on cuda, the
        slots computed from ``positions`` on the device). ``index``: this step's ``write_index(positions, T)``,
        accepted for compatibility and not read: it names the same slots. With gradients flowing into the
        cache (training through it), the write is a recorded indexed assignment instead."""
        shape = k_new.shape
        if len(shape) != 4 or v_new.shape != shape or (shape[0], shape[1], shape[3]) != self._new_dims:
            raise RuntimeError(
                f"StaticKVCache.update: expected keys and values of shape ({self.batch_size}, {self.num_kv_heads}, "
                f"T, {self.head_dim}), got {tuple(k_new.shape)} and {tuple(v_new.shape)}"
            )
        device = positions.device
        if positions.shape != self._positions_shape or (device is not self.device and device != self.device):
            raise RuntimeError(
                f"StaticKVCache.update: positions must be a ({self.batch_size},) tensor on {self.device}, got "
                f"{tuple(positions.shape)} on {positions.device}"
            )
        keys, values = self.keys[layer], self.values[layer]
        kv_cache_write_(keys, values, k_new, v_new, positions)
        return keys, values

    def attention_mask(self, positions: Tensor, query_len: int) -> Tensor:
        """Boolean (batch, 1, query_len, max_len) mask, True where query t of sequence b may attend: key
        positions ``<= positions[b] + t`` (causal within the new tokens, blind to slots past the end)."""
        last = positions.view(-1, 1) + self._offset(query_len)  # (B, T): each query's own position
        return (self._key_positions.view(1, 1, -1) <= last.unsqueeze(-1)).unsqueeze(1)
