"""Parity harness: forward values and the gradient of every input against torch, for every
differentiable Tensor method; then gradcheck / gradgradcheck in float64.

Each case lists its inputs as (shape, requires_grad, domain, layout). Inputs that need no
gradient come first in many cases (the bug class where gradients go to the wrong input),
layout "t" feeds a transposed (non-contiguous) view of the leaf, and shapes broadcast.
"""

from __future__ import annotations

import pytest
import torch
from ag_helpers import CPU, assert_close, make_inputs, to_genesis, values

import genesis
from device_support import requires_cuda
from genesis.autograd import gradcheck, gradgradcheck


def I(shape, rg=True, domain="any", layout="c"):  # noqa: E743 - a compact spec constructor
    return (tuple(shape), rg, domain, layout)


def _setitem(lib, a, v):
    y = a * 1
    y[1:3, ::2] = v
    return y


def _setitem_scalar(lib, a):
    y = a * 2
    y[:, 1] = 0.5
    return y


def _cat(lib, a, b, c):
    return lib.cat([a, b, c], 1)


def _inplace_chain(lib, a, b):
    y = a * 1
    y.mul_(b)
    y += a
    return y.exp_()


CASES = [
    # ---- binary arithmetic, with broadcasting and no-grad inputs first
    ("add", lambda lib, a, b: a + b, [I((3, 4), False), I((3, 4))]),
    ("add-bcast", lambda lib, a, b: a + b, [I((2, 3, 4), False), I((4,))]),
    ("add-both-bcast", lambda lib, a, b: a + b, [I((3, 1)), I((1, 4))]),
    ("add-scalar", lambda lib, a: 2.5 + a, [I((3, 4))]),
    ("add-alpha", lambda lib, a, b: a.add(b, alpha=3), [I((3, 4), False), I((3, 4))]),
    ("sub", lambda lib, a, b: a - b, [I((3, 1), False), I((3, 4), True, layout="t")]),
    ("rsub", lambda lib, a: 1.5 - a, [I((4, 3), layout="t")]),
    ("mul", lambda lib, a, b: a * b, [I((4,), False), I((3, 4))]),
    ("mul-grad-first", lambda lib, a, b: a * b, [I((3, 4)), I((4,), False)]),
    ("mul-both", lambda lib, a, b: a * b, [I((2, 1, 4)), I((3, 1), layout="c")]),
    ("div", lambda lib, a, b: a / b, [I((3, 4), False), I((3, 4), domain="pos")]),
    ("div-bcast", lambda lib, a, b: a / b, [I((2, 3, 4)), I((3, 1), domain="pos")]),
    ("rdiv", lambda lib, a: 2.0 / a, [I((3, 4), domain="pos")]),
    ("pow", lambda lib, a, b: a ** b, [I((3, 4), domain="pos"), I((3, 4))]),
    ("pow-nograd-base", lambda lib, a, b: a ** b, [I((3, 4), False, "pos"), I((4,))]),
    ("pow-scalar", lambda lib, a: a ** 2.5, [I((3, 4), domain="pos")]),
    ("pow-int", lambda lib, a: a.pow(3), [I((3, 4))]),
    ("rpow", lambda lib, a: 2 ** a, [I((3, 4))]),
    ("neg", lambda lib, a: -a, [I((3, 4), layout="t")]),
    ("maximum", lambda lib, a, b: a.maximum(b), [I((3, 4), False), I((3, 4))]),
    ("maximum-ties", lambda lib, a, b: a.maximum(b), [I((3, 4), domain="ties"), I((4,), domain="ties")]),
    ("minimum", lambda lib, a, b: a.minimum(b), [I((3, 1)), I((3, 4), layout="t")]),
    ("minimum-ties", lambda lib, a, b: a.minimum(b), [I((3, 4), False, "ties"), I((3, 4), domain="ties")]),
    # ---- unary math
    ("exp", lambda lib, a: a.exp(), [I((3, 4), layout="t")]),
    ("log", lambda lib, a: a.log(), [I((3, 4), domain="pos")]),
    ("sqrt", lambda lib, a: a.sqrt(), [I((4, 3), domain="pos", layout="t")]),
    ("tanh", lambda lib, a: a.tanh(), [I((3, 4))]),
    ("sigmoid", lambda lib, a: a.sigmoid(), [I((3, 4), layout="t")]),
    ("relu", lambda lib, a: a.relu(), [I((3, 4))]),
    ("abs", lambda lib, a: a.abs(), [I((3, 4), layout="t")]),
    ("sin", lambda lib, a: a.sin(), [I((3, 4))]),
    ("cos", lambda lib, a: a.cos(), [I((3, 4))]),
    ("clamp", lambda lib, a: a.clamp(-0.5, 0.5), [I((3, 4))]),
    ("clamp-min", lambda lib, a: a.clamp(min=0.1), [I((4, 3), layout="t")]),
    ("clamp-max", lambda lib, a: a.clamp(max=-0.2), [I((3, 4))]),
    ("where", lambda lib, c, a, b: lib.where(c > 0, a, b), [I((3, 4), False), I((3, 4)), I((4,))]),
    ("where-nograd-first", lambda lib, c, a, b: lib.where(c > 0, a, b), [I((3, 1), False), I((3, 4), False),
                                                                          I((3, 4))]),
    ("where-scalar", lambda lib, c, b: lib.where(c > 0, 0.5, b), [I((3, 4), False), I((3, 4))]),
    # ---- reductions
    ("sum", lambda lib, a: a.sum(), [I((3, 4), layout="t")]),
    ("sum-dim", lambda lib, a: a.sum(1), [I((2, 3, 4))]),
    ("sum-dims-keep", lambda lib, a: a.sum((0, 2), keepdim=True), [I((2, 3, 4))]),
    ("mean", lambda lib, a: a.mean(), [I((3, 4))]),
    ("mean-dim", lambda lib, a: a.mean(-1, keepdim=True), [I((4, 3), layout="t")]),
    ("amax", lambda lib, a: a.amax(1), [I((3, 4))]),
    ("amax-ties", lambda lib, a: a.amax((0, 1)), [I((3, 4), domain="ties")]),
    ("amax-all-ties", lambda lib, a: a.amax(), [I((2, 5), domain="ties")]),
    ("max-all", lambda lib, a: a.max(), [I((3, 4))]),
    ("max-dim", lambda lib, a: a.max(1).values, [I((3, 4))]),
    ("max-dim-keep", lambda lib, a: a.max(0, keepdim=True)[0], [I((4, 3), layout="t")]),
    ("min-dim", lambda lib, a: a.min(-1).values, [I((2, 3, 4))]),
    ("var", lambda lib, a: a.var(), [I((3, 4))]),
    ("var-dim", lambda lib, a: a.var(1, keepdim=True), [I((3, 4), layout="t")]),
    ("var-unbiased-false", lambda lib, a: a.var(0, unbiased=False), [I((3, 4))]),
    ("std", lambda lib, a: a.std(1), [I((3, 4))]),
    ("logsumexp", lambda lib, a: a.logsumexp(1), [I((3, 4))]),
    ("logsumexp-dims", lambda lib, a: a.logsumexp((0, 2), keepdim=True), [I((2, 3, 4))]),
    # ---- linear algebra
    ("matmul-1d-1d", lambda lib, a, b: a @ b, [I((4,), False), I((4,))]),
    ("matmul-2d-1d", lambda lib, a, b: a @ b, [I((3, 4), False), I((4,))]),
    ("matmul-1d-2d", lambda lib, a, b: a @ b, [I((4,)), I((4, 5), False)]),
    ("matmul-2d", lambda lib, a, b: a @ b, [I((3, 4), False), I((4, 5))]),
    ("matmul-2d-both-t", lambda lib, a, b: a.matmul(b), [I((3, 4), layout="t"), I((4, 5), layout="t")]),
    ("matmul-batched", lambda lib, a, b: a @ b, [I((2, 3, 4)), I((2, 4, 5))]),
    ("matmul-bcast", lambda lib, a, b: a @ b, [I((2, 1, 3, 4), False), I((5, 4, 2))]),
    ("matmul-bcast-2d", lambda lib, a, b: a @ b, [I((2, 3, 4)), I((4, 5))]),
    ("matmul-1d-batched", lambda lib, a, b: a @ b, [I((4,)), I((2, 4, 5))]),
    ("matmul-batched-1d", lambda lib, a, b: a @ b, [I((2, 3, 4)), I((4,))]),
    ("linear", lambda lib, x, w, b: x @ w.T + b, [I((5, 4), False), I((3, 4)), I((3,))]),
    ("softmax", lambda lib, a: a.softmax(1), [I((3, 4))]),
    ("softmax-dim0-t", lambda lib, a: a.softmax(0), [I((3, 4), layout="t")]),
    ("log_softmax", lambda lib, a: a.log_softmax(-1), [I((2, 3, 4))]),
    ("log_softmax-dim1", lambda lib, a: a.log_softmax(1), [I((2, 3, 4))]),
    # ---- layout
    ("reshape", lambda lib, a: a.reshape(4, 3), [I((3, 4))]),
    ("reshape-t", lambda lib, a: a.reshape(-1), [I((3, 4), layout="t")]),
    ("view", lambda lib, a: a.view(2, 6), [I((3, 4))]),
    ("permute", lambda lib, a: a.permute(2, 0, 1), [I((2, 3, 4))]),
    ("transpose", lambda lib, a: a.transpose(0, 2), [I((2, 3, 4))]),
    ("T-mT", lambda lib, a: a.T * 2 + a.mT, [I((3, 3))]),
    ("expand", lambda lib, a: a.expand(2, 3, 4), [I((3, 1))]),
    ("expand-t", lambda lib, a: a.expand(2, 4, 3), [I((4, 3), layout="t")]),
    ("squeeze", lambda lib, a: a.squeeze(), [I((3, 1, 4, 1))]),
    ("squeeze-dim", lambda lib, a: a.squeeze(1), [I((3, 1, 4))]),
    ("unsqueeze", lambda lib, a: a.unsqueeze(1), [I((3, 4), layout="t")]),
    ("flatten", lambda lib, a: a.flatten(1), [I((2, 3, 4))]),
    ("narrow", lambda lib, a: a.narrow(1, 1, 2), [I((3, 4))]),
    ("narrow-t", lambda lib, a: a.narrow(0, 1, 2), [I((3, 4), layout="t")]),
    ("getitem-basic", lambda lib, a: a[1:, None, ::2], [I((3, 4))]),
    ("getitem-int-ellipsis", lambda lib, a: a[-1, ..., 1:3], [I((2, 3, 4))]),
    ("getitem-t", lambda lib, a: a[::2, 1], [I((3, 4), layout="t")]),
    ("setitem", _setitem, [I((3, 4)), I((2, 2))]),
    ("setitem-nograd-base", _setitem, [I((3, 4), False), I((2,))]),
    ("setitem-nograd-value", _setitem, [I((3, 4)), I((2, 2), False)]),
    ("setitem-scalar", _setitem_scalar, [I((3, 4))]),
    ("cat", _cat, [I((2, 3), False), I((2, 2)), I((2, 4), layout="t")]),
    ("cat-dim0", lambda lib, a, b: lib.cat([a, b]), [I((2, 3)), I((1, 3))]),
    ("stack", lambda lib, a, b: lib.stack([a, b], 1), [I((3, 4), False), I((3, 4))]),
    ("stack-neg", lambda lib, a, b: lib.stack([a, b], -1), [I((3, 4)), I((3, 4), layout="t")]),
    ("split", lambda lib, a: a.split(2, 1), [I((3, 5))]),
    ("split-sizes", lambda lib, a: a.split([1, 3], 0), [I((4, 3))]),
    ("chunk", lambda lib, a: a.chunk(3, -1), [I((2, 7))]),
    ("clone-contiguous", lambda lib, a: a.contiguous().clone() * 3, [I((3, 4), layout="t")]),
    ("to-float32", lambda lib, a: a.to(lib.float32).exp().to(lib.float64), [I((3, 4))]),
    ("inplace-chain", _inplace_chain, [I((3, 4)), I((4,))]),
]

# Advanced indexing with repeated integer indices (gradients must accumulate): cpu only for now.
CPU_ONLY_CASES = [
    ("getitem-repeated", lambda lib, a: a[lib.tensor([0, 2, 0, 0])], [I((3, 4))]),
    ("getitem-repeated-2d", lambda lib, a: a[lib.tensor([1, 1, 0]), lib.tensor([3, 3, 2])], [I((3, 4))]),
    ("getitem-mixed", lambda lib, a: a[:, lib.tensor([[0, 1], [1, 1]])], [I((3, 4), layout="t")]),
    ("getitem-mask", lambda lib, a: a[a > 0], [I((3, 4))]),
]

def _params(cases, devices=("cpu", "cuda")):
    return [pytest.param(c, d, id=f"{c[0]}-{d}", marks=requires_cuda if d == "cuda" else ())
            for c in cases for d in devices]


PARAMS = _params(CASES)
PARAMS += _params(CPU_ONLY_CASES, ("cpu",))


def _make_inputs(specs, device):
    return make_inputs(specs, device, values)


def _outputs(out):
    return list(out) if isinstance(out, tuple | list) else [out]


# Cases that go through a float32 intermediate are compared with float32's tolerance.
CASE_TOL = {"to-float32": dict(rtol=1.3e-6, atol=1e-6)}


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    name, fn, specs = case
    tol = CASE_TOL.get(name, {})
    t_leaves, g_leaves, t_inputs, g_inputs = _make_inputs(specs, device)
    t_out, g_out = _outputs(fn(torch, *t_inputs)), _outputs(fn(genesis, *g_inputs))
    assert len(t_out) == len(g_out)
    for g, t in zip(g_out, t_out):
        assert_close(g, t, **tol)
        assert g.requires_grad == t.requires_grad
        assert g.device == genesis.device(device)
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


# ---------------------------------------------------------------- gradcheck in float64
# Every differentiable op of the table above, on small inputs. Cases whose second
# derivative is not smooth at the sampled points (relu, abs, clamp, max, ties) still have a
# well-defined double backward almost everywhere, so they are gradgradchecked too.
# Finite differences across a tie, or through a float32 intermediate (eps=1e-6 is below its resolution),
# measure nothing: those cases are checked by the torch parity test above only.
GRADCHECK_SKIP = {"maximum-ties", "minimum-ties", "amax-ties", "amax-all-ties", "to-float32"}
GC_PARAMS = _params([c for c in CASES if c[0] not in GRADCHECK_SKIP])
GC_PARAMS += _params([c for c in CPU_ONLY_CASES if c[0] != "getitem-mask"], ("cpu",))


def _check_inputs(specs, device):
    _, g_leaves, _, _ = _make_inputs(specs, device)
    layouts = [layout for *_, layout in specs]
    return g_leaves, layouts


def _as_fn(fn, layouts):
    def wrapped(*leaves):
        args = [x.mT if layout == "t" else x for x, layout in zip(leaves, layouts)]
        return fn(genesis, *args)

    return wrapped


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradcheck(case, device):
    _, fn, specs = case
    leaves, layouts = _check_inputs(specs, device)
    assert gradcheck(_as_fn(fn, layouts), leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradgradcheck(case, device):
    _, fn, specs = case
    leaves, layouts = _check_inputs(specs, device)
    assert gradgradcheck(_as_fn(fn, layouts), leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


def test_gradcheck_catches_a_wrong_gradient():
    class WrongExp(genesis.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.data.exp()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a.exp() * 1.01

    x = to_genesis(values((3,)), CPU, requires_grad=True)
    with pytest.raises(genesis.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongExp.apply, (x,))
    assert gradcheck(WrongExp.apply, (x,), raise_exception=False) is False


def test_gradcheck_refuses_float32_inputs():
    x = genesis.randn(3, requires_grad=True)
    with pytest.raises(genesis.autograd.GradcheckError, match="float64"):
        gradcheck(lambda a: a.exp(), (x,))
