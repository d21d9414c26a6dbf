"""Recurrent nets on CUDA: fused cells, and whole-sequence loops with one product and one cell launch per step.

``lstm_cell`` / ``gru_cell`` (and their backward) are torch's fused cells (``_thnn_fused_lstm_cell``):
the gate products come in, one kernel does the rest. ``rnn_sequence`` runs a layer's recurrence over a
(packed) sequence whose input projection the caller computed for every step at once: per step one
recurrent product (a matmul plan resolved once per row count and alignment, launched on raw pointers)
and one cell kernel (``gk.cell_plan``), both writing straight into the sequence's buffers, so a step
costs two launches of host time. ``rnn_sequence_backward`` walks the steps back the same way and
returns the gate gradients of every step, from which the caller forms the weight gradients as single
products over the whole sequence. The step products' kernel configuration: STEP_CONFIG below.

Layout (see genesis_autograd/functions/rnn.py): rows of the input projection ``xg`` are packed by time
step (``batch_sizes[t]`` rows from ``offsets[t]``); hidden and cell states live in ``T + 1`` slots of
``(B, ·)``: step t reads slot t and writes slot t + 1 (slot t + 1 and slot t when ``reverse``).
"""

from __future__ import annotations

from collections.abc import Sequence

import genesis_kernels as gk
import genesis_storage as gs
from genesis_kernels.matmul import MatmulConfig, MatmulPlan, PointerConfig, TmaConfig, latency_config

from ...precision import allow_tf32
from .common import View, reg, stream_of
from .memory import contiguous

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}

# The recurrent products' kernel choice for a step of at most STEP_ROWS rows, by (precision, direction):
# "auto" keeps matmul's own choice (made for one product's throughput), "latency" takes
# gk.matmul.latency_config (one launch where the tiles fill the chip, split-K only up to one wave), and a
# PointerConfig / TmaConfig is used as given. Each step waits for the previous one, so a step's latency is
# what counts. benchmarks/sweep_rnn_step.py times the candidates on the GPU and prints the line to put here.
# "tf32": float32 with TF32 allowed; "half": bfloat16 / float16; exact float32 and float64 always "auto".
STEP_ROWS = 64
STEP_CONFIG: dict[tuple[str, str], str | PointerConfig | TmaConfig] = {
    ("tf32", "forward"): "latency",
    ("tf32", "backward"): "latency",
    ("half", "forward"): "auto",
    ("half", "backward"): "auto",
}
# Whether the backward's dh = dgates @ W_hh reads a transposed copy of W_hh (made once per layer and
# direction): B then lies K-major, which TF32's TMA kernel needs (without it the product takes the
# pointer kernel). Only useful with a TmaConfig (or "auto") for ("tf32", "backward").
BACKWARD_TRANSPOSED_WEIGHT = {"tf32": False, "half": False}


def _rows(v: View) -> View:
    """``v`` as a matrix with unit column stride (copied if it is not)."""
    if len(v.shape) == 2 and (v.strides[1] == 1 or v.shape[1] <= 1):
        return v
    return contiguous(v)


def _empty(shape: tuple[int, ...], like: View) -> View:
    return gs.empty(shape, like.dtype, like.device)


def _buf(v: View | None) -> gk.Buffer | None:
    return None if v is None else gk.Buffer(v.ptr, v.shape, v.strides, v.dtype)


# ------------------------------------------------------------------ fused cells
@reg("lstm_cell")
def lstm_cell(
    input_gates: View, hidden_gates: View, cx: View, input_bias: View | None, hidden_bias: View | None
) -> tuple[View, View, View]:
    xg, hg, cx = _rows(input_gates), _rows(hidden_gates), _rows(cx)
    n, H = cx.shape
    hy, cy, ws = _empty((n, H), cx), _empty((n, H), cx), _empty((n, 4 * H), cx)
    gk.lstm_cell(xg, hg, cx, hy, cy, ws, input_bias=_bias(input_bias), hidden_bias=_bias(hidden_bias),
                 stream=stream_of(cx))  # fmt: skip
    return hy, cy, ws


@reg("lstm_cell_backward")
def lstm_cell_backward(
    grad_hy: View | None, grad_cy: View | None, cx: View, cy: View, workspace: View
) -> tuple[View, View]:
    cx, cy, ws = _rows(cx), _rows(cy), _rows(workspace)
    n, H = cx.shape
    dgates, dcx = _empty((n, 4 * H), cx), _empty((n, H), cx)
    grads = [] if grad_hy is None else [_rows(grad_hy)]
    gk.lstm_cell_backward(grads, None if grad_cy is None else _rows(grad_cy), cx, cy, ws, dgates, dcx,
                          stream=stream_of(cx))  # fmt: skip
    return dgates, dcx


@reg("gru_cell")
def gru_cell(
    input_gates: View, hidden_gates: View, hx: View, input_bias: View | None, hidden_bias: View | None
) -> tuple[View, View]:
    xg, hg, hx = _rows(input_gates), _rows(hidden_gates), _rows(hx)
    n, H = hx.shape
    hy, ws = _empty((n, H), hx), _empty((n, 4 * H), hx)
    gk.gru_cell(xg, hg, hx, hy, ws, input_bias=_bias(input_bias), hidden_bias=_bias(hidden_bias),
                stream=stream_of(hx))  # fmt: skip
    return hy, ws


@reg("gru_cell_backward")
def gru_cell_backward(grad_hy: View, hx: View, workspace: View) -> tuple[View, View, View]:
    hx, ws = _rows(hx), _rows(workspace)
    n, H = hx.shape
    dxg, dhg, dhx = _empty((n, 3 * H), hx), _empty((n, 3 * H), hx), _empty((n, H), hx)
    gk.gru_cell_backward([_rows(grad_hy)], hx, ws, dxg, dhg, dhx, stream=stream_of(hx))
    return dxg, dhg, dhx


def _bias(b: View | None) -> View | None:
    return None if b is None else contiguous(b)


# ------------------------------------------------------------------ whole sequences
def _precision(dtype: str, tf32: bool) -> str | None:
    """The STEP_CONFIG class of a product in ``dtype``: "tf32", "half", or None (exact: matmul decides)."""
    if dtype == "float32":
        return "tf32" if tf32 else None
    return "half" if dtype in ("bfloat16", "float16") else None


class _Product:
    """``x (n, K) @ W^T`` (``transpose``) or ``x @ W`` into an (n, N) block, for any row count ``n``:
    one matmul plan per (n, alignments), launched on raw pointers. Row strides are fixed per role;
    ``direction`` ("forward" / "backward") picks the STEP_CONFIG entry used for n <= STEP_ROWS."""

    def __init__(self, weight: View, transpose: bool, x_stride: int, out_stride: int, direction: str) -> None:
        rows, cols = weight.shape
        self.k, self.n_out = (cols, rows) if transpose else (rows, cols)
        st = weight.strides
        self.w_strides = (0, st[1], st[0]) if transpose else (0, st[0], st[1])
        self.weight, self.x_stride, self.out_stride = weight, x_stride, out_stride
        self.w_ptr = weight.ptr
        self.plans: dict[tuple[int, int, int], MatmulPlan] = {}
        self.tf32 = allow_tf32()
        precision = _precision(weight.dtype, self.tf32)
        self.choice = "auto" if precision is None else STEP_CONFIG[precision, direction]

    def _config(self, n: int) -> MatmulConfig | None:
        """The configuration of an n-row step's product (None: matmul's own choice)."""
        if n > STEP_ROWS or self.choice == "auto":
            return None
        if self.choice == "latency":
            return latency_config(self.weight.dtype, n, self.n_out, self.k)
        assert not isinstance(self.choice, str), f"unknown STEP_CONFIG entry {self.choice!r}"
        return self.choice

    def __call__(self, n: int, x_ptr: int, out_ptr: int, stream: int) -> None:
        plan = self.plans.get((n, x_ptr & 15, out_ptr & 15))
        if plan is None:
            w, dt = self.weight, self.weight.dtype
            a = gk.Buffer(x_ptr, (1, n, self.k), (0, self.x_stride, 1), dt)
            b = gk.Buffer(w.ptr, (1, self.k, self.n_out), self.w_strides, dt)
            out = gk.Buffer(out_ptr, (1, n, self.n_out), (0, self.out_stride, 1), dt)
            plan = gk.matmul_plan(a, b, out, allow_tf32=self.tf32, config=self._config(n))
            if plan is None:  # K == 0, which the layers' checks rule out
                raise ValueError("recurrent product over an empty dimension")
            self.plans[n, x_ptr & 15, out_ptr & 15] = plan
        plan(x_ptr, self.w_ptr, out_ptr, out_ptr, stream)


def _steps(batch_sizes: Sequence[int], reverse: bool) -> list[tuple[int, int, int, int]]:
    """(rows, row offset, source slot, destination slot) of each step, in the order they run."""
    out, off = [], 0
    for t, n in enumerate(batch_sizes):
        out.append((n, off, t + 1 if reverse else t, t if reverse else t + 1))
        off += n
    return out[::-1] if reverse else out


def _slots(T: int, B: int, cols: int, init: View, reverse: bool, ragged: bool) -> View:
    """(T + 1, B, cols) state slots with ``init`` in the first one read (every slot, for a reverse pass over
    sequences of different lengths: a sequence starting later reads its initial state from its slot)."""
    s = _empty((T + 1, B, cols), init)
    st = stream_of(init)
    if reverse and ragged:
        gk.copy(init.as_strided((T + 1, B, cols), (0, *init.strides)), s, stream=st)
    else:
        first = s.as_strided((B, cols), (cols, 1), (T if reverse else 0) * B * cols)
        gk.copy(init, first, stream=st)
    return s


@reg("rnn_sequence")
def rnn_sequence(
    mode: str,
    xg: View,
    batch_sizes: Sequence[int],
    h0: View,
    c0: View | None,
    w_hh: View,
    b_hh: View | None,
    w_hr: View | None,
    reverse: bool,
) -> tuple[View, View | None, View | None, View | None]:
    xg = _rows(xg)
    T, (B, P) = len(batch_sizes), h0.shape
    H = w_hh.shape[0] // GATES[mode]
    ragged = any(n != B for n in batch_sizes)
    hs = _slots(T, B, P, h0, reverse, ragged)
    cs = _slots(T, B, H, c0, reverse, ragged) if c0 is not None else None
    ws = _empty((xg.shape[0], 4 * H), xg) if mode in ("lstm", "gru") else None
    hraw = _empty((xg.shape[0], H), xg) if w_hr is not None else None
    hg = _empty((B, w_hh.shape[0]), xg)
    stream, isz = stream_of(xg), xg.itemsize
    recurrent = _Product(w_hh, True, P, w_hh.shape[0], "forward")
    project = _Product(w_hr, True, H, P, "forward") if w_hr is not None else None
    bias = None if b_hh is None else contiguous(b_hh)
    flags: dict[str, object] = {"HAS_BI": False, "HAS_BH": bias is not None}
    if mode == "lstm":
        cell = gk.cell_plan("lstm", xg.dtype, H, (xg.strides[0], 4 * H, H, H if hraw is not None else P, H, 4 * H),
                            flags)  # fmt: skip
    elif mode == "gru":
        cell = gk.cell_plan("gru", xg.dtype, H, (xg.strides[0], 3 * H, H, H, 4 * H), flags)
    else:
        cell = gk.cell_plan("rnn", xg.dtype, H, (xg.strides[0], H, H), {**flags, "ACT": mode[4:]})
    # Per step only address arithmetic and two launches: every base address and row size is read here once.
    x0, hg0, b0 = xg.ptr, hg.ptr, bias.ptr if bias is not None else hg.ptr
    h_base, c_base, ws_base = hs.ptr, cs.ptr if cs is not None else 0, ws.ptr if ws is not None else 0
    raw_base = hraw.ptr if hraw is not None else 0
    slot_h, slot_c, x_row, ws_row, raw_row = B * P * isz, B * H * isz, xg.strides[0] * isz, 4 * H * isz, H * isz
    for n, off, src, dst in _steps(batch_sizes, reverse):
        h_src, h_dst = h_base + src * slot_h, h_base + dst * slot_h
        recurrent(n, h_src, hg0, stream)
        x = x0 + off * x_row
        if mode == "lstm":
            out = h_dst if hraw is None else raw_base + off * raw_row
            c_src, c_dst = c_base + src * slot_c, c_base + dst * slot_c
            cell(n, (x, hg0, b0, b0, c_src, out, c_dst, ws_base + off * ws_row), stream)
            if project is not None:
                project(n, out, h_dst, stream)
        elif mode == "gru":
            cell(n, (x, hg0, b0, b0, h_src, h_dst, ws_base + off * ws_row), stream)
        else:
            cell(n, (x, hg0, b0, b0, h_dst), stream)
    return hs, cs, ws, hraw


@reg("rnn_sequence_backward")
def rnn_sequence_backward(
    mode: str,
    grad_out: View | None,
    grad_hn: View | None,
    grad_cn: View | None,
    hs: View,
    cs: View | None,
    ws: View | None,
    hraw: View | None,
    w_hh: View,
    w_hr: View | None,
    batch_sizes: Sequence[int],
    reverse: bool,
) -> tuple[View, View, View, View | None, View | None]:
    _, B, P = hs.shape
    G = GATES[mode]
    H = w_hh.shape[0] // G
    N = sum(batch_sizes)
    stream, isz = stream_of(hs), hs.itemsize
    dh = _state(grad_hn, (B, P), hs)
    dc = _state(grad_cn, (B, H), hs) if mode == "lstm" else None
    dhz = _state(None, (B, H), hs) if mode == "gru" else None  # the direct part of h_prev's gradient (dh * z)
    dxg = _empty((N, G * H), hs)
    dhg = _empty((N, G * H), hs) if mode == "gru" else dxg
    dhtot = _empty((N, P), hs) if w_hr is not None else None
    dhraw = _empty((B, H), hs) if w_hr is not None else None
    go = None if grad_out is None else _rows(grad_out)
    go_stride = 0 if go is None else go.strides[0]
    back = _backward_product(w_hh, G * H, P)
    unproject = _Product(w_hr, False, P, H, "backward") if w_hr is not None else None
    # The incoming gradients of each step's output, summed by the cell kernel: the sequence output's (if
    # any), the recurrence's and, for a GRU, the direct part; projected, their sum goes through W_hr first.
    if dhraw is not None:
        g_strides = [H]
    else:
        g_strides = ([go_stride] if go is not None else []) + [P] + ([H] if mode == "gru" else [])
    ndh = len(g_strides)
    g_strides = (g_strides + [0, 0])[:3]
    if mode == "lstm":
        cell = gk.cell_plan("lstm_backward", hs.dtype, H, (*g_strides, H, H, H, 4 * H, 4 * H, H),
                            {"NDH": ndh, "HAS_DC": True})  # fmt: skip
    elif mode == "gru":
        cell = gk.cell_plan("gru_backward", hs.dtype, H, (*g_strides, P, 4 * H, 3 * H, 3 * H, H), {"NDH": ndh})
    else:
        cell = gk.cell_plan("rnn_backward", hs.dtype, H, (*g_strides, P, H), {"NDH": ndh, "ACT": mode[4:]})
    # Per step only address arithmetic and the launches: every base address and row size is read here once.
    # The cell's gradient pointers: the output's row of the step (if any), then the fixed ones, padded to three.
    fixed = (dh.ptr, dhz.ptr, dh.ptr) if dhz is not None else (dh.ptr, dh.ptr, dh.ptr)
    go_base, go_row = (go.ptr, go_stride * isz) if go is not None else (0, 0)
    h_base, c_base, ws_base = hs.ptr, cs.ptr if cs is not None else 0, ws.ptr if ws is not None else 0
    dc_ptr, dhz_ptr = dc.ptr if dc is not None else 0, dhz.ptr if dhz is not None else 0
    dx_base, dhg_base, dh_ptr = dxg.ptr, dhg.ptr, dh.ptr
    slot_h, slot_c, g_row, ws_row = B * P * isz, B * H * isz, G * H * isz, 4 * H * isz
    for n, off, src, dst in _steps(batch_sizes, reverse)[::-1]:
        if unproject is not None:
            assert dhtot is not None and dhraw is not None
            _sum_rows(go, off, n, dh, dhtot, stream)
            unproject(n, dhtot.ptr + off * P * isz, dhraw.ptr, stream)
            grads: tuple[int, ...] = (dhraw.ptr, dh_ptr, dh_ptr)
        elif go is not None:
            grads = (go_base + off * go_row, *fixed[:2])
        else:
            grads = fixed
        if mode == "lstm":
            c_src, c_dst = c_base + src * slot_c, c_base + dst * slot_c
            ptrs = (*grads, dc_ptr, c_src, c_dst, ws_base + off * ws_row, dx_base + off * g_row, dc_ptr)
        elif mode == "gru":
            ptrs = (*grads, h_base + src * slot_h, ws_base + off * ws_row, dx_base + off * g_row,
                    dhg_base + off * g_row, dhz_ptr)  # fmt: skip
        else:
            ptrs = (*grads, h_base + dst * slot_h, dx_base + off * g_row)
        cell(n, ptrs, stream)
        back(n, dhg_base + off * g_row, dh_ptr, stream)
    if dhz is not None:
        gk.binary("add", dh, dhz, dh, compute_dtype=dh.dtype, stream=stream)
    return dxg, dhg, dh, dc, dhtot


def _backward_product(w_hh: View, x_stride: int, out_stride: int) -> _Product:
    """dh = dgates @ W_hh, reading W_hh as stored or, where BACKWARD_TRANSPOSED_WEIGHT says so, a
    transposed copy ((dgates @ (W_hh^T)^T): B K-major, as TF32's TMA kernel reads it)."""
    precision = _precision(w_hh.dtype, allow_tf32())
    if precision is None or not BACKWARD_TRANSPOSED_WEIGHT[precision]:
        return _Product(w_hh, False, x_stride, out_stride, "backward")
    rows, cols = w_hh.shape
    w_t = contiguous(w_hh.as_strided((cols, rows), (w_hh.strides[1], w_hh.strides[0]), w_hh.offset))
    return _Product(w_t, True, x_stride, out_stride, "backward")


def _state(init: View | None, shape: tuple[int, int], like: View) -> View:
    """A gradient state buffer holding ``init`` (zeros without one)."""
    s = _empty(shape, like)
    if init is None:
        gk.fill(s, 0, stream=stream_of(like))
    else:
        gk.copy(init, s, stream=stream_of(like))
    return s


def _sum_rows(go: View | None, off: int, n: int, dh: View, out: View, stream: int) -> None:
    """out[off:off+n] = go[off:off+n] + dh[:n] (the projected output's whole gradient at one step)."""
    P = dh.shape[1]
    dst = out.as_strided((n, P), (P, 1), out.offset + off * P)
    rec = dh.as_strided((n, P), (P, 1), dh.offset)
    if go is None:
        gk.copy(rec, dst, stream=stream)
    else:
        g = go.as_strided((n, P), go.strides, go.offset + off * go.strides[0])
        gk.binary("add", g, rec, dst, compute_dtype=dh.dtype, stream=stream)
