"""Recurrent cell kernels (LSTM, GRU, Elman tanh / relu; forward and backward) against float64 torch math.

Operands are row blocks of wider buffers (their own row strides, as a time step's rows inside a sequence),
outputs are poisoned with NaN, so an element the kernel never writes fails. Tiny sizes: the interpreter.
"""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import buf, make, sync

import genesis_kernels as gk

TOL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2e-2}


def rows(n: int, cols: int, dtype: str, device: str, pad: int = 3) -> torch.Tensor:
    """Random (n, cols) values seen inside a wider buffer: a row stride of cols + pad."""
    return make((n, cols + pad), dtype, device, low=-2.0, high=2.0)[:, :cols]


def poisoned(n: int, cols: int, like: torch.Tensor, pad: int = 0) -> torch.Tensor:
    return torch.full((n, cols + pad), float("nan"), dtype=like.dtype, device=like.device)[:, :cols]


def close(got: torch.Tensor, want: torch.Tensor, dtype: str) -> None:
    got, want = got.double().cpu(), want.double().cpu()
    assert not got.isnan().any(), "an output element was not written"
    err = (got - want).norm() / want.norm().clamp_min(1e-30)
    assert err <= TOL[dtype], f"relative error {err:.3e} > {TOL[dtype]}"


def vjp(fn, inputs: list[torch.Tensor], grads: list[torch.Tensor]) -> list[torch.Tensor]:
    """float64 torch autograd: the gradients of ``inputs`` through ``fn`` given the outputs' ``grads``."""
    xs = [x.detach().double().cpu().requires_grad_() for x in inputs]
    outs = fn(*xs)
    torch.autograd.backward(outs, [g.double().cpu() for g in grads])
    return [x.grad for x in xs]


def lstm_ref(xg, hg, cx, bi=None, bh=None):
    gates = xg + hg + (0 if bi is None else bi) + (0 if bh is None else bh)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def gru_ref(xg, hg, hx, bi=None, bh=None):
    xg = xg + (0 if bi is None else bi)
    hg = hg + (0 if bh is None else bh)
    xr, xz, xn = xg.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * hx, torch.cat([r, z, n, hn], 1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("n,H,bias", [(3, 5, True), (1, 1, False), (4, 130, True)])
def test_lstm_cell_forward_and_backward(device: str, dtype: str, n: int, H: int, bias: bool) -> None:
    xg, hg, cx = rows(n, 4 * H, dtype, device), rows(n, 4 * H, dtype, device), rows(n, H, dtype, device)
    bi, bh = (make((4 * H,), dtype, device), make((4 * H,), dtype, device)) if bias else (None, None)
    hy, cy, ws = poisoned(n, H, xg, 2), poisoned(n, H, xg), poisoned(n, 4 * H, xg, 1)
    gk.lstm_cell(buf(xg), buf(hg), buf(cx), buf(hy), buf(cy), buf(ws),
                 input_bias=None if bi is None else buf(bi), hidden_bias=None if bh is None else buf(bh))  # fmt: skip
    sync(device)
    d = [t.double().cpu() if t is not None else None for t in (xg, hg, cx, bi, bh)]
    want_h, want_c, want_ws = lstm_ref(*d)
    close(hy, want_h, dtype)
    close(cy, want_c, dtype)
    close(ws, want_ws, dtype)

    # backward: two gradients of hy (the output's and the recurrence's) and one of cy
    g1, g2, dcy = rows(n, H, dtype, device), rows(n, H, dtype, device), rows(n, H, dtype, device)
    dgates, dcx = poisoned(n, 4 * H, xg, 1), poisoned(n, H, xg)
    gk.lstm_cell_backward([buf(g1), buf(g2)], buf(dcy), buf(cx), buf(cy), buf(ws), buf(dgates), buf(dcx))
    sync(device)
    want = vjp(lambda gates, c: lstm_ref(gates, torch.zeros_like(gates), c)[:2], [xg + hg + (bi + bh if bias else 0),
               cx], [g1.double() + g2.double(), dcy])  # fmt: skip
    close(dgates, want[0], dtype)
    close(dcx, want[1], dtype)


@pytest.mark.parametrize("ngrads,with_dc", [(0, True), (1, False), (3, True)])
def test_lstm_cell_backward_optional_gradients(device: str, ngrads: int, with_dc: bool) -> None:
    n, H, dtype = 2, 6, "float64"
    xg, cx = rows(n, 4 * H, dtype, device), rows(n, H, dtype, device)
    hy, cy, ws = poisoned(n, H, xg), poisoned(n, H, xg), poisoned(n, 4 * H, xg)
    gk.lstm_cell(buf(xg), buf(xg), buf(cx), buf(hy), buf(cy), buf(ws))
    grads = [rows(n, H, dtype, device) for _ in range(ngrads)]
    dcy = rows(n, H, dtype, device) if with_dc else None
    dgates, dcx = poisoned(n, 4 * H, xg), poisoned(n, H, xg)
    gk.lstm_cell_backward([buf(g) for g in grads] + [None], None if dcy is None else buf(dcy), buf(cx), buf(cy),
                          buf(ws), buf(dgates), buf(dcx))  # fmt: skip
    sync(device)
    gh = sum((g.double() for g in grads), torch.zeros(n, H, dtype=torch.float64, device=device))
    gc = dcy if dcy is not None else torch.zeros(n, H, dtype=torch.float64, device=device)
    want = vjp(lambda gates, c: lstm_ref(gates, torch.zeros_like(gates), c)[:2], [2 * xg, cx], [gh, gc])
    close(dgates, want[0], dtype)
    close(dcx, want[1], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("n,H,bias", [(3, 5, True), (2, 1, False), (3, 129, True)])
def test_gru_cell_forward_and_backward(device: str, dtype: str, n: int, H: int, bias: bool) -> None:
    xg, hg, hx = rows(n, 3 * H, dtype, device), rows(n, 3 * H, dtype, device), rows(n, H, dtype, device)
    bi, bh = (make((3 * H,), dtype, device), make((3 * H,), dtype, device)) if bias else (None, None)
    hy, ws = poisoned(n, H, xg, 1), poisoned(n, 4 * H, xg, 2)
    gk.gru_cell(buf(xg), buf(hg), buf(hx), buf(hy), buf(ws),
                input_bias=None if bi is None else buf(bi), hidden_bias=None if bh is None else buf(bh))  # fmt: skip
    sync(device)
    d = [t.double().cpu() if t is not None else None for t in (xg, hg, hx, bi, bh)]
    want_h, want_ws = gru_ref(*d)
    close(hy, want_h, dtype)
    close(ws, want_ws, dtype)

    g1, g2, g3 = (rows(n, H, dtype, device) for _ in range(3))
    dxg, dhg, dhx = poisoned(n, 3 * H, xg), poisoned(n, 3 * H, xg, 1), poisoned(n, H, xg)
    gk.gru_cell_backward([buf(g1), buf(g2), buf(g3)], buf(hx), buf(ws), buf(dxg), buf(dhg), buf(dhx))
    sync(device)
    gsum = g1.double() + g2.double() + g3.double()
    want = vjp(lambda a, b, h: gru_ref(a, b, h, *d[3:])[0], [xg, hg, hx], [gsum])
    close(dxg, want[0], dtype)
    close(dhg, want[1], dtype)
    close(dhx, gsum.cpu() * want_ws[:, H : 2 * H], dtype)  # the direct part of hx's gradient: dh * z


@pytest.mark.parametrize("act", ["tanh", "relu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rnn_cell_forward_and_backward(device: str, act: str, dtype: str) -> None:
    n, H = 3, 7
    xg, hg = rows(n, H, dtype, device), rows(n, H, dtype, device)
    bi, bh = make((H,), dtype, device), make((H,), dtype, device)
    hy = poisoned(n, H, xg, 1)
    gk.rnn_cell(buf(xg), buf(hg), buf(hy), act, input_bias=buf(bi), hidden_bias=buf(bh))
    sync(device)
    fn = torch.tanh if act == "tanh" else torch.relu
    close(hy, fn(xg.double() + hg.double() + bi.double() + bh.double()), dtype)

    g1, g2 = rows(n, H, dtype, device), rows(n, H, dtype, device)
    dpre = poisoned(n, H, xg)
    gk.rnn_cell_backward([buf(g1), buf(g2)], buf(hy), buf(dpre), act)
    sync(device)
    (want,) = vjp(fn, [xg.double() + hg.double() + bi.double() + bh.double()], [g1.double() + g2.double()])
    close(dpre, want, dtype)


def test_cell_plan_runs_rows_of_a_sequence(device: str) -> None:
    """The loop's path: one plan, launched per step on row blocks of shrinking size (packed sequences)."""
    T, B, H = 3, 4, 5
    xg = make((T * B, 4 * H), "float64", device)
    hg, cx = make((B, 4 * H), "float64", device), make((B, H), "float64", device)
    hy, cy, ws = (torch.full((T * B, c), float("nan"), dtype=torch.float64, device=device) for c in (H, H, 4 * H))
    launch = gk.cell_plan("lstm", "float64", H, (4 * H, 4 * H, H, H, H, 4 * H), {"HAS_BI": False, "HAS_BH": False})
    for t, n in enumerate((4, 2, 1)):
        off = t * B
        ptrs = [xg[off].data_ptr(), hg.data_ptr(), 0, 0, cx.data_ptr()]
        launch(n, ptrs + [hy[off].data_ptr(), cy[off].data_ptr(), ws[off].data_ptr()], 0)
    sync(device)
    for t, n in enumerate((4, 2, 1)):
        sl = slice(t * B, t * B + n)
        want = lstm_ref(xg[sl].cpu(), hg[:n].cpu(), cx[:n].cpu())
        for got, w in zip((hy[sl], cy[sl], ws[sl]), want):
            close(got, w, "float64")
        assert hy[t * B + n : (t + 1) * B].isnan().all()  # rows past n untouched


def test_bad_operands_are_refused() -> None:
    a = torch.zeros(2, 8, dtype=torch.float64)
    c = torch.zeros(2, 2, dtype=torch.float64)
    with pytest.raises(TypeError, match="float32, expected float64"):
        gk.lstm_cell(buf(a), buf(a.float()), buf(c), buf(c), buf(c), buf(a))
    with pytest.raises(ValueError, match="3 rows, expected 2"):
        gk.lstm_cell(buf(a), buf(a), buf(c), buf(torch.zeros(3, 2, dtype=torch.float64)), buf(c), buf(a))
    with pytest.raises(ValueError, match="unknown RNN activation"):
        gk.rnn_cell(buf(c), buf(c), buf(c), "gelu")
