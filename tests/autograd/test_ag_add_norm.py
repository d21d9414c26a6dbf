"""add_rms_norm / add_layer_norm (functions/add_norm.py) against torch's eager composition
``s = residual + input; (norm(s), s)``: values and gradients in float64 with gradients through y only,
s only and both; 16-bit and mixed dtypes; autocast; the composition's fallbacks; torch's errors."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import CPU, CUDA, assert_fwd, to_genesis, to_genesis_any_dtype, values

import genesis
import genesis.nn.functional as F

TF = torch.nn.functional


def torch_add_norm(x, r, shape, w, b, eps, rms: bool):
    shape = (shape,) if isinstance(shape, int) else shape
    s = r + x
    return (TF.rms_norm(s, shape, w, eps) if rms else TF.layer_norm(s, shape, w, b, 1e-5 if eps is None else eps)), s


def genesis_add_norm(x, r, shape, w, b, eps, rms: bool):
    if rms:
        return F.add_rms_norm(x, r, shape, w, eps)
    return F.add_layer_norm(x, r, shape, w, b) if eps is None else F.add_layer_norm(x, r, shape, w, b, eps)


def run_both(device, shape, nshape, *, rms, weight=True, bias=True, use=("y", "s"), eps=None, r_grad=True):
    """Forward and backward of torch and genesis on the same float64 values; returns the pairs to compare."""
    n = nshape if isinstance(nshape, tuple) else (nshape,)
    leaves = {"x": values(shape), "r": values(shape)}
    if weight:
        leaves["w"] = values(n)
    if bias and not rms:
        leaves["b"] = values(n)
    t = {k: v.clone().requires_grad_(k != "r" or r_grad) for k, v in leaves.items()}
    g = {k: to_genesis(v, device, requires_grad=k != "r" or r_grad) for k, v in leaves.items()}
    cy, cs = values(shape), values(shape)  # the gradients that y and s receive
    ty, ts = torch_add_norm(t["x"], t["r"], nshape, t.get("w"), t.get("b"), eps, rms)
    gy, gs = genesis_add_norm(g["x"], g["r"], nshape, g.get("w"), g.get("b"), eps, rms)
    t_loss = sum((out * c).sum() for name, out, c in (("y", ty, cy), ("s", ts, cs)) if name in use)
    g_loss = None
    for name, out, c in (("y", gy, cy), ("s", gs, cs)):
        if name in use:
            term = (out * to_genesis(c, device)).sum()
            g_loss = term if g_loss is None else g_loss + term
    t_loss.backward()
    g_loss.backward()
    pairs = [(gy, ty.detach()), (gs, ts.detach())]
    for k in leaves:
        if t[k].grad is None:
            assert g[k].grad is None, f"{k}.grad: torch has none, genesis {g[k].grad}"
        else:
            pairs.append((g[k].grad, t[k].grad))
    return pairs


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
@pytest.mark.parametrize("use", [("y", "s"), ("y",), ("s",)], ids=["both", "y-only", "s-only"])
def test_values_and_gradients_match_torch(device, rms, use):
    for actual, expected in run_both(device, (3, 7), 7, rms=rms, use=use):
        assert_fwd(actual, expected)


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_two_normalized_dims_no_affine_frozen_residual_and_eps(device, rms):
    for actual, expected in run_both(device, (2, 3, 4), (3, 4), rms=rms, weight=False, eps=1e-3, r_grad=False):
        assert_fwd(actual, expected)
    for actual, expected in run_both(device, (5, 6), 6, rms=rms, bias=False, eps=1e-4):
        assert_fwd(actual, expected)


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_three_dim_stream_and_transposed_input(device, rms):
    """A (batch, seq, hidden) stream, as a transformer's; and an input that is a transposed view."""
    for actual, expected in run_both(device, (2, 3, 8), 8, rms=rms):
        assert_fwd(actual, expected)
    x, r, w = values((6, 5)), values((5, 6)), values((6,))
    tx, tr, tw = (t.clone().requires_grad_() for t in (x, r, w))
    gx, gr, gw = (to_genesis(t, device, requires_grad=True) for t in (x, r, w))
    ty, ts = torch_add_norm(tx.t(), tr, 6, tw, None, None, rms)
    gy, gs = genesis_add_norm(gx.t(), gr, 6, gw, None, None, rms)
    (ty * ts).sum().backward()
    (gy * gs).sum().backward()
    for actual, expected in ((gy, ty.detach()), (gs, ts.detach()), (gx.grad, tx.grad), (gr.grad, tr.grad)):
        assert_fwd(actual, expected)
    assert_fwd(gw.grad, tw.grad)


# Two ulps of the dtype, relative (one rounding of the output plus one of s or of the norm's part of the
# gradient where the reference composition rounds it: torch's cpu path and genesis's cpu backend do),
# and the same absolute at unit scale for elements near zero, where dx's cancellation leaves no
# relative accuracy to speak of.
ULP2 = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10, torch.float32: 2.0**-22}


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_low_precision_against_float64(device, dtype, rms):
    """16-bit inputs and parameters: s exact (one rounding of the sum); y and every gradient within two
    ulps of the float64 composition on the same rounded inputs, rounded to the dtype."""
    x, r, w, b, cy, cs = (values(shape).to(dtype) for shape in [(6, 40)] * 2 + [(40,)] * 2 + [(6, 40)] * 2)
    s64 = (r.double() + x.double()).to(dtype).double().requires_grad_()
    w64, b64 = w.double().requires_grad_(), b.double().requires_grad_()
    y64 = TF.rms_norm(s64, (40,), w64, torch.finfo(dtype).eps) if rms else TF.layer_norm(s64, (40,), w64, b64)
    y64.backward(cy.double())
    ds64 = s64.grad + cs.double()
    gx, gr, gw, gb = (to_genesis_any_dtype(t, device).requires_grad_() for t in (x, r, w, b))
    gy, gs = F.add_rms_norm(gx, gr, 40, gw) if rms else F.add_layer_norm(gx, gr, 40, gw, gb)
    genesis.autograd.backward([gy, gs], [to_genesis_any_dtype(cy, device), to_genesis_any_dtype(cs, device)])
    tol = dict(rtol=ULP2[dtype], atol=ULP2[dtype])
    assert_fwd(gs, s64.detach().to(dtype), rtol=0, atol=0)
    centred = (s64 - (0 if rms else s64.mean(-1, keepdim=True))).detach()
    rstd = (centred.pow(2).mean(-1, keepdim=True) + (torch.finfo(dtype).eps if rms else 1e-5)).rsqrt()
    s_hat = centred * rstd
    if dtype == torch.float32:
        # y = w s_hat + b in float32 throughout: where the two terms cancel, their roundings bound the error, not
        # the small result's own ulp (1 element in 240 failed that). s_hat also carries the roundings of the two
        # float32 row statistics (mean and variance, sums over the 40-wide row): about 5 ulps of the terms at
        # worst over 2,000 draws of torch's cpu kernel, so the bound is two ulps of four times their magnitude
        terms = (w.double() * s_hat).abs() + (0 if rms else b.double().abs())
        assert_row_sum(gy.detach(), y64.detach(), 4 * terms, dtype)
    else:
        assert_fwd(gy, y64.detach().to(dtype), **tol)
    if dtype == torch.float32:
        # float32's own row reductions, not the result's one rounding, bound the input gradient's error:
        # two ulps of the magnitudes of dx = rstd (g w - mean(g w) - s_hat mean(g w s_hat)) + ds's terms
        gw_ = (cy.double() * w.double()).abs()
        terms = gw_ + s_hat.abs() * (gw_ * s_hat.abs()).mean(-1, keepdim=True)
        if not rms:
            terms = terms + gw_.mean(-1, keepdim=True)
        magnitude = rstd * terms + cs.double().abs()
        assert_row_sum(gx.grad, ds64, magnitude, dtype)
        assert_row_sum(gr.grad, ds64, magnitude, dtype)
    else:
        assert_fwd(gx.grad, ds64.to(dtype), **tol)
        assert_fwd(gr.grad, ds64.to(dtype), **tol)
    # dweight / dbias are row sums: each term may carry a rounding (torch's cpu path rounds xhat to the
    # dtype before the sum), so the bound is two ulps of the sum of the terms' magnitudes.
    assert_row_sum(gw.grad, w64.grad, (cy.double() * s_hat).abs().sum(0), dtype)
    if not rms:
        assert_row_sum(gb.grad, b64.grad, cy.double().abs().sum(0), dtype)


def assert_row_sum(actual, expected: torch.Tensor, magnitude: torch.Tensor, dtype: torch.dtype) -> None:
    """``actual`` (of ``dtype``) within two ulps of ``expected`` plus two ulps of ``magnitude``, the sum of the
    magnitudes of the terms it was computed from (each may carry a rounding)."""
    assert actual.dtype.torch == dtype
    got = torch.from_numpy(actual.float().cpu().numpy()).double()
    bound = ULP2[dtype] * (expected.abs() + magnitude)
    assert ((got - expected).abs() <= bound).all(), ((got - expected).abs() / bound).max()


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_float32_stream_plus_bfloat16_input_promotes_as_torch(device, rms):
    x, r, w = values((4, 24)).bfloat16(), values((4, 24)).float(), values((24,)).float()
    tx, tr, tw = (t.clone().requires_grad_() for t in (x, r, w))
    ty, ts = torch_add_norm(tx, tr, (24,), tw, None, None, rms)
    (ty.sum() + (ts * ts).sum()).backward()
    gx, gr, gw = (to_genesis_any_dtype(t, device).requires_grad_() for t in (x, r, w))
    gy, gs = genesis_add_norm(gx, gr, 24, gw, None, None, rms)
    (gy.sum() + (gs * gs).sum()).backward()
    assert gs.dtype == genesis.float32 and gy.dtype == genesis.float32
    assert gx.grad.dtype == genesis.bfloat16 and gr.grad.dtype == genesis.float32
    for actual, expected in ((gy, ty), (gs, ts), (gr.grad, tr.grad), (gw.grad, tw.grad)):
        assert_fwd(actual, expected.detach(), rtol=1e-5, atol=1e-5)
    assert_fwd(gx.grad, tx.grad, rtol=2.0**-7, atol=2.0**-7)  # one bf16 rounding of the same float32 value
    # the bf16 addend's gradient, written by the backward's own pass, is the float32 one rounded once
    assert torch.equal(torch.from_numpy(gx.grad.float().cpu().numpy()),
                       torch.from_numpy(gr.grad.to(genesis.bfloat16).float().cpu().numpy()))  # fmt: skip


@pytest.mark.parametrize("device", [CPU, CUDA])
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "layer"])
def test_autocast_norm_in_float32_add_in_the_inputs_dtype(device, rms):
    """As genesis's norms under autocast: y float32 (from s as stored), s bf16, gradients in the inputs' dtypes."""
    x, r, w = (values(shape).bfloat16() for shape in ((4, 8), (4, 8), (8,)))
    gx, gr, gw = (to_genesis_any_dtype(t, device).requires_grad_() for t in (x, r, w))
    cx, cr, cw = (to_genesis_any_dtype(t, device).requires_grad_() for t in (x, r, w))
    with genesis.autocast(device_type=device, dtype=genesis.bfloat16):
        gy, gs = genesis_add_norm(gx, gr, 8, gw, None, None, rms)
        cs = cr + cx  # the composition genesis ran before: the add, then the norm (float32 under autocast)
        cy = F.rms_norm(cs, (8,), cw) if rms else F.layer_norm(cs, (8,), cw)
    assert (gy.dtype, gs.dtype) == (genesis.float32, genesis.bfloat16)
    (gy.sum() + gs.float().sum()).backward()
    (cy.sum() + cs.float().sum()).backward()
    assert_fwd(gy, torch.from_numpy(cy.detach().cpu().numpy()))
    for actual, expected in ((gx.grad, cx.grad), (gr.grad, cr.grad), (gw.grad, cw.grad)):
        assert actual.dtype == genesis.bfloat16
        torch.testing.assert_close(actual.float().cpu().numpy(), expected.float().cpu().numpy(), rtol=2**-7, atol=2**-7)


@pytest.mark.parametrize("device", [CPU, CUDA])
def test_rms_default_eps_and_broadcasting_input(device):
    """eps=None is finfo(dtype).eps (tiny values: it dominates); an input that only broadcasts against the
    residual goes through the composition, with torch's results."""
    x, r, w = values((3, 4)) * 1e-5, values((3, 4)) * 1e-5, values((4,))
    gy, gs = F.add_rms_norm(to_genesis(x, device), to_genesis(r, device), 4, to_genesis(w, device))
    assert_fwd(gy, TF.rms_norm(r + x, (4,), w))
    bias_row = values((4,))
    gy, gs = F.add_layer_norm(to_genesis(bias_row, device), to_genesis(r, device), 4)
    assert_fwd(gs, r + bias_row)
    assert_fwd(gy, TF.layer_norm(r + bias_row, (4,)))


@pytest.mark.parametrize("device", [CPU, CUDA])
def test_bad_arguments_raise_torchs_errors(device):
    x, r = to_genesis(values((3, 4)), device), to_genesis(values((3, 5)), device)
    with pytest.raises(RuntimeError, match="must match the size"):
        F.add_rms_norm(x, r, 4)
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[5\]"):
        F.add_layer_norm(x, x, 5)
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.add_rms_norm(x, x, 4, to_genesis(values((5,)), device))
    with pytest.raises(RuntimeError, match="Expected bias to be of same shape"):
        F.add_layer_norm(x, x, 4, None, to_genesis(values((3,)), device))
    with pytest.raises(RuntimeError, match="expected weight to have the input's dtype"):
        F.add_rms_norm(x, x, 4, to_genesis(values((4,)), device).to(genesis.float16))


@pytest.mark.parametrize("device", [CUDA])
def test_device_mismatch_raises(device):
    x = to_genesis(values((3, 4)), device)
    w = to_genesis(values((4,)), "cpu")
    with pytest.raises(RuntimeError, match="same device"):
        F.add_rms_norm(x, to_genesis(values((3, 4)), "cpu"), 4)
    with pytest.raises(RuntimeError, match="same device"):
        F.add_rms_norm(x, x, 4, w)


@pytest.mark.parametrize("device", [CPU, CUDA])
def test_in_place_change_of_s_and_double_backward_are_refused(device):
    x, r = to_genesis(values((2, 4)), device, requires_grad=True), to_genesis(values((2, 4)), device)
    y, s = F.add_rms_norm(x, r, 4)
    s.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y, s = F.add_rms_norm(x, r, 4)
    with pytest.raises(RuntimeError, match="not differentiable"):
        genesis.autograd.grad(y.sum(), x, create_graph=True)
