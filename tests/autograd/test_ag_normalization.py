"""layer_norm / rms_norm (functions/normalization.py) against torch: forward values and gradients
(float64), gradcheck and gradgradcheck (the double backward goes through the Tensor-op form of the
backward), 16-bit inputs with float32 parameters, autocast, and torch's errors for bad arguments."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    CPU,
    CUDA,
    I,
    assert_fwd,
    check_forward_and_gradients,
    check_gradcheck,
    check_gradgradcheck,
    params,
    to_genesis,
    to_genesis_any_dtype,
    values,
)

import genesis
import genesis_autograd as ag


def _ln(lib, *args, **kw):
    return (torch.nn.functional if lib is torch else ag).layer_norm(*args, **kw)


def _rms(lib, *args, **kw):
    return (torch.nn.functional if lib is torch else ag).rms_norm(*args, **kw)


CASES = [
    ("layer_norm", lambda lib, x, w, b: _ln(lib, x, (5,), w, b), [I((3, 5)), I((5,)), I((5,))]),
    ("layer_norm-2dims", lambda lib, x, w, b: _ln(lib, x, (3, 4), w, b, 1e-3), [I((2, 3, 4)), I((3, 4)), I((3, 4))]),
    ("layer_norm-no-affine-t", lambda lib, x: _ln(lib, x, (3,)), [I((4, 3), layout="t")]),
    ("layer_norm-frozen-x", lambda lib, x, w, b: _ln(lib, x, (6,), w, b), [I((2, 6), rg=False), I((6,)), I((6,))]),
    ("layer_norm-1d", lambda lib, x, w: _ln(lib, x, (7,), w), [I((7,)), I((7,))]),
    ("rms_norm", lambda lib, x, w: _rms(lib, x, (5,), w), [I((3, 5)), I((5,))]),
    ("rms_norm-2dims-eps", lambda lib, x, w: _rms(lib, x, (3, 4), w, 1e-4), [I((2, 3, 4)), I((3, 4))]),
    ("rms_norm-no-weight-t", lambda lib, x: _rms(lib, x, [3]), [I((4, 3), layout="t")]),
    ("rms_norm-frozen-w", lambda lib, x, w: _rms(lib, x, (6,), w), [I((2, 6)), I((6,), rg=False)]),
]
PARAMS = params(CASES)


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")  # torch cpu: no fused path
def test_low_precision_input_with_float32_parameters(device, dtype, rms):
    """Output and dx in the input's dtype, dweight / dbias in float32, all within the dtype's tolerance.

    The reference on both devices is the float64 result of the same rounded inputs, rounded once to those
    dtypes: the cuda kernel and the cpu backend both compute a 16-bit norm in float32 and round each result
    once. (torch's own cpu result is no reference: it keeps a bf16 row's statistics in bf16 and rounds xhat
    to bf16 before dweight's row sum; against it a fresh draw failed about once in ten CI runs.)
    """
    x = values((6, 40)).to(dtype)
    w, b = values((40,)).float(), values((40,)).float()
    dy = values((6, 40)).to(dtype)
    tx, tw, tb = (t.double().requires_grad_() for t in (x, w, b))
    eps = torch.finfo(dtype).eps  # rms_norm's default for the input's dtype (the float64 copy would take its own)
    ty = torch.nn.functional.rms_norm(tx, (40,), tw, eps) if rms else torch.nn.functional.layer_norm(tx, (40,), tw, tb)
    ty.backward(dy.double())
    ref_y, ref_dx, ref_dw = ty.detach().to(dtype), tx.grad.to(dtype), tw.grad.float()
    ref_db = None if tb.grad is None else tb.grad.float()
    gx = to_genesis_any_dtype(x, device).requires_grad_()
    gw, gb = to_genesis(w, device, requires_grad=True), to_genesis(b, device, requires_grad=True)
    gy = ag.rms_norm(gx, (40,), gw) if rms else ag.layer_norm(gx, (40,), gw, gb)
    gy.backward(to_genesis_any_dtype(dy, device))
    tol = dict(rtol=1.6e-2, atol=1e-2) if dtype != torch.float32 else {}
    assert_fwd(gy, ref_y, **tol)
    assert_fwd(gx.grad, ref_dx, **tol)
    assert_fwd(gw.grad, ref_dw, **tol)
    if not rms:
        assert_fwd(gb.grad, ref_db, **tol)


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("rms", [False, True])
def test_autocast_runs_in_float32(device, rms):
    """As torch: under autocast the norms compute and return float32, gradients come back in each input's dtype."""
    x = to_genesis(values((4, 8)), device).to(genesis.bfloat16).requires_grad_()
    w = to_genesis(values((8,)), device).to(genesis.bfloat16).requires_grad_()
    with genesis.autocast(device_type=device):
        y = genesis.nn.functional.rms_norm(x, (8,), w) if rms else genesis.nn.functional.layer_norm(x, (8,), w)
    assert y.dtype == genesis.float32
    y.sum().backward()
    assert x.grad.dtype == genesis.bfloat16 and w.grad.dtype == genesis.bfloat16


@pytest.mark.parametrize("device", [CPU, CUDA])
def test_rms_norm_default_eps_is_the_dtype_epsilon(device):
    x = values((3, 4)) * 1e-5  # tiny values: eps dominates
    got = ag.rms_norm(to_genesis(x, device), (4,))
    assert_fwd(got, torch.nn.functional.rms_norm(x, (4,)))


@pytest.mark.parametrize("device", [CPU, CUDA])
def test_bad_arguments_raise_torchs_errors(device):
    x = to_genesis(values((3, 4)), device)
    for call in (
        lambda: ag.layer_norm(x, (5,)),
        lambda: ag.layer_norm(x, (4,), to_genesis(values((5,)), device)),
        lambda: ag.rms_norm(x, (4,), to_genesis(values((4,)), device).to(genesis.float16)),
        lambda: ag.layer_norm(genesis.ones(3, 4, dtype=genesis.int64, device=device), (4,)),
    ):
        with pytest.raises(RuntimeError):
            call()
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[5\]"):
        ag.layer_norm(x, 5)


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("rms", [False, True])
def test_strided_weight_and_bias(device, rms):
    """Parameters that are strided views (columns of a larger leaf): values and gradients as torch."""
    x, p = values((3, 5)), values((5, 2))
    tx, tp = x.clone().requires_grad_(), p.clone().requires_grad_()
    gx, gp = to_genesis(x, device, requires_grad=True), to_genesis(p, device, requires_grad=True)
    t_out = _rms(torch, tx, (5,), tp[:, 1]) if rms else _ln(torch, tx, (5,), tp[:, 1], tp[:, 0])
    g_out = _rms(genesis, gx, (5,), gp[:, 1]) if rms else _ln(genesis, gx, (5,), gp[:, 1], gp[:, 0])
    assert_fwd(g_out, t_out.detach())
    dy = values((3, 5))
    t_out.backward(dy)
    g_out.backward(to_genesis(dy, device))
    assert_fwd(gx.grad, tx.grad)
    assert_fwd(gp.grad, tp.grad)
