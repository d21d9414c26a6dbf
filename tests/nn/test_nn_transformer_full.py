"""nn.Transformer (the encoder-decoder) against torch's with torch's weights (eval, dropout 0, float64):
outputs, input and parameter gradients with every mask, batch_first, norm_first, activations, bias,
custom encoder / decoder; generate_square_subsequent_mask; construction and torch's errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, check_module, g, module_repr

import genesis
import genesis.nn as nn

D_MODEL, NHEAD, FF = 8, 2, 12

# torch warns that its nested-tensor fast path is off for norm_first encoders: not about genesis.
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def _pair(**kwargs):
    kwargs = dict(d_model=D_MODEL, nhead=NHEAD, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=FF,
                  dropout=0.0, **kwargs)  # fmt: skip
    tmod = torch.nn.Transformer(**kwargs, dtype=torch.float64).eval()
    gmod = nn.Transformer(**kwargs, dtype=genesis.float64).eval()
    return tmod, gmod


def _wrap(module, device, **masks):
    """module(src, tgt, **masks) with the masks converted for genesis (torch masks kept for torch)."""
    if isinstance(module, torch.nn.Module):
        return lambda src, tgt: module(src, tgt, **masks)
    gmasks = {k: g(v, device) if isinstance(v, torch.Tensor) else v for k, v in masks.items()}
    return lambda src, tgt: module(src, tgt, **gmasks)


class _Call(torch.nn.Module):
    """A module whose forward is one of the wrappers, keeping the wrapped module's parameters."""

    def __init__(self, inner, fn):
        super().__init__()
        self.inner, self.fn = inner, fn

    def forward(self, *args):
        return self.fn(*args)


def _check(tmod, gmod, device, src, tgt, **masks):
    gmod.to(device)
    result = gmod.load_state_dict(tmod.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    tcall = _wrap(tmod, device, **masks)
    gcall = _wrap(gmod, device, **masks)
    gwrapped = nn.Module()
    gwrapped.inner = gmod
    gwrapped.forward = gcall  # instance attribute: Module.__call__ finds it
    check_module(_Call(tmod, tcall), gwrapped, [src, tgt], device)


@pytest.mark.parametrize(
    "kwargs",
    [dict(), dict(norm_first=True), dict(activation="gelu"), dict(bias=False), dict(activation=torch.tanh)],
    ids=["post-norm", "norm-first", "gelu", "no-bias", "callable"],
)
def test_transformer_matches_torch(device, kwargs):
    gkwargs = dict(kwargs)
    if "activation" in kwargs and callable(kwargs["activation"]):
        gkwargs["activation"] = genesis.tanh
    tmod, _ = _pair(**kwargs)
    _, gmod = _pair(**gkwargs)
    assert module_repr(gmod) == repr(tmod) or callable(kwargs.get("activation"))
    _check(
        tmod,
        gmod,
        device,
        torch.randn(5, 3, D_MODEL, dtype=torch.float64),
        torch.randn(4, 3, D_MODEL, dtype=torch.float64),
    )


def test_transformer_with_every_mask_matches_torch(device):
    tmod, gmod = _pair(batch_first=True)
    src, tgt = torch.randn(2, 5, D_MODEL, dtype=torch.float64), torch.randn(2, 4, D_MODEL, dtype=torch.float64)
    src_kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
    tgt_kpm = torch.tensor([[False] * 4, [False, False, True, True]])
    masks = dict(
        src_mask=torch.rand(5, 5) < 0.2,
        tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64),
        memory_mask=torch.tensor([[False, True, False, False, False]] * 4),
        src_key_padding_mask=src_kpm,
        tgt_key_padding_mask=tgt_kpm,
        memory_key_padding_mask=src_kpm,
    )
    masks["src_mask"].fill_diagonal_(False)
    _check(tmod, gmod, device, src, tgt, **masks)


def test_transformer_unbatched_matches_torch(device):
    tmod, gmod = _pair()
    _check(
        tmod, gmod, device, torch.randn(5, D_MODEL, dtype=torch.float64), torch.randn(3, D_MODEL, dtype=torch.float64)
    )


def test_custom_encoder_and_decoder(device):
    tenc = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, 0.0, dtype=torch.float64), 1
    )
    tdec = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, 0.0, dtype=torch.float64), 1
    )
    genc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, 0.0, dtype=genesis.float64), 1)
    gdec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, 0.0, dtype=genesis.float64), 1)
    tmod = torch.nn.Transformer(D_MODEL, NHEAD, custom_encoder=tenc, custom_decoder=tdec).eval()
    gmod = nn.Transformer(D_MODEL, NHEAD, custom_encoder=genc, custom_decoder=gdec).eval()
    assert gmod.encoder is genc and gmod.decoder is gdec
    _check(
        tmod,
        gmod,
        device,
        torch.randn(5, 2, D_MODEL, dtype=torch.float64),
        torch.randn(4, 2, D_MODEL, dtype=torch.float64),
    )


def test_generate_square_subsequent_mask(device):
    got = nn.Transformer.generate_square_subsequent_mask(5, device=device)
    assert got.device.type == device
    assert_close(got, torch.nn.Transformer.generate_square_subsequent_mask(5))
    assert_close(
        nn.Transformer.generate_square_subsequent_mask(3, dtype=genesis.float64),
        torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64),
    )


def test_parameters_are_xavier_initialised_like_torch():
    tmod, gmod = _pair()
    assert [n for n, _ in gmod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    bound = (6 / (D_MODEL + FF)) ** 0.5  # linear1's weight: xavier-uniform over fan_in + fan_out
    w = gmod.encoder.layers[0].linear1.weight
    assert w.abs().max().item() <= bound and w.std().item() > bound / 4


def test_errors_match_torch():
    tmod, gmod = _pair()
    for src, tgt, match in [
        ((5, 3, D_MODEL), (4, 2, D_MODEL), "the batch number of src and tgt must be equal"),
        ((5, 3, D_MODEL), (4, 3, D_MODEL + 1), "the feature number of src and tgt must be equal to d_model"),
    ]:
        with pytest.raises(RuntimeError, match=match):
            tmod(torch.randn(*src, dtype=torch.float64), torch.randn(*tgt, dtype=torch.float64))
        with pytest.raises(RuntimeError, match=match):
            gmod(genesis.randn(*src, dtype=genesis.float64), genesis.randn(*tgt, dtype=genesis.float64))
