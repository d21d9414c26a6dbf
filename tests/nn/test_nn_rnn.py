"""nn.RNN / LSTM / GRU, the cells and nn.utils.rnn against torch: outputs, final states, the gradients of
inputs, initial states and every parameter (float64; one float32 case), every constructor option, packed
sequences, state dicts both ways, reprs and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_helpers import assert_close, check_module, g, to_torch

import genesis
import genesis.nn as gnn
from genesis.nn.utils import rnn as grnn

T, B, I, H = 4, 3, 5, 6


def _flat(out) -> tuple:
    """(output, h) / (output, (h, c)) / a PackedSequence output as a flat tuple of tensors."""
    o, state = out
    o = o.data if hasattr(o, "batch_sizes") else o
    return (o, *state) if isinstance(state, tuple) else (o, state)


def _pair(name: str, *args, device="cpu", **kw):
    tmod = getattr(torch.nn, name)(*args, **kw).double()
    gmod = getattr(gnn, name)(*args, **kw, dtype=genesis.float64, device=device)
    return tmod, gmod


OPTIONS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("RNN", {"bias": False, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 4, "batch_first": True}),
    ("LSTM", {"proj_size": 2, "bidirectional": True, "bias": False}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"bias": False}),
]


@pytest.mark.parametrize("name,kw", OPTIONS, ids=[f"{n}-{'-'.join(k) or 'default'}" for n, k in OPTIONS])
def test_module_matches_torch_with_initial_states(device, name, kw):
    tmod, gmod = _pair(name, I, H, device=device, **kw)
    dirs = 2 if kw.get("bidirectional") else 1
    L, P = kw.get("num_layers", 1) * dirs, kw.get("proj_size") or H
    x = torch.randn((B, T, I) if kw.get("batch_first") else (T, B, I), dtype=torch.float64)
    h0, c0 = torch.randn(L, B, P, dtype=torch.float64), torch.randn(L, B, H, dtype=torch.float64)
    if name == "LSTM":
        inputs, fwd = [x, h0, c0], lambda m: lambda x, h, c: _flat(m(x, (h, c)))
    else:
        inputs, fwd = [x, h0], lambda m: lambda x, h: _flat(m(x, h))
    result = gmod.load_state_dict(tmod.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    check_module(_Wrap(tmod, fwd), _GWrap(gmod, fwd), inputs, device)


class _Wrap(torch.nn.Module):
    """A torch module whose forward flattens the recurrent module's outputs (for check_module)."""

    def __init__(self, mod, fwd):
        super().__init__()
        self.mod, self.fn = mod, fwd(mod)

    def forward(self, *args):
        return self.fn(*args)


class _GWrap(gnn.Module):
    def __init__(self, mod, fwd):
        super().__init__()
        self.mod, self.fn = mod, fwd(mod)

    def forward(self, *args):
        return self.fn(*args)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_zero_initial_state_and_unbatched_input(device, name):
    tmod, gmod = _pair(name, I, H, num_layers=2, device=device)
    gmod.load_state_dict(tmod.state_dict())
    x = torch.randn(T, I, dtype=torch.float64)
    for t_out, g_out in zip(_flat(tmod(x)), _flat(gmod(g(x, device)))):
        assert_close(g_out, t_out)
    # unbatched with a given state: hx of 2 dims
    L = 2
    h = torch.randn(L, H, dtype=torch.float64)
    state = (h, torch.randn(L, H, dtype=torch.float64)) if name == "LSTM" else h
    gstate = tuple(g(s, device) for s in state) if name == "LSTM" else g(state, device)
    for t_out, g_out in zip(_flat(tmod(x, state)), _flat(gmod(g(x, device), gstate))):
        assert_close(g_out, t_out)


def test_float32_matches_torch(device):
    tmod, gmod = torch.nn.LSTM(I, H, 2), gnn.LSTM(I, H, 2, device=device)
    gmod.load_state_dict(tmod.state_dict())
    x = torch.randn(T, B, I)
    for t_out, g_out in zip(_flat(tmod(x)), _flat(gmod(g(x, device)))):
        assert_close(g_out, t_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_match_torch(device, name, enforce_sorted):
    kw = {"bidirectional": True, "num_layers": 2} | ({"proj_size": 3} if name == "LSTM" else {})
    tmod, gmod = _pair(name, I, H, device=device, **kw)
    gmod.load_state_dict(tmod.state_dict())
    lengths = [4, 3, 1] if enforce_sorted else [2, 4, 1]
    x = torch.randn(T, B, I, dtype=torch.float64, requires_grad=True)
    gx = g(x, device, requires_grad=True)
    tp = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    gp = grnn.pack_padded_sequence(gx, lengths, enforce_sorted=enforce_sorted)
    assert gp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    t_out, g_out = tmod(tp), gmod(gp)
    assert isinstance(g_out[0], grnn.PackedSequence)
    t_flat, g_flat = _flat(t_out), _flat(g_out)
    for a, b in zip(g_flat, t_flat):
        assert_close(a, b)  # final states: each sequence's own last step, in the caller's order
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_out[0], batch_first=True, padding_value=-1.0)
    g_pad, g_len = grnn.pad_packed_sequence(g_out[0], batch_first=True, padding_value=-1.0)
    assert_close(g_pad, t_pad)
    assert g_len.tolist() == t_len.tolist()
    w = [torch.randn(t.shape, dtype=torch.float64) for t in (t_pad, *t_flat[1:])]
    sum((t * wi).sum() for t, wi in zip((t_pad, *t_flat[1:]), w)).backward()
    sum((a * g(wi, device)).sum() for a, wi in zip((g_pad, *g_flat[1:]), w)).backward()
    assert_close(gx.grad, x.grad)
    tparams = dict(tmod.named_parameters())
    for n, p in gmod.named_parameters():
        assert_close(p.grad, tparams[n].grad)


def test_dropout_between_layers_only_while_training(device):
    tmod, gmod = _pair("GRU", I, H, num_layers=2, dropout=1.0, device=device)
    gmod.load_state_dict(tmod.state_dict())
    x = torch.randn(T, B, I, dtype=torch.float64)
    # p = 1 zeroes the second layer's whole input (deterministic, as torch)
    for a, b in zip(_flat(gmod(g(x, device))), _flat(tmod(x))):
        assert_close(a, b)
    tmod.eval()
    gmod.eval()
    for a, b in zip(_flat(gmod(g(x, device))), _flat(tmod(x))):
        assert_close(a, b)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_torch(device, name, bias):
    kw = {"nonlinearity": "relu"} if (name == "RNNCell" and not bias) else {}
    tmod, gmod = _pair(name, I, H, bias=bias, device=device, **kw)
    x, h = torch.randn(B, I, dtype=torch.float64), torch.randn(B, H, dtype=torch.float64)
    if name == "LSTMCell":
        c = torch.randn(B, H, dtype=torch.float64)
        check_module(_Wrap(tmod, lambda m: lambda x, h, c: m(x, (h, c))),
                     _GWrap(gmod, lambda m: lambda x, h, c: m(x, (h, c))), [x, h, c], device)  # fmt: skip
    else:
        check_module(tmod, gmod, [x, h], device)
    # unbatched, no state
    out_t, out_g = tmod(x[0]), gmod(g(x[0], device))
    for a, b in zip(out_g if isinstance(out_g, tuple) else (out_g,), out_t if isinstance(out_t, tuple) else (out_t,)):
        assert_close(a, b)


def test_parameters_state_dict_and_repr_match_torch():
    for name, kw in OPTIONS:
        tmod = getattr(torch.nn, name)(I, H, **kw)
        gmod = getattr(gnn, name)(I, H, **kw)
        assert [(n, tuple(p.shape)) for n, p in gmod.named_parameters()] == [
            (n, tuple(p.shape)) for n, p in tmod.named_parameters()
        ]
        assert repr(gmod) == repr(tmod)
        assert [[tuple(p.shape) for p in ws] for ws in gmod.all_weights] == [
            [tuple(p.shape) for p in ws] for ws in tmod.all_weights
        ]
        bound = 1 / np.sqrt(H)
        assert all(np.abs(to_torch(p).numpy()).max() <= bound for p in gmod.parameters())
        # genesis -> torch through numpy
        tmod.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in gmod.state_dict().items()})
        for (_, tp), (_, gp) in zip(tmod.named_parameters(), gmod.named_parameters()):
            assert torch.equal(tp.detach(), to_torch(gp))
        gmod.flatten_parameters()
    for name in ("RNNCell", "LSTMCell", "GRUCell"):
        assert repr(getattr(gnn, name)(I, H, bias=False)) == repr(getattr(torch.nn, name)(I, H, bias=False))
    assert repr(gnn.RNNCell(I, H, nonlinearity="relu")) == repr(torch.nn.RNNCell(I, H, nonlinearity="relu"))


def test_constructor_errors_match_torch():
    cases = [
        (ValueError, "dropout should be a number in range", ("LSTM", (I, H), {"dropout": 1.5})),
        (TypeError, "bias should be of type bool", ("GRU", (I, H), {"bias": 1})),
        (ValueError, "hidden_size must be greater than zero", ("RNN", (I, 0), {})),
        (ValueError, "proj_size has to be smaller than hidden_size", ("LSTM", (I, H), {"proj_size": H})),
        (ValueError, "proj_size argument is only supported for LSTM", ("GRU", (I, H), {"proj_size": 2})),
        (ValueError, "Unknown nonlinearity 'gelu'", ("RNN", (I, H), {"nonlinearity": "gelu"})),
    ]
    for cls, msg, (name, args, kw) in cases:
        with pytest.raises(cls, match=msg):
            getattr(torch.nn, name)(*args, **kw)
        with pytest.raises(cls, match=msg):
            getattr(gnn, name)(*args, **kw)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        gnn.LSTM(I, H, dropout=0.5)


def test_forward_errors_match_torch(device):
    gl, tl = gnn.LSTM(I, H, device=device), torch.nn.LSTM(I, H)
    gr, tr = gnn.GRU(I, H, device=device), torch.nn.GRU(I, H)
    x = torch.randn(T, B, I)
    bad = [
        (ValueError, "Expected input to be 2D or 3D, got 4D", lambda m, x: m(x[None])),
        (RuntimeError, "input.size\\(-1\\) must be equal to input_size. Expected 5, got 4", lambda m, x: m(x[..., :4])),
        (RuntimeError, "Expected hidden\\[0\\] size \\(1, 3, 6\\), got \\[1, 2, 6\\]",
         lambda m, x: m(x, (x.new_zeros(1, 2, H), x.new_zeros(1, B, H)))),
        (RuntimeError, "hx and cx should also be 3-D but got \\(2-D, 3-D\\)",
         lambda m, x: m(x, (x.new_zeros(B, H), x.new_zeros(1, B, H)))),
    ]  # fmt: skip
    for cls, msg, call in bad:
        with pytest.raises(cls, match=msg):
            call(tl, x)
        with pytest.raises(cls, match=msg):
            call(gl, g(x, device))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 3, 6\\), got \\[1, 3, 5\\]"):
        tr(x, x.new_zeros(1, B, 5))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 3, 6\\), got \\[1, 3, 5\\]"):
        gr(g(x, device), genesis.zeros(1, B, 5, device=device))
    with pytest.raises(ValueError, match=r"RNN input dtype .* does not match weight dtype"):
        gl(g(x.double(), device))
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1D or 2D, got 3D instead"):
        gnn.LSTMCell(I, H, device=device)(g(x, device))


def test_pad_and_pack_utilities_match_torch(device):
    seqs = [torch.randn(n, 2, dtype=torch.float64) for n in (3, 5, 1)]
    gseqs = [g(s, device, requires_grad=True) for s in seqs]
    for batch_first in (False, True):
        for side in ("right", "left"):
            t = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=batch_first, padding_value=7.0, padding_side=side)
            assert_close(grnn.pad_sequence(gseqs, batch_first, 7.0, side), t)
    tp = torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    gp = grnn.pack_sequence(gseqs, enforce_sorted=False)
    assert_close(gp.data, tp.data)
    assert gp.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert gp.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    t_pad, _ = torch.nn.utils.rnn.pad_packed_sequence(tp, total_length=6)
    g_pad, g_len = grnn.pad_packed_sequence(gp, total_length=6)
    assert_close(g_pad, t_pad)
    assert g_len.tolist() == [3, 5, 1]
    for a, b in zip(grnn.unpack_sequence(gp), torch.nn.utils.rnn.unpack_sequence(tp)):
        assert_close(a, b)
    for a, b in zip(grnn.unpad_sequence(g_pad, g_len), seqs):
        assert_close(a, b)
    sum((s * (k + 1)).sum() for k, s in enumerate(grnn.unpack_sequence(gp))).backward()
    for k, s in enumerate(gseqs):
        assert_close(s.grad, torch.full(seqs[k].shape, float(k + 1), dtype=torch.float64))
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        grnn.pack_sequence(gseqs)
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        grnn.pad_packed_sequence(gp, total_length=2)
    with pytest.raises(ValueError, match="Expected padding_side to be one of left or right"):
        grnn.pad_sequence(gseqs, padding_side="middle")


def test_top_level_functions_take_flat_weights(device):
    tmod = torch.nn.LSTM(I, H, 2, bidirectional=True).double()
    params = [p.detach() for p in tmod._flat_weights]
    x, h0, c0 = torch.randn(T, B, I).double(), torch.randn(4, B, H).double(), torch.randn(4, B, H).double()
    want = torch.lstm(x, (h0, c0), params, True, 2, 0.0, False, True, False)
    got = genesis.lstm(g(x, device), (g(h0, device), g(c0, device)), [g(p, device) for p in params],
                       True, 2, 0.0, False, True, False)  # fmt: skip
    for a, b in zip(got, want):
        assert_close(a, b)
    w_ih, w_hh, b_ih, b_hh = (torch.randn(s).double() for s in ((3 * H, I), (3 * H, H), (3 * H,), (3 * H,)))
    h = torch.randn(B, H).double()
    gw = [g(t, device) for t in (w_ih, w_hh, b_ih, b_hh)]
    assert_close(genesis.gru_cell(g(x[0], device), g(h, device), *gw), torch.gru_cell(x[0], h, w_ih, w_hh, b_ih, b_hh))
