"""Recurrent layers with torch.nn's names, signatures, parameters and errors: RNN, LSTM, GRU (RNNBase) and
RNNCell, LSTMCell, GRUCell (RNNCellBase).

Parameters are named and shaped as torch's (``weight_ih_l0``, ``bias_hh_l1_reverse``, ``weight_hr_l0``), so
state dicts load both ways. A forward takes a padded batch ((T, B, I), (B, T, I) with ``batch_first``, or
unbatched (T, I)) or a PackedSequence, and returns the same kind; the numerics are in
nn/functional/rnn.py (one fused node per layer and direction).
"""

from __future__ import annotations

import math
import numbers
import warnings

from genesis_autograd import Tensor, empty, is_autocast_enabled, zeros

from . import init
from .functional import rnn as FR
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

_MODES = {"LSTM": ("lstm", 4), "GRU": ("gru", 3), "RNN_TANH": ("rnn_tanh", 1), "RNN_RELU": ("rnn_relu", 1)}


class RNNBase(Module):
    """What RNN, LSTM and GRU share: torch's constructor checks, parameters, ``all_weights``,
    ``flatten_parameters`` (nothing to do here), ``extra_repr`` and the forward over padded or packed input."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _MODES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _MODES[mode][1] * hidden_size
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(dirs):
                layer_input = input_size if layer == 0 else real_hidden * dirs
                shapes: list[tuple[str, tuple[int, ...]]] = [
                    ("weight_ih_l{}{}", (gate_size, layer_input)),
                    ("weight_hh_l{}{}", (gate_size, real_hidden)),
                ]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, "_reverse" if direction == 1 else "")
                    setattr(self, name, Parameter(empty(*shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: torch packs the weights for cuDNN here; genesis reads them where they are."""

    def reset_parameters(self) -> None:
        """Every parameter uniform in +-1/sqrt(hidden_size), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------------ forward
    def _params(self) -> list[Tensor | None]:
        """Five entries per layer and direction (w_ih, w_hh, b_ih, b_hh, w_hr; None where absent)."""
        out: list[Tensor | None] = []
        for names in self._all_weights:
            got = {n.split("_l")[0]: getattr(self, n) for n in names}
            out += [got.get(k) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")]
        return out

    def _check_input(self, input: Tensor, packed: bool) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype and not is_autocast_enabled(input.device.type):
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert input: "
                f"input.to({w.dtype}), or convert model: model.to({input.dtype})"
            )
        expected = 2 if packed else 3
        if input.ndim != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}"
            )

    def _check_hidden(self, hx: Tensor, expected: tuple[int, int, int], msg: str) -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    def _run(self, input, hx):
        """Shared forward: returns (output, h_n, c_n or None) in the caller's layout."""
        lstm = self.mode == "LSTM"
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        unbatched = False
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            batch = int(batch_sizes[0].item())
            x = data
        else:
            if input.ndim not in (2, 3):
                what = "D instead" if lstm else ("D tensor instead" if name == "RNN" else "D instead")
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}{what}")
            unbatched = input.ndim == 2
            batch_dim = 0 if self.batch_first else 1
            if unbatched:
                input = input.unsqueeze(batch_dim)
            x, sorted_indices, unsorted_indices = input, None, None
            batch = input.shape[0] if self.batch_first else input.shape[1]
        h_shape = (self.num_layers * dirs, batch, real_hidden)
        c_shape = (self.num_layers * dirs, batch, self.hidden_size)
        if hx is None:
            h = zeros(*h_shape, dtype=x.dtype, device=x.device)
            c = zeros(*c_shape, dtype=x.dtype, device=x.device) if lstm else None
        else:
            h, c = (hx[0], hx[1]) if lstm else (hx, None)
            if not packed:
                want = 2 if unbatched else 3
                dims = [t.ndim for t in ((h, c) if lstm else (h,))]
                if any(d != want for d in dims):
                    kind = "unbatched 2-D" if unbatched else "batched 3-D"
                    if lstm:
                        raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                           f"({dims[0]}-D, {dims[1]}-D) tensors")  # fmt: skip
                    raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {dims[0]}-D tensor")
                if unbatched:
                    h = h.unsqueeze(1)
                    c = c.unsqueeze(1) if c is not None else None
            if sorted_indices is not None:
                h = h.index_select(1, sorted_indices)
                c = c.index_select(1, sorted_indices) if c is not None else None
        self._check_input(x, packed)
        if lstm:
            self._check_hidden(h, h_shape, "Expected hidden[0] size {}, got {}")
            self._check_hidden(c, c_shape, "Expected hidden[1] size {}, got {}")
        else:
            self._check_hidden(h, h_shape, "Expected hidden size {}, got {}")
        mode = _MODES[self.mode][0]
        params = self._params()
        if packed:
            sizes = [int(n) for n in batch_sizes.tolist()]
            rows, hn, cn = FR.stacked_layers(mode, x, sizes, h, c, params, self.num_layers, self.dropout,
                                             self.training, self.bidirectional)  # fmt: skip
            if unsorted_indices is not None:
                hn = hn.index_select(1, unsorted_indices)
                cn = cn.index_select(1, unsorted_indices) if cn is not None else None
            return PackedSequence(rows, batch_sizes, sorted_indices, unsorted_indices), hn, cn
        seq = x.transpose(0, 1) if self.batch_first else x
        T, B = seq.shape[0], seq.shape[1]
        rows, hn, cn = FR.stacked_layers(mode, seq.reshape(T * B, seq.shape[2]), [B] * T, h, c, params,
                                         self.num_layers, self.dropout, self.training, self.bidirectional)  # fmt: skip
        out = rows.reshape(T, B, rows.shape[1])
        if self.batch_first:
            out = out.transpose(0, 1)
        if unbatched:
            out = out.squeeze(0 if self.batch_first else 1)
            hn = hn.squeeze(1)
            cn = cn.squeeze(1) if cn is not None else None
        return out, hn, cn


class RNN(RNNBase):
    """An Elman network, ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act tanh or relu.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, device=None, dtype=None)``; ``forward(input, hx=None)`` -> (output, h_n).
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        """(output, h_n) for a padded / unbatched input or a PackedSequence (then the output is one too)."""
        out, hn, _ = self._run(input, hx)
        return out, hn


class LSTM(RNNBase):
    """Long short-term memory; ``proj_size > 0`` projects each hidden state to that size (weight_hr_l*).

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None)``; ``forward(input, (h0, c0)=None)`` ->
    (output, (h_n, c_n)).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx: tuple[Tensor, Tensor] | None = None):
        """(output, (h_n, c_n)) for a padded / unbatched input or a PackedSequence."""
        out, hn, cn = self._run(input, hx)
        return out, (hn, cn)


class GRU(RNNBase):
    """Gated recurrent unit, torch's formulation (the reset gate scales ``h W_hn^T + b_hn``).

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None)``; ``forward(input, hx=None)`` -> (output, h_n).
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        """(output, h_n) for a padded / unbatched input or a PackedSequence."""
        out, hn, _ = self._run(input, hx)
        return out, hn


# ------------------------------------------------------------------ cells
class RNNCellBase(Module):
    """What the cells share: ``weight_ih`` (chunks * hidden, input), ``weight_hh``, optional biases."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Every parameter uniform in +-1/sqrt(hidden_size), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batch(self, name: str, input: Tensor, states: list[Tensor | None], what: list[str]):
        """torch's checks; (batched input, batched states (zeros for None), whether it was unbatched)."""
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for s, label in zip(states, what):
            if s is not None and s.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {s.ndim}D instead")
        unbatched = input.ndim == 1
        if unbatched:
            input = input.unsqueeze(0)
        out = []
        for s in states:
            if s is None:
                s = zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
            elif unbatched:
                s = s.unsqueeze(0)
            out.append(s)
        return input, out, unbatched


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``, act "tanh" or "relu"."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:  # fmt: skip
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """h' for input (B, I) or (I,), hx (B, H) or (H,) (zeros when None)."""
        x, (h,), unbatched = self._batch("RNNCell", input, [hx], ["hidden"])
        if self.nonlinearity == "tanh":
            ret = FR.rnn_tanh_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = FR.rnn_relu_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret.squeeze(0) if unbatched else ret


class LSTMCell(RNNCellBase):
    """One LSTM step: (h', c') from input and (h, c); the gates in one fused op each way."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """(h', c') for input (B, I) or (I,); hx = (h, c) or None (zeros)."""
        states: list[Tensor | None] = [None, None] if hx is None else list(hx)
        x, (h, c), unbatched = self._batch("LSTMCell", input, states, ["hx[0]", "hx[1]"])
        h2, c2 = FR.lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h2.squeeze(0), c2.squeeze(0)) if unbatched else (h2, c2)


class GRUCell(RNNCellBase):
    """One GRU step: h' from input and h; the gates in one fused op each way."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """h' for input (B, I) or (I,), hx (B, H) or (H,) (zeros when None)."""
        x, (h,), unbatched = self._batch("GRUCell", input, [hx], ["hidden"])
        ret = FR.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret.squeeze(0) if unbatched else ret
