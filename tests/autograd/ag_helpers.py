"""Shared helpers of the autograd tests (one file per op family, test_ag_<family>.py): devices, tensors
made from the same values in torch and genesis, and the parity harness of the case tables."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
import genesis_autograd
from device_support import requires_cuda
from genesis.autograd import gradcheck, gradgradcheck

CPU = "cpu"
CUDA = pytest.param("cuda", marks=requires_cuda)

TOL = {
    torch.float64: dict(rtol=1e-7, atol=1e-9),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
}


def values(shape, domain: str = "any", dtype=torch.float64) -> torch.Tensor:
    """Fresh random values for an op's input (never zeros, but for "zeros").

    any: normal, kept away from 0 (so relu / abs / sign have a gradient); pos: uniform in [0.5, 2);
    ties: small integers, so that max / maximum see equal elements; small: |x| < 1.1 (for tan);
    zeros: "any" with zeros in rows 1 and 2 of a 2-d input (rows with no, one and two zeros, for
    prod / cumprod along dim 1; columns 0..2 of the transpose).
    """
    if domain == "small":
        return (torch.rand(shape, dtype=torch.float64) * 2.2 - 1.1).to(dtype)
    if domain == "zeros":
        t = values(shape, dtype=dtype)
        t[1, 2] = 0
        t[2, 0] = t[2, 3] = 0
        return t
    if domain == "pos":
        return (torch.rand(shape, dtype=torch.float64) * 1.5 + 0.5).to(dtype)
    if domain == "ties":
        return torch.randint(-2, 3, shape).to(dtype)
    t = torch.randn(shape, dtype=torch.float64)
    t = t + 0.05 * torch.where(t >= 0, 1.0, -1.0)  # |t| >= 0.05, and still no ties between draws
    return t.to(dtype)


def to_genesis(t: torch.Tensor, device, requires_grad: bool = False) -> genesis.Tensor:
    """A genesis leaf with the values (and the dtype) of a torch tensor."""
    return genesis.tensor(t.detach().cpu().numpy(), device=device, requires_grad=requires_grad)


def leaf(shape, device, domain="any"):
    """(torch leaf, genesis leaf) with the same fresh values, both requiring grad."""
    v = values(shape, domain)
    return v.clone().requires_grad_(), to_genesis(v, device, requires_grad=True)


def assert_close(actual, expected: torch.Tensor, **tol) -> None:
    """A genesis Tensor equals a torch tensor: shape, dtype and values."""
    assert tuple(actual.shape) == tuple(expected.shape), (tuple(actual.shape), tuple(expected.shape))
    assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
    tol = tol or TOL.get(expected.dtype, dict(rtol=0, atol=0))
    got = torch.from_numpy(np.array(actual.detach().cpu().numpy()))
    torch.testing.assert_close(got, expected.detach().cpu(), **tol)


def make_inputs(specs, device):
    """Leaves (torch, genesis) and the op inputs, from (shape, requires_grad, domain, layout) specs.

    Layout "t" stores the transposed shape and hands the op a transposed (non-contiguous) view.
    """
    t_leaves, g_leaves, t_inputs, g_inputs = [], [], [], []
    for shape, rg, domain, layout in specs:
        stored = shape[:-2] + (shape[-1], shape[-2]) if layout == "t" else shape
        v = values(stored, domain)
        tl = v.clone().requires_grad_(rg)
        gl = to_genesis(v, device, requires_grad=rg)
        t_leaves.append(tl)
        g_leaves.append(gl)
        t_inputs.append(tl.mT if layout == "t" else tl)
        g_inputs.append(gl.mT if layout == "t" else gl)
        if layout == "t":
            assert not g_inputs[-1].is_contiguous()
    return t_leaves, g_leaves, t_inputs, g_inputs


# ---------------------------------------------------------------- forward in any dtype
FWD_TOL = {
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float16: dict(rtol=2e-3, atol=1e-4),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-3),
}


def to_genesis_any_dtype(t, device):
    """to_genesis for any dtype (numpy has no bfloat16: go through float32)."""
    if t.dtype == torch.bfloat16:
        return to_genesis(t.float(), device).to(genesis.bfloat16)
    return to_genesis(t, device)


def assert_fwd(actual, expected, **tol):
    """assert_close for any dtype: the dtype compared exactly, bfloat16 values through float32."""
    if expected.dtype == torch.bfloat16:
        assert actual.dtype == genesis.bfloat16, actual.dtype
        actual, expected = actual.float(), expected.float()
    assert_close(actual, expected, **tol)


# ---------------------------------------------------------------- the parity harness of the case tables
# A case is (id, fn(lib, *inputs), input specs): fn runs alike on torch and on genesis (``lib``), and
# each input is (shape, requires_grad, domain, layout). Inputs that need no gradient come first in
# many cases (the bug class where gradients go to the wrong input), layout "t" feeds a transposed
# (non-contiguous) view of the leaf, and shapes broadcast.
def I(shape, rg=True, domain="any", layout="c"):  # noqa: E743 - a compact spec constructor
    return (tuple(shape), rg, domain, layout)


def params(cases, devices=("cpu", "cuda")):
    """pytest params (case, device), with ids "<case>-<device>"; cuda ones skipped where there is none."""
    return [
        pytest.param(c, d, id=f"{c[0]}-{d}", marks=requires_cuda if d == "cuda" else ()) for c in cases for d in devices
    ]


def _outputs(out):
    return list(out) if isinstance(out, tuple | list) else [out]


def check_forward_and_gradients(case, device, **tol) -> None:
    """Forward values and every input's gradient against torch (float64 unless ``tol`` says otherwise)."""
    _, fn, specs = case
    t_leaves, g_leaves, t_inputs, g_inputs = make_inputs(specs, device)
    t_out, g_out = _outputs(fn(torch, *t_inputs)), _outputs(fn(genesis, *g_inputs))
    assert len(t_out) == len(g_out)
    for g, t in zip(g_out, t_out):
        assert_close(g, t, **tol)
        assert g.requires_grad == t.requires_grad
        assert g.device == genesis_autograd.resolve_device(device)
    # weight each output by fresh random values, so every gradient element is distinct
    weights = [values(tuple(t.shape)) for t in t_out]
    sum(((t * w).sum() for t, w in zip(t_out, weights)), torch.zeros((), dtype=torch.float64)).backward()
    total = None
    for g, w in zip(g_out, weights):
        term = (g * to_genesis(w, device)).sum()
        total = term if total is None else total + term
    total.backward()
    for tl, gl in zip(t_leaves, g_leaves):
        if tl.requires_grad:
            assert gl.grad is not None
            assert gl.grad.device == gl.device and not gl.grad.requires_grad
            assert_close(gl.grad, tl.grad, **tol)
        else:
            assert gl.grad is None


def _checked(case, device):
    """The case's fn over genesis leaves (transposed where the layout says so), and the leaves."""
    _, fn, specs = case
    _, leaves, _, _ = make_inputs(specs, device)
    layouts = [layout for *_, layout in specs]

    def wrapped(*xs):
        return fn(genesis, *[x.mT if layout == "t" else x for x, layout in zip(xs, layouts)])

    return wrapped, leaves


def check_gradcheck(case, device) -> None:
    fn, leaves = _checked(case, device)
    assert gradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


def check_gradgradcheck(case, device) -> None:
    fn, leaves = _checked(case, device)
    assert gradgradcheck(fn, leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


# ---------------------------------------------------------------- the harness of the index-like ops
def index_tensor(t: torch.Tensor, device) -> genesis.Tensor:
    """An index / mask tensor (no grad) with t's values."""
    return genesis.tensor(t.numpy(), device=device)


def compare(device, fn, leaves, consts=(), genesis_fn=None):
    """fn(*leaves, *consts) in torch and in genesis (or ``genesis_fn`` there): the forward values and every
    leaf's gradient agree (a leaf that does not require grad gets none). Tuple results: their first item."""
    t_leaves = [x.detach().clone().requires_grad_(x.requires_grad) for x in leaves]
    g_leaves = [to_genesis(x, device, requires_grad=x.requires_grad) for x in leaves]
    yt = fn(*t_leaves, *consts)
    yg = (genesis_fn or fn)(*g_leaves, *[index_tensor(c, device) for c in consts])
    yt, yg = (yt[0], yg[0]) if isinstance(yt, tuple) else (yt, yg)
    assert_close(yg, yt)
    gt = values(tuple(yt.shape))
    yt.backward(gt)
    yg.backward(to_genesis(gt, device))
    for xt, xg in zip(t_leaves, g_leaves):
        if xt.grad is not None:
            assert_close(xg.grad, xt.grad)
        else:  # not requiring grad, or not used
            assert xg.grad is None
    return yg


def assert_inplace_forms_match_torch(device, forms) -> None:
    """Each (name, args) in ``forms``: x.<name>(*args) returns x and writes torch's values into it;
    "b" in args stands for a second tensor."""
    ta, tb = values((3, 4), "pos"), values((3, 4), "pos")
    for name, args in forms:
        t, g = ta.clone(), to_genesis(ta, device)
        t_args = [tb if x == "b" else x for x in args]
        g_args = [to_genesis(tb, device) if x == "b" else x for x in args]
        assert getattr(g, name)(*g_args) is g
        getattr(t, name)(*t_args)
        assert_close(g, t)
