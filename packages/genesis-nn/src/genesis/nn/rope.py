"""nn.RotaryEmbedding: the cos / sin tables of rotary position embeddings, and their use on (q, k).

The inverse frequencies follow HF transformers' rope types (reimplemented from their definitions):

``default``  inv_freq[i] = base ** (-2i / dim)
``linear``   position interpolation: positions / factor, i.e. inv_freq / factor
``dynamic``  NTK-aware: past ``max_position_embeddings`` the base grows with the sequence length,
             base * (factor * seq_len / max_pos - (factor - 1)) ** (dim / (dim - 2)); back to the
             original tables once a shorter sequence comes
``llama3``   long wavelengths (> original_max / low_freq_factor) divided by ``factor``, short ones
             (< original_max / high_freq_factor) kept, the band between blended linearly in
             original_max / wavelength

The tables are built once in float64 and stored in ``dtype`` (float32 by default) as non-persistent
buffers (max_positions, dim / 2); forward is one fused call (F.apply_rotary_emb) for q and k.
"""

from __future__ import annotations

import math
from typing import Any

from genesis_autograd import Tensor, arange, float32, float64, no_grad, tensor

from . import functional as F
from .module import Module

_ROPE_TYPES = ("default", "linear", "dynamic", "llama3")


def rope_inv_freq(dim: int, base: float, scaling: dict[str, Any] | None = None) -> list[float]:
    """The ``dim / 2`` inverse frequencies of a rope type (``scaling["rope_type"]``, HF's names; the legacy
    key ``"type"`` too). ``dynamic`` returns the unscaled ones: its base depends on the sequence length."""
    inv = [base ** (-(2 * i) / dim) for i in range(dim // 2)]
    kind = _rope_type(scaling)
    if kind == "linear":
        return [f / float(scaling["factor"]) for f in inv]  # type: ignore[index]
    if kind == "llama3":
        assert scaling is not None
        factor, low, high = (float(scaling[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
        old_len = float(scaling["original_max_position_embeddings"])
        out = []
        for f in inv:
            wavelen = 2 * math.pi / f
            if wavelen > old_len / low:  # long wavelengths: interpolated
                out.append(f / factor)
            elif wavelen < old_len / high:  # short ones: kept
                out.append(f)
            else:  # the band between: a linear blend in old_len / wavelen
                smooth = (old_len / wavelen - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        return out
    return inv


def _rope_type(scaling: dict[str, Any] | None) -> str:
    if not scaling:
        return "default"
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in _ROPE_TYPES:
        raise ValueError(f"RotaryEmbedding: unknown rope_type {kind!r}; expected one of {_ROPE_TYPES}")
    required = {"linear": ("factor",), "dynamic": ("factor",), "default": ()}.get(
        kind, ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
    )
    missing = [k for k in required if k not in scaling]
    if missing:
        raise ValueError(f"RotaryEmbedding: rope_type {kind!r} needs {missing} in scaling")
    return kind


class RotaryEmbedding(Module):
    """Rotary position embeddings for attention's q and k (Llama / Qwen / GPT-NeoX / GPT-J style).

    Args:
        dim: rotary_dim, the features of each head that rotate (even; ``<= head_dim``, the rest pass).
        max_position_embeddings: positions the tables cover (and ``dynamic``'s original context).
        base: rope_theta.
        scaling: HF's ``rope_scaling`` dict: ``{"rope_type": "linear" | "dynamic", "factor": f}`` or
            ``{"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
            "original_max_position_embeddings"}``; None: unscaled.
        interleaved: pairs (2i, 2i + 1) (GPT-J / Meta) instead of half-split (i, i + dim / 2) (NeoX / HF).
        device: where the tables live.
        dtype: the tables' dtype (float32; float64 for float64 models).
        seq_dim: 1 for (batch, seq, heads, head_dim) inputs, 2 for (batch, heads, seq, head_dim).

    ``forward(q, k, positions=None, seq_len=None) -> (q, k)`` rotated; positions (seq,) or (batch, seq)
    integers on the device (None: 0 .. seq - 1).
    """

    def __init__(
        self,
        dim: int,
        max_position_embeddings: int = 2048,
        base: float = 10000.0,
        scaling: dict[str, Any] | None = None,
        interleaved: bool = False,
        device: Any = None,
        *,
        dtype: Any = None,
        seq_dim: int = 1,
    ) -> None:
        super().__init__()
        if dim <= 0 or dim % 2:
            raise ValueError(f"RotaryEmbedding: dim must be a positive even number, got {dim}")
        self.dim, self.base, self.interleaved, self.seq_dim = dim, float(base), bool(interleaved), seq_dim
        self.max_position_embeddings = int(max_position_embeddings)
        self.scaling = dict(scaling) if scaling else None
        self.rope_type = _rope_type(self.scaling)
        self.table_dtype = float32 if dtype is None else dtype
        self.inv_freq = rope_inv_freq(dim, self.base, self.scaling)
        self.max_seq_len_cached = self.max_position_embeddings
        self._build(self.inv_freq, self.max_position_embeddings, device)

    def _build(self, inv_freq: list[float], length: int, device: Any) -> None:
        """cos / sin of position x inv_freq for positions 0 .. length - 1, in float64, stored in table_dtype."""
        with no_grad():
            t = arange(length, dtype=float64, device=device)
            freqs = t.unsqueeze(1) * tensor(inv_freq, dtype=float64, device=device).unsqueeze(0)
            self.register_buffer("cos_cached", freqs.cos().to(self.table_dtype), persistent=False)
            self.register_buffer("sin_cached", freqs.sin().to(self.table_dtype), persistent=False)

    def _dynamic_update(self, seq_len: int) -> None:
        """HF's dynamic NTK: grow the base past the original context; restore it for a short sequence."""
        original = self.max_position_embeddings
        device = self.cos_cached.device
        if seq_len > self.max_seq_len_cached:
            factor = float(self.scaling["factor"])  # type: ignore[index]
            base = self.base * ((factor * seq_len / original) - (factor - 1)) ** (self.dim / (self.dim - 2))
            self._build(rope_inv_freq(self.dim, base), seq_len, device)
            self.max_seq_len_cached = seq_len
        elif seq_len < original < self.max_seq_len_cached:
            self._build(self.inv_freq, original, device)
            self.max_seq_len_cached = original

    def forward(
        self, q: Tensor, k: Tensor, positions: Tensor | None = None, seq_len: int | None = None
    ) -> tuple[Tensor, Tensor]:
        """(q, k) rotated by their tokens' positions. ``seq_len`` matters to ``dynamic`` only: the longest
        sequence so far; None reads ``positions.max() + 1`` on the host (a sync: pass it in a decode loop)."""
        if self.rope_type == "dynamic":
            if seq_len is None:
                seq_len = q.shape[self.seq_dim] if positions is None else int(positions.max().item()) + 1
            self._dynamic_update(int(seq_len))
        out = F.apply_rotary_emb(q, self.cos_cached, self.sin_cached, positions, self.interleaved, k=k,
                                 seq_dim=self.seq_dim)  # fmt: skip
        return out  # type: ignore[return-value]

    def extra_repr(self) -> str:
        """dim, max_position_embeddings, base, the scaling and the pair layout."""
        scaled = f", scaling={self.scaling}" if self.scaling else ""
        return (f"dim={self.dim}, max_position_embeddings={self.max_position_embeddings}, base={self.base}"
                f"{scaled}, interleaved={self.interleaved}")  # fmt: skip
