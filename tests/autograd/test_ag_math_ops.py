"""Tensor math ops against torch: forward values and every input's gradient (float64), gradcheck and
gradgradcheck, forward dtypes (int -> float promotion, half types), in-place forms and torch's errors.

Each case lists its inputs as (shape, requires_grad, domain, layout), as test_ag_ops.py: inputs that
need no gradient come first in many cases, layout "t" feeds a transposed view of the leaf, and
shapes broadcast.
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


def _values(shape, domain):
    """values() of ag_helpers, plus: small (|x| < 1.2, for tan), and zeros (rows of a 2-d input with no,
    one and two zeros, for prod / cumprod along dim 1; columns 0..2 of the transpose)."""
    if domain == "small":
        return torch.rand(shape, dtype=torch.float64) * 2.2 - 1.1
    if domain == "zeros":
        t = values(shape)
        t[1, 2] = 0
        t[2, 0] = t[2, 3] = 0
        return t
    return values(shape, domain)


def _inplace_chain(lib, a, b, c):
    y = a * 1
    y.addcmul_(b, c, value=0.5)
    y.lerp_(c, 0.25)
    return y.tril_(1).sin_().exp2_()


def _clamp_inplace(lib, a, lo, hi):
    y = a * 1
    return y.clamp_(lo, hi)


CASES = [
    # ---- unary
    ("exp2", lambda lib, a: a.exp2(), [I((3, 4), layout="t")]),
    ("expm1", lambda lib, a: a.expm1(), [I((3, 4))]),
    ("log2", lambda lib, a: a.log2(), [I((3, 4), domain="pos")]),
    ("log10", lambda lib, a: a.log10(), [I((4, 3), domain="pos", layout="t")]),
    ("log1p", lambda lib, a: a.log1p(), [I((3, 4), domain="pos")]),
    ("tan", lambda lib, a: a.tan(), [I((3, 4), domain="small")]),
    ("rsqrt", lambda lib, a: a.rsqrt(), [I((3, 4), domain="pos", layout="t")]),
    ("reciprocal", lambda lib, a: a.reciprocal(), [I((3, 4))]),
    ("square", lambda lib, a: a.square(), [I((3, 4), layout="t")]),
    ("erf", lambda lib, a: a.erf(), [I((3, 4))]),
    ("silu", lambda lib, a: lib.nn.functional.silu(a) if lib is torch else a.silu(), [I((3, 4), layout="t")]),
    ("gelu", lambda lib, a: lib.nn.functional.gelu(a) if lib is torch else a.gelu(), [I((3, 4))]),
    ("gelu-tanh", lambda lib, a: lib.nn.functional.gelu(a, approximate="tanh") if lib is torch
     else a.gelu(approximate="tanh"), [I((4, 3), layout="t")]),
    ("sign-floor-ceil", lambda lib, a: a.sign() + a.floor() * a + a.ceil() * 2, [I((3, 4))]),
    ("round-trunc", lambda lib, a: a.round() * a + a.trunc(), [I((3, 4), layout="t")]),
    # ---- binary
    ("atan2", lambda lib, a, b: a.atan2(b), [I((3, 4), False), I((3, 4))]),
    ("atan2-bcast", lambda lib, a, b: lib.atan2(a, b), [I((2, 3, 4)), I((4,))]),
    ("atan2-t", lambda lib, a, b: a.atan2(b), [I((3, 1)), I((3, 4), layout="t")]),
    ("remainder", lambda lib, a, b: a.remainder(b), [I((3, 4), False), I((3, 4), domain="pos")]),
    ("remainder-bcast", lambda lib, a, b: a % b, [I((2, 3, 4)), I((3, 1), domain="pos")]),
    ("remainder-scalar", lambda lib, a: a % 0.7, [I((3, 4), layout="t")]),
    ("fmod", lambda lib, a, b: a.fmod(b), [I((3, 4)), I((4,), domain="pos")]),
    ("fmod-scalar", lambda lib, a: a.fmod(-0.6), [I((3, 4))]),
    # ---- ternary
    ("lerp-scalar", lambda lib, a, b: a.lerp(b, 0.3), [I((3, 4), False), I((3, 4))]),
    ("lerp-scalar-high", lambda lib, a, b: lib.lerp(a, b, 0.8), [I((3, 4)), I((4,))]),
    ("lerp-tensor", lambda lib, a, b, w: a.lerp(b, w), [I((3, 4)), I((3, 4), False), I((2, 1, 4))]),
    ("lerp-tensor-t", lambda lib, w, a, b: a.lerp(b, w), [I((3, 4), layout="t"), I((3, 1)), I((3, 4))]),
    ("addcmul", lambda lib, x, a, b: x.addcmul(a, b), [I((3, 4), False), I((3, 1)), I((4,))]),
    ("addcmul-value", lambda lib, x, a, b: lib.addcmul(x, a, b, value=-0.5), [I((2, 3, 4)), I((3, 4), False),
                                                                              I((3, 4), layout="t")]),
    ("addcdiv", lambda lib, x, a, b: x.addcdiv(a, b, value=2.0), [I((3, 4)), I((3, 4)), I((3, 4), domain="pos")]),
    ("addcdiv-bcast", lambda lib, a, x, b: x.addcdiv(a, b), [I((4,), False), I((3, 4)), I((3, 1), domain="pos")]),
    # ---- clamp with tensor bounds
    ("clamp-tensors", lambda lib, lo, a, hi: a.clamp(lo, hi), [I((3, 1)), I((3, 4)), I((4,))]),
    ("clamp-tensor-min", lambda lib, lo, a: a.clamp(min=lo), [I((3, 4), False), I((3, 4), layout="t")]),
    ("clamp-tensor-max", lambda lib, a, hi: lib.clamp(a, max=hi), [I((3, 4)), I((2, 1, 4))]),
    ("clamp-min-max-fns", lambda lib, a: a.clamp_min(-0.3) + a.clamp_max(0.2) + a.clip(-0.5, 0.5), [I((3, 4))]),
    # ---- prod
    ("prod", lambda lib, a: a.prod(), [I((2, 3), layout="t")]),
    ("prod-dim", lambda lib, a: a.prod(1), [I((3, 4))]),
    ("prod-dim-keep", lambda lib, a: a.prod(0, keepdim=True), [I((4, 3), layout="t")]),
    ("prod-neg-dim", lambda lib, a: a.prod(-2), [I((2, 3, 4))]),
    ("prod-zeros", lambda lib, a: a.prod(1), [I((3, 4), domain="zeros")]),
    ("prod-zeros-keep", lambda lib, a: a.prod(-1, keepdim=True), [I((3, 4), domain="zeros")]),
    ("prod-zeros-t", lambda lib, a: a.prod(0), [I((4, 3), domain="zeros", layout="t")]),
    ("prod-all-with-a-zero", lambda lib, a: a[1].prod(), [I((3, 4), domain="zeros")]),
    # ---- scans
    ("cumsum", lambda lib, a: a.cumsum(1), [I((3, 4))]),
    ("cumsum-dim0-t", lambda lib, a: a.cumsum(0), [I((3, 4), layout="t")]),
    ("cumsum-3d", lambda lib, a: lib.cumsum(a, -2), [I((2, 3, 4))]),
    ("cumprod", lambda lib, a: a.cumprod(1), [I((3, 4))]),
    ("cumprod-t", lambda lib, a: a.cumprod(0), [I((3, 4), layout="t")]),
    ("cumprod-zeros", lambda lib, a: a.cumprod(1), [I((3, 4), domain="zeros")]),
    ("cumprod-zeros-t", lambda lib, a: a.cumprod(0), [I((4, 3), domain="zeros", layout="t")]),
    # ---- triangles
    ("tril", lambda lib, a: a.tril(), [I((3, 4))]),
    ("tril-neg", lambda lib, a: a.tril(-1), [I((2, 4, 3), layout="t")]),
    ("triu", lambda lib, a: lib.triu(a, 1), [I((4, 3))]),
    ("triu-t", lambda lib, a: a.triu(-2), [I((3, 4), layout="t")]),
    # ---- in-place forms
    ("inplace-chain", _inplace_chain, [I((3, 4)), I((3, 4), False), I((4,))]),
    ("inplace-clamp-tensors", _clamp_inplace, [I((3, 4)), I((3, 1)), I((4,))]),
]


def _params(cases, devices=("cpu", "cuda")):
    return [pytest.param(c, d, id=f"{c[0]}-{d}", marks=requires_cuda if d == "cuda" else ())
            for c in cases for d in devices]


PARAMS = _params(CASES)


def _make_inputs(specs, device):
    return make_inputs(specs, device, _values)


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    _, fn, specs = case
    t_leaves, g_leaves, t_inputs, g_inputs = _make_inputs(specs, device)
    t_out, g_out = fn(torch, *t_inputs), fn(genesis, *g_inputs)
    assert_close(g_out, t_out)
    assert g_out.requires_grad == t_out.requires_grad
    weight = values(tuple(t_out.shape))  # fresh random weights: every gradient element distinct
    (t_out * weight).sum().backward()
    (g_out * to_genesis(weight, device)).sum().backward()
    for tl, gl in zip(t_leaves, g_leaves):
        if tl.requires_grad:
            assert gl.grad is not None
            assert_close(gl.grad, tl.grad)
        else:
            assert gl.grad is None


def _as_fn(fn, layouts):
    def wrapped(*leaves):
        return fn(genesis, *[x.mT if layout == "t" else x for x, layout in zip(leaves, layouts)])

    return wrapped


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradcheck(case, device):
    _, fn, specs = case
    _, leaves, _, _ = _make_inputs(specs, device)
    assert gradcheck(_as_fn(fn, [s[3] for s in specs]), leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradgradcheck(case, device):
    _, fn, specs = case
    _, leaves, _, _ = _make_inputs(specs, device)
    assert gradgradcheck(_as_fn(fn, [s[3] for s in specs]), leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


# ---------------------------------------------------------------- forward dtypes
FWD_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64]
FWD_TOL = {torch.float32: dict(rtol=1.3e-6, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=1e-4),
           torch.bfloat16: dict(rtol=1.6e-2, atol=1e-3)}
UNARY_FWD = {
    "exp2": ("any", lambda t: t.exp2()), "expm1": ("any", lambda t: t.expm1()),
    "log2": ("pos", lambda t: t.log2()), "log10": ("pos", lambda t: t.log10()),
    "log1p": ("pos", lambda t: t.log1p()), "rsqrt": ("pos", lambda t: t.rsqrt()),
    "reciprocal": ("pos", lambda t: t.reciprocal()), "erf": ("any", lambda t: t.erf()),
    "square": ("any", lambda t: t.square()), "tan": ("small", lambda t: t.tan()),
}


def _to_genesis(t, device):
    """to_genesis for any dtype (numpy has no bfloat16: go through float32)."""
    if t.dtype == torch.bfloat16:
        return to_genesis(t.float(), device).to(genesis.bfloat16)
    return to_genesis(t, device)


def _assert_fwd(actual, expected, **tol):
    """assert_close for any dtype: the dtype compared exactly, bfloat16 values through float32."""
    if expected.dtype == torch.bfloat16:
        assert actual.dtype == genesis.bfloat16, actual.dtype
        actual, expected = actual.float(), expected.float()
    assert_close(actual, expected, **tol)


def _fwd_input(domain, dtype, shape=(3, 5)):
    if not dtype.is_floating_point:
        return torch.randint(1, 5, shape, dtype=dtype) * (1 if domain == "pos" else torch.randint(0, 2, shape) * 2 - 1)
    return _values(shape, domain).to(dtype)


@pytest.mark.parametrize("dtype", FWD_DTYPES, ids=[str(d)[6:] for d in FWD_DTYPES])
@pytest.mark.parametrize("op", sorted(UNARY_FWD))
def test_unary_forward_dtypes(device, op, dtype):
    domain, fn = UNARY_FWD[op]
    t = _fwd_input(domain, dtype)
    expected = fn(t)
    _assert_fwd(fn(_to_genesis(t, device)), expected, **FWD_TOL.get(expected.dtype, {}))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["f16", "bf16", "f32"])
def test_activation_and_ternary_forward_half_types(device, dtype):
    ta, tb, tc = (_values((3, 5), d).to(dtype) for d in ("any", "any", "pos"))
    a, b, c = (_to_genesis(t, device) for t in (ta, tb, tc))
    tol = FWD_TOL[dtype]
    _assert_fwd(a.silu(), torch.nn.functional.silu(ta), **tol)
    _assert_fwd(a.gelu(), torch.nn.functional.gelu(ta), **tol)
    _assert_fwd(a.gelu("tanh"), torch.nn.functional.gelu(ta, approximate="tanh"), **tol)
    _assert_fwd(a.lerp(b, 0.4), ta.lerp(tb, 0.4), **tol)
    _assert_fwd(a.addcmul(b, c, value=0.5), ta.addcmul(tb, tc, value=0.5), **tol)
    _assert_fwd(a.addcdiv(b, c), ta.addcdiv(tb, tc), **tol)
    _assert_fwd(a.atan2(b), ta.atan2(tb), **tol)
    _assert_fwd(a.cumsum(1), ta.cumsum(1), **tol)
    _assert_fwd(a.tril(1), ta.tril(1))


def test_integer_inputs_promote_as_torch(device):
    ti, tf = torch.randint(1, 6, (3, 4), dtype=torch.int32), _values((3, 4), "pos").float()
    i, f = to_genesis(ti, device), to_genesis(tf, device)
    assert_close(i.atan2(i), ti.atan2(ti))
    assert_close(i.addcmul(f, i), ti.addcmul(tf, ti))
    assert_close(i.cumsum(1), ti.cumsum(1))
    assert_close(i.cumprod(0), ti.cumprod(0))
    assert_close(i.prod(1), ti.prod(1))
    assert_close(i % 4, ti % 4)
    assert_close(i // 2, ti // 2)
    assert_close(i.clamp(to_genesis(tf, device), None), ti.clamp(min=tf))
    assert_close(f.cumsum(1, dtype=genesis.float64), tf.cumsum(1, dtype=torch.float64))


# ---------------------------------------------------------------- floor_divide, in-place, errors
def test_scalar_remainder_tensor(device):
    """torch computes number % tensor but has no derivative for it; ours (-floor(a / b)) is gradchecked."""
    tb = values((3, 4), "pos")
    b = to_genesis(tb, device, requires_grad=True)
    assert_close(2.5 % b, 2.5 % tb)
    assert gradcheck(lambda b: 2.5 % b, [b])


def test_floor_divide_is_recorded_but_has_no_derivative(device):
    ta, tb = values((3, 4)), values((3, 4), "pos")
    a, b = to_genesis(ta, device, requires_grad=True), to_genesis(tb, device)
    out = a // b
    assert_close(out, ta // tb)
    assert out.requires_grad and torch.floor_divide(ta.requires_grad_(), tb).requires_grad
    assert_close(2.0 // b, 2.0 // tb)
    with pytest.raises(RuntimeError, match="derivative for 'floor_divide' is not implemented"):
        out.sum().backward()


def test_inplace_forms_match_torch(device):
    ta, tb = values((3, 4), "pos"), values((3, 4), "pos")
    for name, args in [("exp2_", ()), ("log2_", ()), ("log10_", ()), ("log1p_", ()), ("expm1_", ()),
                       ("sin_", ()), ("cos_", ()), ("rsqrt_", ()), ("reciprocal_", ()), ("square_", ()),
                       ("erf_", ()), ("sign_", ()), ("floor_", ()), ("ceil_", ()), ("round_", ()), ("trunc_", ()),
                       ("atan2_", ("b",)), ("remainder_", (0.3,)), ("fmod_", ("b",)), ("floor_divide_", ("b",)),
                       ("lerp_", ("b", 0.2)), ("clamp_min_", (1.0,)), ("clamp_max_", ("b",)),
                       ("cumsum_", (1,)), ("cumprod_", (0,)), ("tril_", (1,)), ("triu_", (0,))]:
        t, g = ta.clone(), to_genesis(ta, device)
        t_args = [tb if x == "b" else x for x in args]
        g_args = [to_genesis(tb, device) if x == "b" else x for x in args]
        assert getattr(g, name)(*g_args) is g
        getattr(t, name)(*t_args)
        assert_close(g, t)
    t, g = ta.clone(), to_genesis(ta, device)
    g.addcdiv_(to_genesis(tb, device), to_genesis(ta, device), value=3)
    assert_close(g, t.addcdiv_(tb, ta, value=3))


def test_inplace_errors_match_torch(device):
    i = to_genesis(torch.randint(1, 5, (3,)), device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.exp2_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.randint(1, 5, (3,)).exp2_()
    x = to_genesis(values((2, 3)), device)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.addcmul_(to_genesis(values((4, 1, 3)), device), to_genesis(values((3,)), device))
    leaf = to_genesis(values((3,)), device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.exp2_()


def test_bad_arguments_raise_torch_errors(device):
    x, x64 = to_genesis(values((3,), dtype=torch.float32), device), to_genesis(values((3,)), device)
    with pytest.raises(TypeError):
        x.atan2(2.0)
    with pytest.raises(TypeError):
        torch.ones(3).atan2(2.0)
    with pytest.raises(RuntimeError, match="expected dtype"):
        x.lerp(x64, 0.5)
    with pytest.raises(RuntimeError, match="must match the size"):
        x.lerp(to_genesis(values((4,), dtype=torch.float32), device), 0.5)
    with pytest.raises(RuntimeError, match="must match the size"):
        x.addcmul(x, to_genesis(values((2,), dtype=torch.float32), device))
    with pytest.raises(RuntimeError, match="Integer division"):
        x.addcdiv(*[to_genesis(torch.ones(3, dtype=torch.int64), device)] * 2)
    with pytest.raises(TypeError):
        x.prod((0,))
    with pytest.raises(TypeError):
        x.clamp(0.0, x)
    with pytest.raises(TypeError):
        torch.clamp(torch.ones(3), 0.0, torch.ones(3))
    with pytest.raises(RuntimeError, match="approximate"):
        x.gelu(approximate="fast")
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.cumsum(1)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        x.tril()
    with pytest.raises(NotImplementedError):
        to_genesis(torch.ones(3, dtype=torch.int64), device).lerp(to_genesis(torch.ones(3, dtype=torch.int64),
                                                                              device), 0.5)


def test_cumprod_and_prod_gradients_with_several_zeros_match_torch():
    t = values((2, 6))
    t[0, 1] = t[0, 4] = 0  # two zeros in one row, none in the other
    for fn in (lambda x: x.cumprod(1), lambda x: x.prod(1), lambda x: x.prod()):
        tl, gl = t.clone().requires_grad_(), to_genesis(t, CPU, requires_grad=True)
        w = values(tuple(fn(tl).shape))
        (fn(tl) * w).sum().backward()
        (fn(gl) * to_genesis(w, CPU)).sum().backward()
        assert_close(gl.grad, tl.grad)
