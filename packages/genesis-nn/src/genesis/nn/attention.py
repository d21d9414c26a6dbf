"""MultiheadAttention, with torch's parameter names (in_proj_weight, in_proj_bias, out_proj, or
q/k/v_proj_weight when key / value widths differ), so torch state dicts load."""

from __future__ import annotations

from genesis_autograd import Tensor, empty

from . import functional as F
from . import init
from .linear import Linear
from .module import Module
from .parameter import Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention's output projection (kept so reprs match); a Linear."""


class MultiheadAttention(Module):
    """Multi-head attention (torch.nn.MultiheadAttention): the query, key and value
    projected into ``num_heads`` heads, scaled dot-product attention in each, the heads joined and projected back.

    Args:
        embed_dim: the model width E (split evenly among the heads).
        num_heads: the number of heads.
        dropout: dropout on the attention weights (training mode).
        bias: learn biases for the input and output projections.
        add_bias_kv: learn a bias appended to the key and value sequences.
        add_zero_attn: append a zero position to the key and value sequences.
        kdim, vdim: the key and value widths (default E; then separate projection weights are used).
        batch_first: inputs and output are (N, L, E) instead of (L, N, E).
        device, dtype: where and in which dtype the parameters are made.

    Shape (forward): query (L, N, E), key (S, N, kdim), value (S, N, vdim) (batch first with batch_first, or
    unbatched without N); key_padding_mask (N, S), True where a key is ignored; attn_mask (L, S) or
    (N * num_heads, L, S), bool (True: not allowed) or float (added). Returns (output, weights): output
    shaped like query, weights (N, L, S) averaged over the heads, (N, num_heads, L, S) with
    average_attn_weights=False, or None with need_weights=False.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead"
            )
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **factory))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **factory))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        self.bias_k: Parameter | None
        self.bias_v: Parameter | None
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **factory))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """(output, weights): output shaped like query; weights (N, L, S) averaged over heads, (N, H, L, S)
        with average_attn_weights=False, or None when need_weights=False."""
        batched = query.ndim == 3
        if self.batch_first and batched:
            # Keep identities (query is key is value) so that self-attention takes the packed projection.
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = query.transpose(1, 0), key.transpose(1, 0), value.transpose(1, 0)
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights
