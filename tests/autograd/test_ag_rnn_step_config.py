"""The recurrent loop's step-product choices (genesis_ndarray/backends/cuda/rnn.py STEP_CONFIG and
BACKWARD_TRANSPOSED_WEIGHT) all give torch's LSTM layer: values and every gradient, float32 with TF32
allowed (the precision the choices apply to), against torch in float64."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from ag_helpers import to_genesis, values

import genesis_autograd as ag

rnn_backend = importlib.import_module("genesis_ndarray.backends.cuda.rnn")
mm = importlib.import_module("genesis_kernels.matmul")

CHOICES = {
    "auto": ("auto", False),
    "latency": ("latency", False),
    "pointer-split": (mm.PointerConfig(16, 32, 16, 4, 2, split=2), False),
    "latency-transposed-weight": ("latency", True),
    "auto-transposed-weight": ("auto", True),
}
TOL = 5e-3  # TF32 products (10-bit mantissas) on the GPU; exact under the interpreter and on the cpu


@pytest.fixture
def tf32():
    ag.set_float32_matmul_precision("high")
    yield
    ag.set_float32_matmul_precision("highest")


@pytest.mark.parametrize("choice", list(CHOICES))
def test_lstm_layer_with_step_choice(device, monkeypatch, tf32, choice):
    config, transposed = CHOICES[choice]
    T, B, I, H = 3, 4, 5, 8
    for direction in ("forward", "backward"):
        monkeypatch.setitem(rnn_backend.STEP_CONFIG, ("tf32", direction), config)
    monkeypatch.setitem(rnn_backend.BACKWARD_TRANSPOSED_WEIGHT, "tf32", transposed)
    seen = []  # (B layout: weight read transposed in place, config) of each step product (B rows) planned
    plan = rnn_backend.gk.matmul_plan

    def spy(a, b, out, **kw):  # type: ignore[no-untyped-def]
        if a.shape[1] == B:  # not the projections over all steps (T * B rows) nor the weight gradients
            seen.append((b.strides[1] == 1, kw.get("config")))
        return plan(a, b, out, **kw)

    monkeypatch.setattr(rnn_backend.gk, "matmul_plan", spy)
    layer = torch.nn.LSTM(I, H).double()
    x = values((T, B, I)).requires_grad_()
    h0, c0 = values((1, B, H)).requires_grad_(), values((1, B, H)).requires_grad_()
    out, (hn, cn) = layer(x, (h0, c0))
    wo, wh, wc = values(tuple(out.shape)), values((1, B, H)), values((1, B, H))
    ((out * wo).sum() + (hn * wh).sum() + (cn * wc).sum()).backward()

    def g(t: torch.Tensor):
        return to_genesis(t.float(), device, requires_grad=True)

    params = dict(layer.named_parameters())
    gx, gh0, gc0 = g(x.reshape(T * B, I)), g(h0[0]), g(c0[0])
    gp = {n: g(p) for n, p in params.items()}
    res = ag.rnn_layer("lstm", gx, [B] * T, gh0, gc0, gp["weight_ih_l0"], gp["weight_hh_l0"], gp["bias_ih_l0"],
                       gp["bias_hh_l0"], None)  # fmt: skip
    loss = (res[0] * g(wo.reshape(T * B, H))).sum() + (res[1] * g(wh[0])).sum() + (res[2] * g(wc[0])).sum()
    loss.backward()

    def close(got, want: torch.Tensor) -> None:
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().float().numpy(), rtol=TOL, atol=TOL)

    close(res[0], out.reshape(T * B, H))
    close(res[1], hn[0])
    close(res[2], cn[0])
    close(gx.grad, x.grad.reshape(T * B, I))
    close(gh0.grad, h0.grad[0])
    close(gc0.grad, c0.grad[0])
    for n, p in params.items():
        close(gp[n].grad, p.grad)
    if device == "cuda":  # the cpu backend has no step products of its own
        if config == "latency":
            expected = [mm.latency_config("float32", B, 4 * H, H), mm.latency_config("float32", B, H, 4 * H)]
        else:
            expected = [None if config == "auto" else config] * 2
        # forward: h @ W_hh^T, W_hh read transposed in place; backward: dgates @ W_hh, or its transposed copy
        assert seen == list(zip([True, transposed], expected))
