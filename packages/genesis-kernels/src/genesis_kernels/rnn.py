"""Recurrent cells: the pointwise gate math of one time step, forward and backward, one launch each.

The matrix products stay outside (one input projection for all steps, one recurrent product per step);
these kernels take their results and do the rest. Every operand is a matrix of ``n`` rows with unit
column stride and its own row stride, so the rows of one step inside a whole sequence's buffer are read
and written in place. Gate blocks sit side by side along the columns, as in torch's weights:

``lstm_cell``           gates = xg + hg (+ b_ih + b_hh), (i, f, g, o) = (sig, sig, tanh, sig)(gates):
                        cy = f * cx + i * g, hy = o * tanh(cy); workspace = (i, f, g, o) activated
``lstm_cell_backward``  dh = sum of up to three gradients of hy, dc = dcy + dh * o * tanh'(cy):
                        grad_gates = (dc g i', dc cx f', dc i g', dh tanh(cy) o'), grad_cx = dc * f
``gru_cell``            r, z = sig(xg_rz + hg_rz + biases), hn = hg_n + b_hn, n = tanh(xg_n + b_in + r * hn),
                        hy = (1 - z) * n + z * hx; workspace = (r, z, n, hn)
``gru_cell_backward``   grad_input_gates = (dr, dz, dn), grad_hidden_gates = (dr, dz, dn * r), grad_hx = dh * z
``rnn_cell``            hy = act(xg + hg + biases), act tanh or relu
``rnn_cell_backward``   grad_pre = dh * act'(hy), read from hy

A missing optional operand (a bias, a second gradient) is a constexpr flag, never a zero buffer. Math in
float32 (float64 for float64 operands); results rounded once to their buffers' dtype. The ``*_plan``
functions resolve a launch once for a dtype, flags and row strides, and return ``launch(n, ptrs, stream)``:
the recurrent loops of the layer above call that per step with plain pointers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info, tl_dtype
from .elementwise import cast_to, div_rn
from .mathlib import lib
from .runtime import Kernel, cdiv, next_pow2, ptr_type

RNN_ACTIVATIONS = ("tanh", "relu")
CellLaunch = Callable[[int, Sequence[int], int], None]


@triton.jit
def _sigmoid(x):
    return div_rn(1.0, 1.0 + lib.exp(-x))


@triton.jit
def _tile(n, H, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr):
    """This program's rows (int64, as a column) and hidden columns (as a row), and their mask."""
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    j = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (r < n)[:, None] & (j < H)[None, :]
    return r.to(tl.int64)[:, None], j[None, :], mask


@triton.jit
def _ld(p, off, mask, CDT: tl.constexpr):
    return cast_to(tl.load(p + off, mask=mask, other=0), CDT)


@triton.jit
def _st(p, off, v, mask):
    tl.store(p + off, cast_to(v, p.dtype.element_ty), mask=mask)


@triton.jit
def _pre(xg, hg, bi, bh, rx, rh, col, mask, HAS_BI: tl.constexpr, HAS_BH: tl.constexpr, CDT: tl.constexpr):
    """One gate block's pre-activation: xg + hg (+ b_ih + b_hh) at columns ``col``."""
    v = _ld(xg, rx + col, mask, CDT) + _ld(hg, rh + col, mask, CDT)
    if HAS_BI:
        v += _ld(bi, col, mask, CDT)
    if HAS_BH:
        v += _ld(bh, col, mask, CDT)
    return v


@triton.jit
def _grad_sum(g1, g2, g3, o1, o2, o3, mask, NDH: tl.constexpr, CDT: tl.constexpr):
    """The sum of the first ``NDH`` incoming gradients (zero when there is none)."""
    d = _ld(g1, o1, mask, CDT) * 0.0
    if NDH >= 1:
        d += _ld(g1, o1, mask, CDT)
    if NDH >= 2:
        d += _ld(g2, o2, mask, CDT)
    if NDH >= 3:
        d += _ld(g3, o3, mask, CDT)
    return d


@triton.jit
def _lstm_forward_kernel(
    xg, hg, bi, bh, cx, hy, cy, ws, n, H, s_xg, s_hg, s_cx, s_hy, s_cy, s_ws,
    HAS_BI: tl.constexpr, HAS_BH: tl.constexpr, CDT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    r, j, m = _tile(n, H, BLOCK_R, BLOCK_H)
    rx, rh, rw = r * s_xg, r * s_hg, r * s_ws
    i = _sigmoid(_pre(xg, hg, bi, bh, rx, rh, j, m, HAS_BI, HAS_BH, CDT))
    f = _sigmoid(_pre(xg, hg, bi, bh, rx, rh, j + H, m, HAS_BI, HAS_BH, CDT))
    g = lib.tanh(_pre(xg, hg, bi, bh, rx, rh, j + 2 * H, m, HAS_BI, HAS_BH, CDT))
    o = _sigmoid(_pre(xg, hg, bi, bh, rx, rh, j + 3 * H, m, HAS_BI, HAS_BH, CDT))
    c = f * _ld(cx, r * s_cx + j, m, CDT) + i * g
    _st(cy, r * s_cy + j, c, m)
    _st(hy, r * s_hy + j, o * lib.tanh(c), m)
    _st(ws, rw + j, i, m)
    _st(ws, rw + j + H, f, m)
    _st(ws, rw + j + 2 * H, g, m)
    _st(ws, rw + j + 3 * H, o, m)


@triton.jit
def _lstm_backward_kernel(
    g1, g2, g3, dcy, cx, cy, ws, dgates, dcx, n, H, s_g1, s_g2, s_g3, s_dcy, s_cx, s_cy, s_ws, s_dgates, s_dcx,
    NDH: tl.constexpr, HAS_DC: tl.constexpr, CDT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    r, j, m = _tile(n, H, BLOCK_R, BLOCK_H)
    dh = _grad_sum(g1, g2, g3, r * s_g1 + j, r * s_g2 + j, r * s_g3 + j, m, NDH, CDT)
    rw, rd = r * s_ws, r * s_dgates
    i = _ld(ws, rw + j, m, CDT)
    f = _ld(ws, rw + j + H, m, CDT)
    g = _ld(ws, rw + j + 2 * H, m, CDT)
    o = _ld(ws, rw + j + 3 * H, m, CDT)
    tc = lib.tanh(_ld(cy, r * s_cy + j, m, CDT))
    dc = dh * o * (1.0 - tc * tc)
    if HAS_DC:
        dc += _ld(dcy, r * s_dcy + j, m, CDT)
    _st(dgates, rd + j, dc * g * i * (1.0 - i), m)
    _st(dgates, rd + j + H, dc * _ld(cx, r * s_cx + j, m, CDT) * f * (1.0 - f), m)
    _st(dgates, rd + j + 2 * H, dc * i * (1.0 - g * g), m)
    _st(dgates, rd + j + 3 * H, dh * tc * o * (1.0 - o), m)
    _st(dcx, r * s_dcx + j, dc * f, m)


@triton.jit
def _gru_forward_kernel(
    xg, hg, bi, bh, hx, hy, ws, n, H, s_xg, s_hg, s_hx, s_hy, s_ws,
    HAS_BI: tl.constexpr, HAS_BH: tl.constexpr, CDT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    r, j, m = _tile(n, H, BLOCK_R, BLOCK_H)
    rx, rh, rw = r * s_xg, r * s_hg, r * s_ws
    rg = _sigmoid(_pre(xg, hg, bi, bh, rx, rh, j, m, HAS_BI, HAS_BH, CDT))
    z = _sigmoid(_pre(xg, hg, bi, bh, rx, rh, j + H, m, HAS_BI, HAS_BH, CDT))
    hn = _ld(hg, rh + j + 2 * H, m, CDT)
    if HAS_BH:
        hn += _ld(bh, j + 2 * H, m, CDT)
    xn = _ld(xg, rx + j + 2 * H, m, CDT)
    if HAS_BI:
        xn += _ld(bi, j + 2 * H, m, CDT)
    nn = lib.tanh(xn + rg * hn)
    h = _ld(hx, r * s_hx + j, m, CDT)
    _st(hy, r * s_hy + j, nn + z * (h - nn), m)
    _st(ws, rw + j, rg, m)
    _st(ws, rw + j + H, z, m)
    _st(ws, rw + j + 2 * H, nn, m)
    _st(ws, rw + j + 3 * H, hn, m)


@triton.jit
def _gru_backward_kernel(
    g1, g2, g3, hx, ws, dxg, dhg, dhx, n, H, s_g1, s_g2, s_g3, s_hx, s_ws, s_dxg, s_dhg, s_dhx,
    NDH: tl.constexpr, CDT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    r, j, m = _tile(n, H, BLOCK_R, BLOCK_H)
    dh = _grad_sum(g1, g2, g3, r * s_g1 + j, r * s_g2 + j, r * s_g3 + j, m, NDH, CDT)
    rw, rx, rh = r * s_ws, r * s_dxg, r * s_dhg
    rg = _ld(ws, rw + j, m, CDT)
    z = _ld(ws, rw + j + H, m, CDT)
    nn = _ld(ws, rw + j + 2 * H, m, CDT)
    hn = _ld(ws, rw + j + 3 * H, m, CDT)
    h = _ld(hx, r * s_hx + j, m, CDT)
    dz = dh * (h - nn) * z * (1.0 - z)
    dn = dh * (1.0 - z) * (1.0 - nn * nn)
    dr = dn * hn * rg * (1.0 - rg)
    _st(dxg, rx + j, dr, m)
    _st(dxg, rx + j + H, dz, m)
    _st(dxg, rx + j + 2 * H, dn, m)
    _st(dhg, rh + j, dr, m)
    _st(dhg, rh + j + H, dz, m)
    _st(dhg, rh + j + 2 * H, dn * rg, m)
    _st(dhx, r * s_dhx + j, dh * z, m)


@triton.jit
def _rnn_forward_kernel(
    xg, hg, bi, bh, hy, n, H, s_xg, s_hg, s_hy,
    HAS_BI: tl.constexpr, HAS_BH: tl.constexpr, ACT: tl.constexpr, CDT: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    r, j, m = _tile(n, H, BLOCK_R, BLOCK_H)
    v = _pre(xg, hg, bi, bh, r * s_xg, r * s_hg, j, m, HAS_BI, HAS_BH, CDT)
    if ACT == "tanh":
        v = lib.tanh(v)
    else:
        v = tl.where(v > 0, v, v * 0.0)  # relu (NaN kept: v > 0 is false for NaN, and NaN * 0 is NaN)
    _st(hy, r * s_hy + j, v, m)


@triton.jit
def _rnn_backward_kernel(
    g1, g2, g3, hy, dpre, n, H, s_g1, s_g2, s_g3, s_hy, s_dpre,
    NDH: tl.constexpr, ACT: tl.constexpr, CDT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    r, j, m = _tile(n, H, BLOCK_R, BLOCK_H)
    dh = _grad_sum(g1, g2, g3, r * s_g1 + j, r * s_g2 + j, r * s_g3 + j, m, NDH, CDT)
    h = _ld(hy, r * s_hy + j, m, CDT)
    if ACT == "tanh":
        d = dh * (1.0 - h * h)
    else:
        d = tl.where(h > 0, dh, dh * 0.0)
    _st(dpre, r * s_dpre + j, d, m)


_KERNELS = {
    "lstm": Kernel(_lstm_forward_kernel),
    "lstm_backward": Kernel(_lstm_backward_kernel),
    "gru": Kernel(_gru_forward_kernel),
    "gru_backward": Kernel(_gru_backward_kernel),
    "rnn": Kernel(_rnn_forward_kernel),
    "rnn_backward": Kernel(_rnn_backward_kernel),
}
# Each kernel's pointer arguments, in order (its row strides follow n and H in the same order).
_POINTERS = {
    "lstm": ("xg", "hg", "bi", "bh", "cx", "hy", "cy", "ws"),
    "lstm_backward": ("g1", "g2", "g3", "dcy", "cx", "cy", "ws", "dgates", "dcx"),
    "gru": ("xg", "hg", "bi", "bh", "hx", "hy", "ws"),
    "gru_backward": ("g1", "g2", "g3", "hx", "ws", "dxg", "dhg", "dhx"),
    "rnn": ("xg", "hg", "bi", "bh", "hy"),
    "rnn_backward": ("g1", "g2", "g3", "hy", "dpre"),
}
_NO_STRIDE = ("bi", "bh")  # vectors: no row stride


def _blocks(H: int) -> tuple[int, int]:
    """Hidden columns per program (a power of two up to 128) and rows to fill about 1,024 elements."""
    block_h = min(next_pow2(max(H, 1)), 128)
    return max(1, 1024 // block_h), block_h


def cell_plan(kind: str, dtype: str, H: int, row_strides: Sequence[int], consts: dict[str, object]) -> CellLaunch:
    """The launch of kernel ``kind`` ("lstm", "gru_backward", ...) for ``dtype`` (every operand's), ``H``
    hidden columns, the matrix operands' row strides (in ``_POINTERS`` order, vectors left out) and the
    flags in ``consts`` (HAS_BI / HAS_BH, NDH, HAS_DC, ACT). Returns ``launch(n, ptrs, stream)``: ``ptrs``
    in ``_POINTERS`` order (any valid address for an operand the flags leave out)."""
    kernel = _KERNELS[kind]
    if not dtype_info(dtype).is_float:
        raise TypeError(f"recurrent cell kernels take float buffers, got {dtype}")
    names = _POINTERS[kind]
    strided = [p for p in names if p not in _NO_STRIDE]
    if len(row_strides) != len(strided):
        raise ValueError(f"{kind}: expected {len(strided)} row strides, got {len(row_strides)}")
    block_r, block_h = _blocks(H)
    cdt = "float64" if dtype == "float64" else "float32"
    full = {**consts, "CDT": tl_dtype(cdt), "BLOCK_R": block_r, "BLOCK_H": block_h}
    key = (dtype, tuple(sorted(consts.items())), block_r, block_h)
    fn = kernel.cache.get(key)
    if fn is None:
        types = {p: ptr_type(dtype) for p in names}
        types.update({"n": "i32", "H": "i32", **{f"s_{p}": "i64" for p in strided}})
        fn = kernel.build(key, types, {k: full[k] for k in kernel.constexpr_names}, (), num_warps=4)
    tail = (H, *row_strides, *[full[k] for k in kernel.arg_names if k in kernel.constexpr_names])
    grid_h = cdiv(H, block_h)

    def launch(n: int, ptrs: Sequence[int], stream: int) -> None:
        if n > 0 and H > 0:
            fn((cdiv(n, block_r), grid_h, 1), stream, (*ptrs, n, *tail))

    return launch


# ------------------------------------------------------------------ entry points over buffers
def _rows(bufs: dict[str, BufferLike | None], H: int, dtype: str) -> tuple[int, list[int], list[int]]:
    """(n, pointers, row strides) of the operands, checked: matrices (n, k * H) with unit column stride."""
    n = -1
    ptrs: list[int] = []
    strides: list[int] = []
    fallback = next(b for b in bufs.values() if b is not None).ptr
    for name, b in bufs.items():
        if b is None:
            ptrs.append(fallback)
            if name not in _NO_STRIDE:
                strides.append(0)
            continue
        if b.dtype != dtype:
            raise TypeError(f"recurrent cell: {name} is {b.dtype}, expected {dtype}")
        ptrs.append(b.ptr)
        if name in _NO_STRIDE:
            if len(b.shape) != 1 or (b.strides[0] != 1 and b.shape[0] > 1):
                raise ValueError(f"recurrent cell: bias {name} must be a dense vector, got {tuple(b.shape)}")
            continue
        bad_cols = H > 0 and b.shape[-1] % H != 0
        if len(b.shape) != 2 or (b.strides[1] != 1 and b.shape[1] > 1) or bad_cols:
            raise ValueError(f"recurrent cell: {name} must be (rows, k * {H}) with unit column stride, got "
                             f"shape {tuple(b.shape)} strides {tuple(b.strides)}")  # fmt: skip
        if n >= 0 and b.shape[0] != n:
            raise ValueError(f"recurrent cell: {name} has {b.shape[0]} rows, expected {n}")
        n = b.shape[0]
        strides.append(b.strides[0])
    return max(n, 0), ptrs, strides


def _run(kind: str, bufs: dict[str, BufferLike | None], H: int, consts: dict[str, object], stream: int) -> None:
    dtype = next(b for b in bufs.values() if b is not None).dtype
    n, ptrs, strides = _rows(bufs, H, dtype)
    cell_plan(kind, dtype, H, strides, consts)(n, ptrs, stream)


def _grads(grads: Sequence[BufferLike | None]) -> dict[str, BufferLike | None]:
    """Up to three incoming gradients, the present ones first (the kernel sums the first NDH)."""
    present = [g for g in grads if g is not None]
    if len(present) > 3:
        raise ValueError("recurrent cell backward takes at most three incoming gradients")
    return {f"g{k + 1}": (present[k] if k < len(present) else None) for k in range(3)}


def lstm_cell(
    input_gates: BufferLike,
    hidden_gates: BufferLike,
    cx: BufferLike,
    hy: BufferLike,
    cy: BufferLike,
    workspace: BufferLike,
    *,
    input_bias: BufferLike | None = None,
    hidden_bias: BufferLike | None = None,
    stream: int = 0,
) -> None:
    """One LSTM step from the gate pre-activations (n, 4H): writes hy, cy (n, H) and the activated gates."""
    H = cx.shape[1]
    bufs = {"xg": input_gates, "hg": hidden_gates, "bi": input_bias, "bh": hidden_bias}
    bufs.update({"cx": cx, "hy": hy, "cy": cy, "ws": workspace})
    _run("lstm", bufs, H, {"HAS_BI": input_bias is not None, "HAS_BH": hidden_bias is not None}, stream)


def lstm_cell_backward(
    grad_hy: Sequence[BufferLike | None],
    grad_cy: BufferLike | None,
    cx: BufferLike,
    cy: BufferLike,
    workspace: BufferLike,
    grad_gates: BufferLike,
    grad_cx: BufferLike,
    *,
    stream: int = 0,
) -> None:
    """The gradients of the gate pre-activations (n, 4H) and of cx, from those of hy (summed, up to three) and cy."""
    g = _grads(grad_hy)
    ndh = sum(v is not None for v in g.values())
    bufs = {**g, "dcy": grad_cy, "cx": cx, "cy": cy, "ws": workspace, "dgates": grad_gates, "dcx": grad_cx}
    _run("lstm_backward", bufs, cx.shape[1], {"NDH": ndh, "HAS_DC": grad_cy is not None}, stream)


def gru_cell(
    input_gates: BufferLike,
    hidden_gates: BufferLike,
    hx: BufferLike,
    hy: BufferLike,
    workspace: BufferLike,
    *,
    input_bias: BufferLike | None = None,
    hidden_bias: BufferLike | None = None,
    stream: int = 0,
) -> None:
    """One GRU step from x @ W_ih^T and h @ W_hh^T (n, 3H, biases apart): writes hy and (r, z, n, hn) (n, 4H)."""
    bufs = {"xg": input_gates, "hg": hidden_gates, "bi": input_bias, "bh": hidden_bias}
    bufs.update({"hx": hx, "hy": hy, "ws": workspace})
    _run("gru", bufs, hx.shape[1], {"HAS_BI": input_bias is not None, "HAS_BH": hidden_bias is not None}, stream)


def gru_cell_backward(
    grad_hy: Sequence[BufferLike | None],
    hx: BufferLike,
    workspace: BufferLike,
    grad_input_gates: BufferLike,
    grad_hidden_gates: BufferLike,
    grad_hx: BufferLike,
    *,
    stream: int = 0,
) -> None:
    """Gradients of both gate products (n, 3H) and the direct part of hx's (dh * z) from hy's (summed)."""
    g = _grads(grad_hy)
    ndh = sum(v is not None for v in g.values())
    bufs = {**g, "hx": hx, "ws": workspace, "dxg": grad_input_gates, "dhg": grad_hidden_gates, "dhx": grad_hx}
    _run("gru_backward", bufs, hx.shape[1], {"NDH": ndh}, stream)


def rnn_cell(
    input_gates: BufferLike,
    hidden_gates: BufferLike,
    hy: BufferLike,
    activation: str,
    *,
    input_bias: BufferLike | None = None,
    hidden_bias: BufferLike | None = None,
    stream: int = 0,
) -> None:
    """``hy = act(input_gates + hidden_gates + biases)`` for an Elman cell, act "tanh" or "relu"."""
    _check_activation(activation)
    bufs = {"xg": input_gates, "hg": hidden_gates, "bi": input_bias, "bh": hidden_bias, "hy": hy}
    flags = {"HAS_BI": input_bias is not None, "HAS_BH": hidden_bias is not None, "ACT": activation}
    _run("rnn", bufs, hy.shape[1], flags, stream)


def rnn_cell_backward(
    grad_hy: Sequence[BufferLike | None], hy: BufferLike, grad_pre: BufferLike, activation: str, *, stream: int = 0
) -> None:
    """``grad_pre = (sum of grad_hy) * act'(pre)``, act' read from the output ``hy``."""
    _check_activation(activation)
    g = _grads(grad_hy)
    ndh = sum(v is not None for v in g.values())
    _run("rnn_backward", {**g, "hy": hy, "dpre": grad_pre}, hy.shape[1], {"NDH": ndh, "ACT": activation}, stream)


def _check_activation(activation: str) -> None:
    if activation not in RNN_ACTIVATIONS:
        raise ValueError(f"unknown RNN activation {activation!r}; expected one of {RNN_ACTIVATIONS}")
