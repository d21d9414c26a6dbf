"""Recurrent nets as functions: torch's ``lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu`` (flat weight lists,
padded or packed input) and the single steps ``lstm_cell`` / ``gru_cell`` / ``rnn_tanh_cell`` / ``rnn_relu_cell``.

torch has these at its top level (``torch.lstm``, ``torch.lstm_cell``, ...), not in nn.functional; genesis
exports them at its top level too, and nn.RNN / LSTM / GRU and the cell modules call them. Each layer and
direction is one fused node (genesis_autograd.rnn_layer): one input product for all steps, then one
recurrent product and one fused cell per step; layers are stacked here, with dropout between them.
"""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor, cat, fused_gru_cell, fused_lstm_cell, rnn_layer, stack

from .dropout import dropout as _dropout
from .linear import linear

__all__: list[str] = []  # torch.nn.functional has none of these: genesis exports them at its top level


def stacked_layers(
    mode: str,
    rows: Tensor,
    batch_sizes: Sequence[int],
    hx: Tensor,
    cx: Tensor | None,
    params: Sequence[Tensor | None],
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """``num_layers`` layers (both directions when ``bidirectional``) over rows packed by time step.

    ``rows`` (N, I); ``hx`` (layers * directions, B, P), ``cx`` (..., B, H) for an LSTM; ``params`` the
    weights of each layer and direction in torch's order, 5 each (w_ih, w_hh, b_ih, b_hh, w_hr; None
    where absent). Returns (output rows (N, directions * P), h_n, c_n or None)."""
    dirs = 2 if bidirectional else 1
    last_h: list[Tensor] = []
    last_c: list[Tensor] = []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, b_ih, b_hh, w_hr = params[5 * k : 5 * k + 5]
            res = rnn_layer(mode, rows, batch_sizes, hx[k], None if cx is None else cx[k], w_ih, w_hh, b_ih, b_hh,
                            w_hr, reverse=d == 1)  # fmt: skip
            outs.append(res[0])
            last_h.append(res[1])
            if cx is not None:
                last_c.append(res[2])
        rows = outs[0] if dirs == 1 else cat(outs, 1)
        if dropout > 0 and train and layer < num_layers - 1:
            rows = _dropout(rows, dropout, training=True)
    return rows, stack(last_h), stack(last_c) if cx is not None else None


def _flat_params(params: Sequence[Tensor], has_biases: bool, projections: bool, count: int) -> list[Tensor | None]:
    """torch's flat weight list (w_ih, w_hh[, b_ih, b_hh][, w_hr] per layer and direction) as 5 per entry."""
    per = 2 + 2 * has_biases + projections
    if len(params) != per * count:
        raise RuntimeError(f"expected {per * count} weight tensors ({per} per layer and direction), got {len(params)}")
    out: list[Tensor | None] = []
    for k in range(count):
        w = list(params[per * k : per * k + per])
        b = w[2:4] if has_biases else [None, None]
        out += [w[0], w[1], *b, w[-1] if projections else None]
    return out


def _run(mode: str, input: Tensor, batch_sizes, hx: Tensor, cx: Tensor | None, params, has_biases: bool,
         num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple:  # fmt: skip
    dirs = 2 if bidirectional else 1
    projections = cx is not None and hx.shape[-1] != cx.shape[-1]
    flat = _flat_params(params, has_biases, projections, num_layers * dirs)
    if batch_sizes is not None:  # packed: input is the data (N, I)
        sizes = [int(n) for n in batch_sizes.tolist()]
        out, h, c = stacked_layers(mode, input, sizes, hx, cx, flat, num_layers, dropout, train, bidirectional)
    else:
        x = input.transpose(0, 1) if batch_first else input
        T, B = x.shape[0], x.shape[1]
        rows = x.reshape(T * B, x.shape[2])
        out, h, c = stacked_layers(mode, rows, [B] * T, hx, cx, flat, num_layers, dropout, train, bidirectional)
        out = out.reshape(T, B, out.shape[1])
        if batch_first:
            out = out.transpose(0, 1)
    return (out, h) if c is None else (out, h, c)


def _dispatch(mode: str, input: Tensor, second, rest: tuple) -> tuple:
    """torch's two overloads: (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) and, packed, (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional)."""
    packed = isinstance(second, Tensor) and second.ndim == 1
    if packed:
        hx, params, has_biases, num_layers, dropout, train, bidirectional = rest
        batch_sizes, batch_first = second, False
    else:
        params, has_biases, num_layers, dropout, train, bidirectional, batch_first = rest
        hx, batch_sizes = second, None
    h, c = (hx[0], hx[1]) if mode == "lstm" else (hx, None)
    return _run(mode, input, batch_sizes, h, c, list(params), bool(has_biases), int(num_layers), float(dropout),
                bool(train), bool(bidirectional), bool(batch_first))  # fmt: skip


def lstm(input: Tensor, hx, *args) -> tuple[Tensor, Tensor, Tensor]:
    """torch.lstm: ``lstm(input, (h0, c0), params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` or, packed, ``lstm(data, batch_sizes, (h0, c0), params, ...)`` -> (output, h_n, c_n).
    A projection (proj_size) is read off h0's last dim being smaller than c0's."""
    return _dispatch("lstm", input, hx, args)


def gru(input: Tensor, hx, *args) -> tuple[Tensor, Tensor]:
    """torch.gru: ``gru(input, h0, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` or, packed, ``gru(data, batch_sizes, h0, params, ...)`` -> (output, h_n)."""
    return _dispatch("gru", input, hx, args)


def rnn_tanh(input: Tensor, hx, *args) -> tuple[Tensor, Tensor]:
    """torch.rnn_tanh: an Elman network with tanh, arguments as :func:`gru`'s."""
    return _dispatch("rnn_tanh", input, hx, args)


def rnn_relu(input: Tensor, hx, *args) -> tuple[Tensor, Tensor]:
    """torch.rnn_relu: an Elman network with relu, arguments as :func:`gru`'s."""
    return _dispatch("rnn_relu", input, hx, args)


# ------------------------------------------------------------------ single steps
def lstm_cell(
    input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """torch.lstm_cell: one step, (h', c') from input (B, I) and (h, c) (B, H); one fused gate op each way."""
    h, c = hx
    return fused_lstm_cell(linear(input, w_ih), linear(h, w_hh), c, b_ih, b_hh)


def gru_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """torch.gru_cell: one step, h' from input (B, I) and h (B, H); one fused gate op each way."""
    return fused_gru_cell(linear(input, w_ih), linear(hx, w_hh), hx, b_ih, b_hh)


def rnn_tanh_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """torch.rnn_tanh_cell: ``tanh(input W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """torch.rnn_relu_cell: ``relu(input W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).relu()
