"""Recurrent nets: torch's fused LSTM / GRU cells, and one graph node for a whole layer's sequence.

``FusedLSTMCell`` / ``FusedGRUCell`` are torch's ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``: the
gate products x @ W_ih^T and h @ W_hh^T come in (their Linear nodes carry the weight gradients), one
NDArray op computes the new state each way.

``RNNLayer`` is one layer and one direction of nn.RNN / LSTM / GRU over a whole (packed) sequence, as one
node: its forward makes the input projection of every step in one product, then the backend's loop runs
one recurrent product and one fused cell per step (genesis_ndarray's ``rnn_sequence``); its backward runs
the loop back (``rnn_sequence_backward``) and forms every weight gradient as one product over all steps.
The backward engine therefore sees one node per layer and direction, not a handful per time step.

Rows are packed by time step: step t holds ``batch_sizes[t]`` rows (non-increasing; all B for a padded
batch), the first ones of the batch, as torch's PackedSequence. States live in T + 1 slots of (B, ·); the
backend documents them. A backward that is itself recorded (create_graph) is refused for the layer, as
torch refuses it for cuDNN's; the cells recompute their math with Tensor ops then.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from genesis_ndarray import NDArray, from_numpy

from ._util import Primitive, backward_recorded, wrap

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


# ------------------------------------------------------------------ fused cells
class FusedLSTMCell(Primitive):
    """(hy, cy) from the gate products (n, 4H), the previous cell state cx and optional biases."""

    autocast_policy = "lower"

    @staticmethod
    def forward(ctx, input_gates, hidden_gates, cx, input_bias, hidden_bias):
        bi = None if input_bias is None else input_bias.data
        bh = None if hidden_bias is None else hidden_bias.data
        hy, cy, ws = input_gates.data.lstm_cell(hidden_gates.data, cx.data, bi, bh)
        if ctx.records:
            ctx.save_for_backward(input_gates, hidden_gates, cx, input_bias, hidden_bias)
            ctx.cy, ctx.ws = cy, ws
            ctx.set_materialize_grads(False)
        return hy, cy

    @staticmethod
    def backward(ctx, ghy, gcy):
        xg, hg, cx, bi, bh = ctx.saved_tensors
        need = ctx.needs_input_grad
        if backward_recorded(ghy, gcy):  # differentiable again: the same math with Tensor ops
            gates = _plus(xg + hg, bi, bh)
            i, f, g, o = (gates.narrow(1, k * cx.shape[1], cx.shape[1]) for k in range(4))
            i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
            tc = (f * cx + i * g).tanh()
            dh = ghy if ghy is not None else tc * 0
            dc = dh * o * (1 - tc * tc) + (gcy if gcy is not None else 0)
            parts = [dc * g * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)]
            from .views import Cat

            dgates, dcx = Cat.apply(1, *parts), dc * f
        else:
            nd_g = ctx.ws.lstm_cell_backward(
                None if ghy is None else ghy.data, None if gcy is None else gcy.data, cx.data, ctx.cy
            )
            like = ghy if ghy is not None else gcy
            dgates, dcx = wrap(like, nd_g[0]), wrap(like, nd_g[1])
        db = dgates.sum(0) if need[3] or need[4] else None
        return (dgates if need[0] else None, dgates if need[1] else None, dcx if need[2] else None,
                db if need[3] else None, db if need[4] else None)  # fmt: skip


class FusedGRUCell(Primitive):
    """hy from x @ W_ih^T and h @ W_hh^T (n, 3H, biases apart: the n gate scales h's part by r) and hx."""

    autocast_policy = "lower"

    @staticmethod
    def forward(ctx, input_gates, hidden_gates, hx, input_bias, hidden_bias):
        bi = None if input_bias is None else input_bias.data
        bh = None if hidden_bias is None else hidden_bias.data
        hy, ws = input_gates.data.gru_cell(hidden_gates.data, hx.data, bi, bh)
        if ctx.records:
            ctx.save_for_backward(input_gates, hidden_gates, hx, input_bias, hidden_bias)
            ctx.ws = ws
        return hy

    @staticmethod
    def backward(ctx, g):
        xg, hg, hx, bi, bh = ctx.saved_tensors
        need = ctx.needs_input_grad
        if backward_recorded(g):
            H = hx.shape[1]
            xs = [_plus(xg.narrow(1, k * H, H), None if bi is None else bi.narrow(0, k * H, H)) for k in range(3)]
            hs = [_plus(hg.narrow(1, k * H, H), None if bh is None else bh.narrow(0, k * H, H)) for k in range(3)]
            r, z = (xs[0] + hs[0]).sigmoid(), (xs[1] + hs[1]).sigmoid()
            n = (xs[2] + r * hs[2]).tanh()
            dz = g * (hx - n) * z * (1 - z)
            dn = g * (1 - z) * (1 - n * n)
            dr = dn * hs[2] * r * (1 - r)
            from .views import Cat

            dxg, dhg, dhx = Cat.apply(1, dr, dz, dn), Cat.apply(1, dr, dz, dn * r), g * z
        else:
            dxg, dhg, dhx = (wrap(g, a) for a in ctx.ws.gru_cell_backward(g.data, hx.data))
        return (dxg if need[0] else None, dhg if need[1] else None, dhx if need[2] else None,
                dxg.sum(0) if need[3] else None, dhg.sum(0) if need[4] else None)  # fmt: skip


def _plus(t, *more):
    for m in more:
        if m is not None:
            t = t + m
    return t


def fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """torch's ``_thnn_fused_lstm_cell`` without the workspace output: (hy, cy), one fused op each way."""
    return FusedLSTMCell.apply(input_gates, hidden_gates, cx, input_bias, hidden_bias)


def fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """torch's ``_thnn_fused_gru_cell`` without the workspace output: hy, one fused op each way."""
    return FusedGRUCell.apply(input_gates, hidden_gates, hx, input_bias, hidden_bias)


# ------------------------------------------------------------------ a whole layer
class _Rows:
    """Where a packed sequence's rows sit among the state slots (T + 1, B, ·): row indices for the step
    outputs, the states each step read, and every sequence's last state. None where a view does (a batch
    whose sequences all have length T)."""

    def __init__(self, batch_sizes: tuple[int, ...], reverse: bool, device) -> None:
        T, B = len(batch_sizes), batch_sizes[0]
        self.full = all(n == B for n in batch_sizes)
        self.outputs = self.previous = self.last = None
        if self.full:
            return
        dst = [t if reverse else t + 1 for t in range(T)]
        src = [t + 1 if reverse else t for t in range(T)]
        out_idx = np.concatenate([d * B + np.arange(n) for d, n in zip(dst, batch_sizes)])
        prev_idx = np.concatenate([s * B + np.arange(n) for s, n in zip(src, batch_sizes)])
        lengths = np.array([sum(1 for n in batch_sizes if n > b) for b in range(B)])
        last_idx = np.arange(B) if reverse else lengths * B + np.arange(B)
        self.outputs, self.previous, self.last = (
            from_numpy(a.astype(np.int64), device) for a in (out_idx, prev_idx, last_idx)
        )


def _rows_of(slots: NDArray, index: NDArray | None, first: int, T: int) -> NDArray:
    """Rows of the slots (T + 1, B, C) as an (n, C) matrix: T slots from ``first`` (a view) or gathered."""
    _, B, C = slots.shape
    flat = slots.reshape((T + 1) * B, C)
    if index is None:
        return flat.narrow(0, first * B, T * B)
    return flat.index_select(0, index)


class RNNLayer(Primitive):
    """One layer, one direction: (output rows (N, P), h_n (B, P)[, c_n (B, H) for an LSTM])."""

    autocast_policy = "lower"

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, batch_sizes, reverse):
        T = len(batch_sizes)
        xg = x.data.linear(w_ih.data, None if b_ih is None else b_ih.data)
        hs, cs, ws, hraw = xg.rnn_sequence(
            mode, batch_sizes, h0.data, None if c0 is None else c0.data, w_hh.data,
            None if b_hh is None else b_hh.data, None if w_hr is None else w_hr.data, reverse,
        )  # fmt: skip
        rows = _Rows(batch_sizes, reverse, x.data.device)
        out = _rows_of(hs, rows.outputs, 0 if reverse else 1, T)
        last = [_last(s, rows.last, 0 if reverse else T) for s in ((hs,) if cs is None else (hs, cs))]
        if ctx.records:
            ctx.save_for_backward(x, w_ih, w_hh, w_hr)
            ctx.state = (hs, cs, ws, hraw, rows, mode, batch_sizes, reverse)
            ctx.set_materialize_grads(False)
        return (out, *last)

    @staticmethod
    def backward(ctx, g_out, g_hn, g_cn=None):
        if backward_recorded(g_out, g_hn, g_cn):
            raise RuntimeError("double backward through a fused recurrent layer (nn.RNN / LSTM / GRU) is not "
                               "supported; use nn.RNNCell / LSTMCell / GRUCell in a loop")  # fmt: skip
        x, w_ih, w_hh, w_hr = ctx.saved_tensors
        hs, cs, ws, hraw, rows, mode, batch_sizes, reverse = ctx.state
        need = ctx.needs_input_grad
        nd = [None if g is None else g.data for g in (g_out, g_hn, g_cn)]
        dxg, dhg, dh0, dc0, dhtot = hs.rnn_sequence_backward(
            mode, nd[0], nd[1], nd[2], cs, ws, hraw, w_hh.data, None if w_hr is None else w_hr.data,
            batch_sizes, reverse,
        )  # fmt: skip
        like = next(g for g in (g_out, g_hn, g_cn) if g is not None)
        T = len(batch_sizes)
        grads: list = [None] * 11
        if need[0]:
            grads[0] = dxg.matmul(w_ih.data)
        grads[1] = dh0 if need[1] else None
        grads[2] = dc0 if need[2] else None
        if need[3]:
            grads[3] = dxg.T.matmul(x.data)
        if need[4]:
            grads[4] = dhg.T.matmul(_rows_of(hs, rows.previous, 1 if reverse else 0, T))
        if need[5]:
            grads[5] = dxg.sum(0)
        if need[6]:
            grads[6] = dhg.sum(0)
        if need[7] and dhtot is not None and hraw is not None:
            grads[7] = dhtot.T.matmul(hraw)
        return tuple(None if g is None else wrap(like, g) for g in grads)


def _last(slots: NDArray, index: NDArray | None, slot: int) -> NDArray:
    """Every sequence's last state (B, C): one slot (a view), or gathered by each sequence's length."""
    _, B, C = slots.shape
    if index is None:
        return slots.reshape(slots.shape[0] * B, C).narrow(0, slot * B, B)
    return slots.reshape(slots.shape[0] * B, C).index_select(0, index)


def rnn_layer(
    mode: str,
    x,
    batch_sizes: Sequence[int],
    h0,
    c0,
    w_ih,
    w_hh,
    b_ih=None,
    b_hh=None,
    w_hr=None,
    reverse: bool = False,
) -> tuple:
    """One recurrent layer, one direction, over rows packed by time step: ``x`` (N, I) with
    ``batch_sizes[t]`` rows for step t (non-increasing), ``h0`` (B, P) and for an LSTM ``c0`` (B, H);
    torch's weight shapes. Returns (outputs (N, P), h_n[, c_n]): each sequence's state after its last step.
    ``mode``: "lstm", "gru", "rnn_tanh" or "rnn_relu"."""
    if mode not in GATES:
        raise ValueError(f"unknown recurrent mode {mode!r}; expected one of {tuple(GATES)}")
    return RNNLayer.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, tuple(batch_sizes), bool(reverse))
