"""Transformer layers as torch builds them: TransformerEncoderLayer, TransformerDecoderLayer, the
stacks TransformerEncoder / TransformerDecoder (deep copies of one layer), and the encoder-decoder
Transformer. Submodule names and their order follow torch's, so torch state dicts load."""

from __future__ import annotations

import copy
from collections.abc import Callable

from genesis_autograd import Tensor, full

from . import functional as F
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .functional.attention import float_mask
from .init import xavier_uniform_
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _activation_code(activation) -> int:
    """torch's activation_relu_or_gelu attribute: 1 for relu, 2 for gelu, 0 otherwise."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _masks(dtype, *masks: tuple[Tensor | None, str]) -> list[Tensor | None]:
    """Boolean masks (True = not allowed) as additive float masks, as torch's layers canonicalise them."""
    return [float_mask(m, name, dtype) for m, name in masks]


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection; LayerNorm after each
    (post-norm) or before each (norm_first=True)."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        activation = _activation(activation)
        self.activation_relu_or_gelu = _activation_code(activation)
        self.activation = activation

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        src_mask, src_key_padding_mask = _masks(
            src.dtype, (src_mask, "src_mask"), (src_key_padding_mask, "src_key_padding_mask")
        )
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory``, then a feed-forward block; residuals and LayerNorms
    as in TransformerEncoderLayer."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **factory
        )
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias, **factory
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        tgt_mask, tgt_key_padding_mask, memory_mask, memory_key_padding_mask = _masks(
            tgt.dtype,
            (tgt_mask, "tgt_mask"),
            (tgt_key_padding_mask, "tgt_key_padding_mask"),
            (memory_mask, "memory_mask"),
            (memory_key_padding_mask, "memory_key_padding_mask"),
        )
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.multihead_attn(
            x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal, need_weights=False
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoder(Module):
    """num_layers independent copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=bool(is_causal), src_key_padding_mask=src_key_padding_mask)
        return self.norm(output) if self.norm is not None else output


class TransformerDecoder(Module):
    """num_layers independent copies of ``decoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return self.norm(output) if self.norm is not None else output


class Transformer(Module):
    """torch.nn.Transformer: a TransformerEncoder and a TransformerDecoder (each ending in a LayerNorm), or
    the custom_encoder / custom_decoder given; matrices initialised xavier-uniform, as torch's.

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias:
            as the layers'.
        num_encoder_layers, num_decoder_layers: the stacks' depths.
        custom_encoder, custom_decoder: modules used instead of the built stacks.

    Shape: src (S, N, E) or (N, S, E) with batch_first, (S, E) unbatched; tgt likewise with T; output as tgt.
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(*layer_args, bias=bias, **factory)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(*layer_args, bias=bias, **factory)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The (sz, sz) causal mask: -inf above the diagonal (a position may not see later ones), 0 elsewhere."""
        return full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)
