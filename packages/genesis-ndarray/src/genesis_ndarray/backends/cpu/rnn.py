"""Recurrent nets on the CPU with torch's math: the fused cells and the whole-sequence loops.

The same ops, arguments and layouts as backends/cuda/rnn.py (which documents them): the cells compute
in float32 for 16-bit operands (float64 for float64) and round once, as the fused kernels do.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .common import reg

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _up(t: torch.Tensor | None) -> torch.Tensor | None:
    """The compute dtype of the fused kernels: float32 for 16-bit floats."""
    if t is None or t.dtype not in (torch.float16, torch.bfloat16):
        return t
    return t.float()


def _add(*ts: torch.Tensor | None) -> torch.Tensor:
    present = [t.float() if t.dtype in (torch.float16, torch.bfloat16) else t for t in ts if t is not None]
    out = present[0]
    for t in present[1:]:
        out = out + t
    return out


# ------------------------------------------------------------------ cell math (compute dtype in, compute dtype out)
def _lstm(gates: torch.Tensor, cx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def _lstm_back(dh: torch.Tensor | None, dcy: torch.Tensor | None, cx, cy, ws) -> tuple[torch.Tensor, torch.Tensor]:
    i, f, g, o = ws.chunk(4, 1)
    tc = cy.tanh()
    dh = torch.zeros_like(cy) if dh is None else dh
    dc = dh * o * (1 - tc * tc)
    if dcy is not None:
        dc = dc + dcy
    dgates = torch.cat([dc * g * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)], 1)
    return dgates, dc * f


def _gru(xg: torch.Tensor, hg: torch.Tensor, hx: torch.Tensor, bi, bh) -> tuple[torch.Tensor, torch.Tensor]:
    xg = xg if bi is None else xg + bi
    hg = hg if bh is None else hg + bh
    xr, xz, xn = xg.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hn], 1)


def _gru_back(dh: torch.Tensor, hx: torch.Tensor, ws: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r, z, n, hn = ws.chunk(4, 1)
    dz = dh * (hx - n) * z * (1 - z)
    dn = dh * (1 - z) * (1 - n * n)
    dr = dn * hn * r * (1 - r)
    return torch.cat([dr, dz, dn], 1), torch.cat([dr, dz, dn * r], 1), dh * z


def _act(pre: torch.Tensor, mode: str) -> torch.Tensor:
    return pre.tanh() if mode == "rnn_tanh" else pre.relu()


def _act_back(dh: torch.Tensor, hy: torch.Tensor, mode: str) -> torch.Tensor:
    return dh * (1 - hy * hy) if mode == "rnn_tanh" else torch.where(hy > 0, dh, torch.zeros_like(dh))


# ------------------------------------------------------------------ fused cells
@reg("lstm_cell")
def lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias):
    hy, cy, ws = _lstm(_add(input_gates, hidden_gates, input_bias, hidden_bias), _up(cx))
    dt = cx.dtype
    return hy.to(dt), cy.to(dt), ws.to(dt)


@reg("lstm_cell_backward")
def lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace):
    dgates, dcx = _lstm_back(_up(grad_hy), _up(grad_cy), _up(cx), _up(cy), _up(workspace))
    return dgates.to(cx.dtype), dcx.to(cx.dtype)


@reg("gru_cell")
def gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias):
    hy, ws = _gru(_up(input_gates), _up(hidden_gates), _up(hx), _up(input_bias), _up(hidden_bias))
    return hy.to(hx.dtype), ws.to(hx.dtype)


@reg("gru_cell_backward")
def gru_cell_backward(grad_hy, hx, workspace):
    return tuple(t.to(hx.dtype) for t in _gru_back(_up(grad_hy), _up(hx), _up(workspace)))


# ------------------------------------------------------------------ whole sequences
def _steps(batch_sizes: Sequence[int], reverse: bool) -> list[tuple[int, int, int, int]]:
    """(rows, row offset, source slot, destination slot) of each step, in the order they run."""
    out, off = [], 0
    for t, n in enumerate(batch_sizes):
        out.append((n, off, t + 1 if reverse else t, t if reverse else t + 1))
        off += n
    return out[::-1] if reverse else out


def _slots(T: int, init: torch.Tensor, reverse: bool, ragged: bool) -> torch.Tensor:
    s = torch.empty((T + 1, *init.shape), dtype=init.dtype)
    if reverse and ragged:
        s.copy_(init.expand_as(s))
    else:
        s[T if reverse else 0] = init
    return s


@reg("rnn_sequence")
def rnn_sequence(mode, xg, batch_sizes, h0, c0, w_hh, b_hh, w_hr, reverse):
    T, B = len(batch_sizes), h0.shape[0]
    H = w_hh.shape[0] // GATES[mode]
    ragged = any(n != B for n in batch_sizes)
    hs = _slots(T, h0, reverse, ragged)
    cs = _slots(T, c0, reverse, ragged) if c0 is not None else None
    N, dt = xg.shape[0], xg.dtype
    ws = torch.empty((N, 4 * H), dtype=dt) if mode in ("lstm", "gru") else None
    hraw = torch.empty((N, H), dtype=dt) if w_hr is not None else None
    for n, off, src, dst in _steps(batch_sizes, reverse):
        hg = hs[src, :n] @ w_hh.t()
        x = xg[off : off + n]
        if mode == "lstm":
            assert cs is not None and ws is not None
            h, c, w = _lstm(_add(x, hg, b_hh), _up(cs[src, :n]))
            cs[dst, :n], ws[off : off + n] = c, w
            if hraw is not None:
                hraw[off : off + n] = h
                h = hraw[off : off + n] @ w_hr.t()
        elif mode == "gru":
            assert ws is not None
            h, w = _gru(_up(x), _up(hg), _up(hs[src, :n]), None, _up(b_hh))
            ws[off : off + n] = w
        else:
            h = _act(_add(x, hg, b_hh), mode)
        hs[dst, :n] = h
    return hs, cs, ws, hraw


@reg("rnn_sequence_backward")
def rnn_sequence_backward(mode, grad_out, grad_hn, grad_cn, hs, cs, ws, hraw, w_hh, w_hr, batch_sizes, reverse):
    _, B, P = hs.shape
    G = GATES[mode]
    H = w_hh.shape[0] // G
    N, dt = sum(batch_sizes), hs.dtype
    dh = torch.zeros((B, P), dtype=dt) if grad_hn is None else grad_hn.clone()
    dc = (torch.zeros((B, H), dtype=dt) if grad_cn is None else grad_cn.clone()) if mode == "lstm" else None
    dhz = torch.zeros((B, H), dtype=dt) if mode == "gru" else None
    dxg = torch.empty((N, G * H), dtype=dt)
    dhg = torch.empty((N, G * H), dtype=dt) if mode == "gru" else dxg
    dhtot = torch.empty((N, P), dtype=dt) if w_hr is not None else None
    for n, off, src, dst in _steps(batch_sizes, reverse)[::-1]:
        rows = slice(off, off + n)
        g = _add(None if grad_out is None else grad_out[rows], dh[:n])
        if dhtot is not None:
            dhtot[rows] = g
            g = _up(dhtot[rows] @ w_hr)
        if mode == "lstm":
            assert cs is not None and ws is not None and dc is not None
            dgates, dcx = _lstm_back(g, _up(dc[:n]), _up(cs[src, :n]), _up(cs[dst, :n]), _up(ws[rows]))
            dxg[rows], dc[:n] = dgates, dcx
        elif mode == "gru":
            assert ws is not None and dhz is not None
            dx, dhh, direct = _gru_back(_add(g, dhz[:n]), _up(hs[src, :n]), _up(ws[rows]))
            dxg[rows], dhg[rows], dhz[:n] = dx, dhh, direct
        else:
            dxg[rows] = _act_back(g, _up(hs[dst, :n]), mode)
        dh[:n] = dhg[rows] @ w_hh
    if dhz is not None:
        dh = dh + dhz
    return dxg, dhg, dh, dc, dhtot
