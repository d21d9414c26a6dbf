"""MultiheadAttention, Transformer layers and scaled_dot_product_attention against torch, in float64."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, g, module_repr, to_torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

E, H = 8, 2


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def _pair(build):
    return build(torch.nn).double().eval(), build(nn).double().eval()


def _bool_mask(*shape):
    mask = torch.rand(*shape) < 0.3
    mask[..., 0] = False  # every query keeps a key: no all-masked row (torch gives NaN there)
    return mask


# (id, build(nn), inputs() -> [query, key, value], forward kwargs() -> dict of torch masks / flags)
MHA_CASES = [
    ("self-attention", lambda nn: nn.MultiheadAttention(E, H), lambda: [rand(5, 3, E)] * 3, dict),
    (
        "cross-attention",
        lambda nn: nn.MultiheadAttention(E, H),
        lambda: [rand(5, 3, E), rand(4, 3, E), rand(4, 3, E)],
        dict,
    ),
    ("batch-first", lambda nn: nn.MultiheadAttention(E, H, batch_first=True), lambda: [rand(3, 5, E)] * 3, dict),
    (
        "kdim-vdim",
        lambda nn: nn.MultiheadAttention(E, H, kdim=5, vdim=3, batch_first=True),
        lambda: [rand(2, 4, E), rand(2, 6, 5), rand(2, 6, 3)],
        dict,
    ),
    (
        "bias-kv-zero-attn",
        lambda nn: nn.MultiheadAttention(E, H, add_bias_kv=True, add_zero_attn=True),
        lambda: [rand(5, 3, E)] * 3,
        dict,
    ),
    ("no-bias", lambda nn: nn.MultiheadAttention(E, H, bias=False), lambda: [rand(5, 3, E)] * 3, dict),
    (
        "unbatched",
        lambda nn: nn.MultiheadAttention(E, H),
        lambda: [rand(5, E)] * 3,
        lambda: dict(key_padding_mask=torch.tensor([False, True, False, False, False])),
    ),
    (
        "key-padding-bool",
        lambda nn: nn.MultiheadAttention(E, H, batch_first=True),
        lambda: [rand(3, 5, E)] * 3,
        lambda: dict(key_padding_mask=_bool_mask(3, 5)),
    ),
    (
        "key-padding-float",
        lambda nn: nn.MultiheadAttention(E, H),
        lambda: [rand(5, 3, E)] * 3,
        lambda: dict(key_padding_mask=rand(3, 5)),
    ),
    (
        "attn-mask-2d-bool",
        lambda nn: nn.MultiheadAttention(E, H),
        lambda: [rand(5, 3, E)] * 3,
        lambda: dict(attn_mask=_bool_mask(5, 5)),
    ),
    (
        "attn-mask-3d-float",
        lambda nn: nn.MultiheadAttention(E, H),
        lambda: [rand(5, 3, E), rand(4, 3, E), rand(4, 3, E)],
        lambda: dict(attn_mask=rand(3 * H, 5, 4)),
    ),
    (
        "both-masks-per-head-weights",
        lambda nn: nn.MultiheadAttention(E, H, add_bias_kv=True),
        lambda: [rand(5, 3, E)] * 3,
        lambda: dict(attn_mask=_bool_mask(5, 5), key_padding_mask=_bool_mask(3, 5), average_attn_weights=False),
    ),
    (
        "no-weights-causal",
        lambda nn: nn.MultiheadAttention(E, H),
        lambda: [rand(5, 3, E)] * 3,
        lambda: dict(
            attn_mask=torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64),
            is_causal=True,
            need_weights=False,
        ),
    ),
]


def _to_genesis(value, device):
    return g(value, device) if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("build,inputs,kwargs", [pytest.param(b, i, k, id=n) for n, b, i, k in MHA_CASES])
def test_multihead_attention_matches_torch(device, build, inputs, kwargs):
    tmod, gmod = _pair(build)
    assert module_repr(gmod) == repr(tmod)
    gmod.to(device)
    kw = kwargs()
    gkw = {k: _to_genesis(v, device) for k, v in kw.items()}
    q, k, v = inputs()
    same = q is k and k is v
    result = gmod.load_state_dict(tmod.state_dict())
    assert result == ([], [])
    # Self-attention passes one tensor three times (the packed-projection path); keep that identity.
    tcall = (lambda t: tmod(t, t, t, **kw)) if same else (lambda a, b, c: tmod(a, b, c, **kw))
    gcall = (lambda t: gmod(t, t, t, **gkw)) if same else (lambda a, b, c: gmod(a, b, c, **gkw))
    (_, weights), (_, tweights) = check_forward_backward(tcall, gcall, [q] if same else [q, k, v], device)
    assert (weights is None) == (tweights is None)
    for (_, p), (_, tp) in zip(gmod.named_parameters(), tmod.named_parameters(), strict=True):
        assert_close(p.grad, tp.grad)


def test_multihead_attention_dropout_is_active_in_training_only(device):
    mha = nn.MultiheadAttention(E, H, dropout=0.5).to(device)
    q = genesis.randn(6, 2, E, device=device)
    genesis.manual_seed(0)
    a = to_torch(mha(q, q, q)[1])
    mha.eval()
    b, c = to_torch(mha(q, q, q)[1]), to_torch(mha(q, q, q)[1])
    assert (a == 0).any() and not (b == 0).any() and torch.equal(b, c)


def test_multihead_attention_errors(device):
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError, match="must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    mha = nn.MultiheadAttention(E, H).to(device)
    q = genesis.randn(5, 3, E, device=device)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(q, q, q, is_causal=True)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        mha(q, q, q, attn_mask=genesis.zeros(4, 5, device=device))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 6"):
        mha(genesis.randn(5, 3, 6, device=device), q, q)


def test_multihead_attention_parameter_names_match_torch():
    for kw in [dict(), dict(kdim=3), dict(add_bias_kv=True, bias=False)]:
        assert [n for n, _ in nn.MultiheadAttention(E, H, **kw).named_parameters()] == [
            n for n, _ in torch.nn.MultiheadAttention(E, H, **kw).named_parameters()
        ]


def _causal(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), 1)  # True = not allowed (torch's layer convention)


TRANSFORMER_CASES = [
    ("encoder-post-norm", lambda nn: nn.TransformerEncoderLayer(E, H, 16), lambda: [rand(5, 3, E)], dict),
    (
        "encoder-pre-norm-gelu-batch-first",
        lambda nn: nn.TransformerEncoderLayer(E, H, 16, activation="gelu", norm_first=True, batch_first=True),
        lambda: [rand(3, 5, E)],
        lambda: dict(src_key_padding_mask=_bool_mask(3, 5)),
    ),
    (
        "encoder-callable-activation-mask",
        lambda nn: nn.TransformerEncoderLayer(E, H, 16, activation=nn.GELU(), layer_norm_eps=1e-3, bias=False),
        lambda: [rand(5, 3, E)],
        lambda: dict(src_mask=_causal(5)),
    ),
    (
        "decoder",
        lambda nn: nn.TransformerDecoderLayer(E, H, 16),
        lambda: [rand(5, 3, E), rand(4, 3, E)],
        lambda: dict(tgt_mask=_causal(5), memory_key_padding_mask=_bool_mask(3, 4)),
    ),
    (
        "decoder-pre-norm-batch-first",
        lambda nn: nn.TransformerDecoderLayer(E, H, 16, norm_first=True, batch_first=True, activation="gelu"),
        lambda: [rand(3, 5, E), rand(3, 4, E)],
        dict,
    ),
    (
        "encoder-stack",
        lambda nn: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(E, H, 16), 2, norm=nn.LayerNorm(E), **({"enable_nested_tensor": False})
        ),
        lambda: [rand(5, 3, E)],
        lambda: dict(mask=_causal(5)),
    ),
    (
        "decoder-stack",
        lambda nn: nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, 16), 2),
        lambda: [rand(5, 3, E), rand(4, 3, E)],
        dict,
    ),
]


@pytest.mark.parametrize("build,inputs,kwargs", [pytest.param(b, i, k, id=n) for n, b, i, k in TRANSFORMER_CASES])
def test_transformer_layers_match_torch(device, build, inputs, kwargs):
    tmod, gmod = _pair(build)
    assert module_repr(gmod) == repr(tmod)
    gmod.to(device)
    kw = kwargs()
    gkw = {k: _to_genesis(v, device) for k, v in kw.items()}
    tcall, gcall = (lambda *a: tmod(*a, **kw)), (lambda *a: gmod(*a, **gkw))
    gmod.load_state_dict(tmod.state_dict())
    check_forward_backward(tcall, gcall, inputs(), device)
    for (name, p), (tname, tp) in zip(gmod.named_parameters(), tmod.named_parameters(), strict=True):
        assert name == tname
        assert_close(p.grad, tp.grad)


def test_transformer_stack_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(E, H, 16)
    stack = nn.TransformerEncoder(layer, 3)
    weights = [m.linear1.weight for m in stack.layers]
    assert len({id(w) for w in weights}) == 3 and all(w is not layer.linear1.weight for w in weights)
    assert len(list(stack.parameters())) == 3 * len(list(layer.parameters()))


def test_transformer_bad_activation():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(E, H, activation="tanh")


# ---------------------------------------------------------------- scaled_dot_product_attention
SDPA_CASES = [
    ("plain", lambda: [rand(2, 3, 5, 4), rand(2, 3, 6, 4), rand(2, 3, 6, 4)], dict),
    ("3d-scale", lambda: [rand(3, 5, 4), rand(3, 6, 4), rand(3, 6, 2)], lambda: dict(scale=0.3)),
    (
        "bool-mask",
        lambda: [rand(2, 3, 5, 4), rand(2, 3, 6, 4), rand(2, 3, 6, 4)],
        lambda: dict(attn_mask=torch.rand(5, 6) < 0.6),
    ),
    (
        "fully-masked-row",
        lambda: [rand(1, 2, 3, 4), rand(1, 2, 3, 4), rand(1, 2, 3, 4)],
        lambda: dict(attn_mask=torch.tensor([[True, True, False], [False, False, False], [True, False, True]])),
    ),
    (
        "float-mask",
        lambda: [rand(2, 3, 5, 4), rand(2, 3, 6, 4), rand(2, 3, 6, 4)],
        lambda: dict(attn_mask=rand(2, 1, 5, 6)),
    ),
    ("causal-square", lambda: [rand(2, 3, 5, 4)] * 3, lambda: dict(is_causal=True)),
    (
        "causal-rectangular",
        lambda: [rand(2, 3, 6, 4), rand(2, 3, 4, 4), rand(2, 3, 4, 4)],
        lambda: dict(is_causal=True),
    ),
    ("gqa", lambda: [rand(2, 4, 5, 4), rand(2, 2, 6, 4), rand(2, 2, 6, 4)], lambda: dict(enable_gqa=True)),
]


@pytest.mark.parametrize("inputs,kwargs", [pytest.param(i, k, id=n) for n, i, k in SDPA_CASES])
def test_scaled_dot_product_attention_matches_torch(device, inputs, kwargs):
    kw = kwargs()
    gkw = {k: _to_genesis(v, device) for k, v in kw.items()}
    check_forward_backward(
        lambda *a: torch.nn.functional.scaled_dot_product_attention(*a, **kw),
        lambda *a: F.scaled_dot_product_attention(*a, **gkw),
        inputs(),
        device,
    )


def test_scaled_dot_product_attention_dropout_and_errors(device):
    genesis.manual_seed(0)
    q = genesis.zeros(1, 1, 64, 8, device=device)  # uniform attention: every weight 1 / 64
    ones = genesis.ones(1, 1, 64, 8, device=device)
    # Each output row is its kept weights' sum scaled by 1 / (1 - p): 1 on average (std 0.016 over 4,096
    # draws), 0.125 apart from row to row.
    out = to_torch(F.scaled_dot_product_attention(q, q, ones, dropout_p=0.5))
    assert abs(out.mean().item() - 1.0) < 0.1 and 0.06 < out[0, 0, :, 0].std() < 0.25
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=genesis.ones(64, 64, device=device), is_causal=True)
