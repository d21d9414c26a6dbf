"""layer_norm / rms_norm over the last dim and their backward, as NDArray ops, against torch."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, to_torch

F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16


def _torch_grads(x, w, b, dy, rms: bool, eps: float):
    """torch's output and gradients, computed in float64 from the same values, cast back."""
    xx = x.double().requires_grad_()
    ww = None if w is None else w.double().requires_grad_()
    bb = None if b is None else b.double().requires_grad_()
    n = x.shape[-1:]
    y = torch.nn.functional.rms_norm(xx, n, ww, eps) if rms else torch.nn.functional.layer_norm(xx, n, ww, bb, eps)
    y.backward(dy.double())
    grads = [
        xx.grad.to(x.dtype),
        None if w is None else ww.grad.to(w.dtype),
        None if b is None else bb.grad.to(b.dtype),
    ]
    return y.detach().to(x.dtype), grads


@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 33)])
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("rms", [False, True])
def test_norm_forward_backward(device, shape, dtype, rms):
    eps = 1e-5
    x, dy = random_tensor(shape, dtype), random_tensor(shape, dtype)
    w = random_tensor(shape[-1:], dtype)
    b = None if rms else random_tensor(shape[-1:], dtype)
    ref, (gx, gw, gb) = _torch_grads(x, w, b, dy, rms, eps)
    a, aw, ab, ady = (None if t is None else from_torch(t, device) for t in (x, w, b, dy))
    if rms:
        out, rstd = a.rms_norm(aw, eps)
        dx, dw = a.rms_norm_backward(ady, aw, rstd)
        db = None
        var = (x.double() ** 2).mean(-1)
    else:
        out, mean, rstd = a.layer_norm(aw, ab, eps)
        dx, dw, db = a.layer_norm_backward(ady, aw, ab, mean, rstd)
        assert_same(mean, x.double().mean(-1).to(mean.dtype.torch))
        var = x.double().var(-1, unbiased=False)
    assert rstd.dtype.torch == (F64 if dtype == F64 else F32) and tuple(rstd.shape) == shape[:-1]
    assert_same(rstd, (var + eps).rsqrt().to(rstd.dtype.torch), rtol=1e-5, atol=1e-6)
    assert_same(out, ref)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == F32 else {}  # dweight sums over the rows
    assert_same(dx, gx, **tol)
    assert_same(dw, gw, **tol)
    if not rms:
        assert_same(db, gb, **tol)


def assert_rel(actual, expected, bound: float) -> None:
    """||actual - expected|| / ||expected|| <= bound (the issue's metric), dtype and shape equal."""
    got = to_torch(actual).double()
    assert actual.dtype.torch == expected.dtype and tuple(got.shape) == tuple(expected.shape)
    err = float((got - expected.double()).norm() / expected.double().norm())
    assert err <= bound, err


@pytest.mark.parametrize("rms", [False, True])
def test_norm_bf16_input_fp32_weight(device, rms):
    x, dy, w = random_tensor((4, 64), BF16), random_tensor((4, 64), BF16), random_tensor((64,), F32)
    b = None if rms else random_tensor((64,), F32)
    ref, (gx, gw, gb) = _torch_grads(x, w, b, dy, rms, 1e-6)
    a, aw, ady = from_torch(x, device), from_torch(w, device), from_torch(dy, device)
    if rms:
        out, rstd = a.rms_norm(aw, 1e-6)
        dx, dw = a.rms_norm_backward(ady, aw, rstd)
    else:
        ab = from_torch(b, device)
        out, mean, rstd = a.layer_norm(aw, ab, 1e-6)
        dx, dw, db = a.layer_norm_backward(ady, aw, ab, mean, rstd)
        assert_rel(db, gb, 1e-2)
    assert_same(out, ref)
    assert_same(dx, gx)
    # torch's cpu kernel sums dweight / dbias of a bfloat16 input in bfloat16 (the cuda kernel in
    # float32), so single elements near 0 can be far off: held to the bfloat16 bound in norm.
    assert_rel(dw, gw, 1e-2)


def test_norm_without_affine_and_gradient_flags(device):
    x, dy = random_tensor((6, 10)), random_tensor((6, 10))
    a, ady = from_torch(x, device), from_torch(dy, device)
    out, mean, rstd = a.layer_norm(None, None, 1e-5)
    assert_same(out, torch.nn.functional.layer_norm(x, (10,)))
    dx, dw, db = a.layer_norm_backward(ady, None, None, mean, rstd)
    assert dw is None and db is None
    assert_same(dx, _torch_grads(x, None, None, dy, False, 1e-5)[1][0])
    w = from_torch(random_tensor((10,)), device)
    _, dw, db = a.layer_norm_backward(ady, w, None, mean, rstd, grad_weight=False)
    assert dw is None and db is None
    out, rstd = a.rms_norm(None, 1e-5)
    dx, dw = a.rms_norm_backward(ady, None, rstd)
    assert dw is None
    assert_same(dx, _torch_grads(x, None, None, dy, True, 1e-5)[1][0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rms", [False, True])
def test_norm_non_contiguous_input(device, rms):
    """A permuted input whose leading dims do not collapse (copied), and a column-strided one (read as is)."""
    base = random_tensor((4, 6, 8))
    for t in (base.permute(1, 0, 2), base[:, :, ::2]):
        a = from_torch(base, device)
        view = a.permute((1, 0, 2)) if t.shape == (6, 4, 8) else a[:, :, ::2]
        w = random_tensor(t.shape[-1:])
        if rms:
            out, _ = view.rms_norm(from_torch(w, device), 1e-5)
            ref = torch.nn.functional.rms_norm(t, t.shape[-1:], w, 1e-5)
        else:
            out, _, _ = view.layer_norm(from_torch(w, device), None, 1e-5)
            ref = torch.nn.functional.layer_norm(t, t.shape[-1:], w, None, 1e-5)
        assert_same(out, ref)


def test_norm_empty_rows(device):
    a = from_torch(random_tensor((0, 5)), device)
    w = from_torch(random_tensor((5,)), device)
    out, mean, rstd = a.layer_norm(w, w, 1e-5)
    assert out.shape == (0, 5) and mean.shape == (0,)
    dx, dw, db = a.layer_norm_backward(from_torch(torch.zeros(0, 5), device), w, w, mean, rstd)
    assert dx.shape == (0, 5)
    assert torch.equal(to_torch(dw), torch.zeros(5)) and torch.equal(to_torch(db), torch.zeros(5))
