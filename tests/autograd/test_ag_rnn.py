"""The rnn family's Functions (functions/rnn.py) against torch in float64: the fused LSTM / GRU cells
(torch's _thnn_fused_*_cell math, composed here in torch) and the whole-layer node ``rnn_layer`` (against
torch's nn.RNN / LSTM / GRU of one layer, padded and packed, both directions): values and the gradients
of every input, including the double backward of the cells."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ag_helpers import to_genesis, values

import genesis_autograd as ag

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def close(got, want: torch.Tensor, tol: float = 1e-9) -> None:
    g = got.detach().cpu().numpy() if hasattr(got, "detach") else np.asarray(got)
    np.testing.assert_allclose(g, want.detach().numpy(), rtol=tol, atol=tol)


def pairs(shapes, device):
    ts = [values(s).requires_grad_() for s in shapes]
    return ts, [to_genesis(t, device, requires_grad=True) for t in ts]


def lstm_torch(xg, hg, cx, bi, bh):
    gates = xg + hg + bi + bh
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def gru_torch(xg, hg, hx, bi, bh):
    xr, xz, xn = (xg + bi).chunk(3, 1)
    hr, hz, hn = (hg + bh).chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * hx


def test_fused_lstm_cell(device):
    n, H = 3, 4
    ts, gs = pairs([(n, 4 * H), (n, 4 * H), (n, H), (4 * H,), (4 * H,)], device)
    hy, cy = lstm_torch(*ts)
    ghy, gcy = ag.fused_lstm_cell(*gs)
    close(ghy, hy)
    close(gcy, cy)
    w1, w2 = values((n, H)), values((n, H))
    (hy * w1).sum().add((cy * w2).sum()).backward()
    ((ghy * to_genesis(w1, device)).sum() + (gcy * to_genesis(w2, device)).sum()).backward()
    for t, g in zip(ts, gs):
        close(g.grad, t.grad)


def test_fused_lstm_cell_one_output_used(device):
    """Only hy feeds the loss: cy's gradient arrives as None (no zeros materialised) and is taken as 0."""
    ts, gs = pairs([(2, 8), (2, 8), (2, 2), (8,), (8,)], device)
    lstm_torch(*ts)[0].sum().backward()
    ag.fused_lstm_cell(*gs)[0].sum().backward()
    for t, g in zip(ts, gs):
        close(g.grad, t.grad)


def test_fused_gru_cell(device):
    n, H = 3, 5
    ts, gs = pairs([(n, 3 * H), (n, 3 * H), (n, H), (3 * H,), (3 * H,)], device)
    hy = gru_torch(*ts)
    ghy = ag.fused_gru_cell(*gs)
    close(ghy, hy)
    w = values((n, H))
    (hy * w).sum().backward()
    (ghy * to_genesis(w, device)).sum().backward()
    for t, g in zip(ts, gs):
        close(g.grad, t.grad)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_fused_cells_double_backward(device, cell):
    """create_graph: the backward is composed of Tensor ops, so second derivatives match torch's."""
    G, H = (4, 3) if cell == "lstm" else (3, 3)
    ts, gs = pairs([(2, G * H), (2, G * H), (2, H), (G * H,), (G * H,)], device)
    if cell == "lstm":
        out_t, out_g = lstm_torch(*ts)[0], ag.fused_lstm_cell(*gs)[0]
    else:
        out_t, out_g = gru_torch(*ts), ag.fused_gru_cell(*gs)
    (dt,) = torch.autograd.grad(out_t.pow(2).sum(), ts[0], create_graph=True)
    (dg,) = ag.grad(out_g.pow(2).sum(), gs[0], create_graph=True)
    close(dg, dt)
    dt.sum().backward()
    dg.sum().backward()
    for t, g in zip(ts[1:], gs[1:]):
        close(g.grad, t.grad, 1e-8)


def _torch_layer(mode, I, H, P, bias):
    kw = {"bias": bias}
    if mode.startswith("rnn"):
        return torch.nn.RNN(I, H, nonlinearity=mode[4:], **kw).double()
    if mode == "gru":
        return torch.nn.GRU(I, H, **kw).double()
    return torch.nn.LSTM(I, H, proj_size=P, **kw).double()


@pytest.mark.parametrize("mode", list(GATES))
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("lengths", [None, (4, 2, 2, 1)], ids=["padded", "packed"])
def test_rnn_layer_matches_torch(device, mode, reverse, lengths):
    T, B, I, H = 4, 4, 3, 5
    P = 2 if (mode == "lstm" and lengths is not None) else 0  # a projection on one of the LSTM cases
    layer = _torch_layer(mode, I, H, P, bias=True)
    x = values((T, B, I))
    if lengths is None:
        batch_sizes, x_rows = [B] * T, x.reshape(T * B, I)
    else:
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths))
        batch_sizes, x_rows = packed.batch_sizes.tolist(), packed.data
    Ph = P or H
    h0, c0 = values((B, Ph)), values((B, H))
    x_rows = x_rows.clone().requires_grad_()
    h0.requires_grad_()
    c0.requires_grad_()
    # torch: the reverse direction is the second direction of a bidirectional layer with equal weights
    if reverse:
        layer = type(layer)(I, H, bidirectional=True, **({"nonlinearity": mode[4:]} if mode.startswith("rnn") else {}),
                            **({"proj_size": P} if mode == "lstm" else {})).double()  # fmt: skip
    names = [n for n, _ in layer.named_parameters() if n.endswith("_reverse") == reverse]
    params = [getattr(layer, n) for n in names]
    hx_dirs = 2 if reverse else 1
    h_init = torch.stack([h0] * hx_dirs)
    c_init = torch.stack([c0] * hx_dirs)
    inp = torch.nn.utils.rnn.PackedSequence(x_rows, torch.tensor(batch_sizes)) if lengths else x_rows.view(T, B, I)
    state = (h_init, c_init) if mode == "lstm" else h_init
    out, hn = layer(inp, state)
    out = out.data if lengths else out.reshape(T * B, -1)
    col = slice(out.shape[1] - Ph, out.shape[1]) if reverse else slice(0, Ph)
    out = out[:, col]
    hn_last = (hn[0] if mode == "lstm" else hn)[-1]
    cn_last = hn[1][-1] if mode == "lstm" else None

    gx, gh0, gc0 = (to_genesis(t, device, requires_grad=True) for t in (x_rows, h0, c0))
    gp = {n.split("_l0")[0]: to_genesis(p, device, requires_grad=True) for n, p in zip(names, params)}
    res = ag.rnn_layer(mode, gx, batch_sizes, gh0, gc0 if mode == "lstm" else None, gp["weight_ih"], gp["weight_hh"],
                       gp.get("bias_ih"), gp.get("bias_hh"), gp.get("weight_hr"), reverse=reverse)  # fmt: skip
    close(res[0], out)
    close(res[1], hn_last)
    if mode == "lstm":
        close(res[2], cn_last)

    wo, wh, wc = values(tuple(out.shape)), values((B, Ph)), values((B, H))
    loss = (out * wo).sum() + (hn_last * wh).sum() + ((cn_last * wc).sum() if mode == "lstm" else 0)
    loss.backward()
    gloss = (res[0] * to_genesis(wo, device)).sum() + (res[1] * to_genesis(wh, device)).sum()
    if mode == "lstm":
        gloss = gloss + (res[2] * to_genesis(wc, device)).sum()
    gloss.backward()
    close(gx.grad, x_rows.grad)
    close(gh0.grad, h0.grad)
    if mode == "lstm":
        close(gc0.grad, c0.grad)
    for n, p in zip(names, params):
        close(gp[n.split("_l0")[0]].grad, p.grad)


def test_rnn_layer_refuses_double_backward(device):
    _, gs = pairs([(6, 2), (2, 3), (3, 2), (3, 3)], device)
    out, _ = ag.rnn_layer("rnn_tanh", gs[0], [2, 2, 2], gs[1], None, gs[2], gs[3])
    with pytest.raises(RuntimeError, match="double backward through a fused recurrent layer"):
        ag.grad(out.sum(), gs[2], create_graph=True)


def test_rnn_layer_unknown_mode(device):
    _, gs = pairs([(2, 2), (1, 3), (3, 2), (3, 3)], device)
    with pytest.raises(ValueError, match="unknown recurrent mode 'elman'"):
        ag.rnn_layer("elman", gs[0], [1, 1], gs[1], None, gs[2], gs[3])
