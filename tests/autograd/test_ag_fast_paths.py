"""The host fast paths of Tensor's arithmetic operators against the general path and torch.

``a + b`` (and ``-``, ``*``, ``/``) computes inline when no graph is recorded (inside an autocast region
too: these ops have no autocast policy) and records through apply's own recording step when one is;
other operands go through ``Function.apply``. Both paths must give the same values, dtype,
device, class, graph and errors, so each case runs the operator, the Function's ``apply`` and torch on
the same random values: same-shape, broadcast, non-contiguous, mixed dtypes, Python numbers (int,
float, bool, and a number subclass), requires_grad with grad mode on and off, and autocast.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
import torch
from ag_helpers import CPU, CUDA

import genesis
from genesis_autograd.functions import elementwise as E

OPS = [
    (operator.add, E.Add, "AddBackward0"),
    (operator.sub, E.Sub, "SubBackward0"),
    (operator.mul, E.Mul, "MulBackward0"),
    (operator.truediv, E.Div, "DivBackward0"),
]
DEVICES = [CPU, CUDA]
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "float16": torch.float16}


def _pair(shape_a, shape_b, dtype_a, dtype_b, device, requires_grad=(False, False), transpose_b=False):
    ta = torch.randn(shape_a, dtype=torch.float64).mul(4).to(DTYPES[dtype_a])
    tb = torch.randn(shape_b, dtype=torch.float64).mul(4).to(DTYPES[dtype_b])
    if not tb.is_floating_point():
        tb = tb.where(tb != 0, 1)  # no integer division by zero
    if transpose_b:
        tb = tb.t().contiguous().t()  # torch's copy has the same (transposed) strides as genesis's below
    a = genesis.tensor(ta.numpy(), device=device, requires_grad=requires_grad[0])
    b = genesis.tensor(tb.t().numpy() if transpose_b else tb.numpy(), device=device, requires_grad=requires_grad[1])
    if transpose_b:
        b = b.t()
    return a, b, ta.requires_grad_(requires_grad[0]), tb.requires_grad_(requires_grad[1])


def _same(fast, general, expected: torch.Tensor) -> None:
    """The operator's result, apply's and torch's agree on everything a user can see."""
    for t in (fast, general):
        assert type(t) is genesis.Tensor
        assert t.dtype == general.dtype and t.device == general.device
        assert tuple(t.shape) == tuple(expected.shape)
        assert t.requires_grad == expected.requires_grad
        assert (t.grad_fn is None) == (expected.grad_fn is None)
        if t.grad_fn is not None:
            assert t.grad_fn.name() == expected.grad_fn.name()
        assert str(t.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(fast.detach().cpu().numpy(), general.detach().cpu().numpy())
    got = torch.from_numpy(fast.detach().float().cpu().numpy()).to(expected.dtype)
    rtol = 2e-3 if expected.dtype == torch.float16 else 1.3e-6
    torch.testing.assert_close(got, expected.detach(), rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,fn,name", OPS)
@pytest.mark.parametrize(
    "shape_a,shape_b,dtype_a,dtype_b,transpose_b",
    [
        ((37,), (37,), "float32", "float32", False),  # the fast path's own case
        ((5, 7), (7,), "float32", "float32", False),  # broadcasting
        ((6, 6), (6, 6), "float32", "float32", True),  # a non-contiguous operand
        ((8,), (8,), "float32", "float64", False),  # promotion
        ((8,), (8,), "int64", "int64", False),  # integers (true division gives floats)
        ((8,), (), "float16", "float32", False),  # a 0-d operand of a higher dtype
    ],
)
def test_operator_equals_apply_and_torch(device, op, fn, name, shape_a, shape_b, dtype_a, dtype_b, transpose_b):
    a, b, ta, tb = _pair(shape_a, shape_b, dtype_a, dtype_b, device, transpose_b=transpose_b)
    _same(op(a, b), fn.apply(a, b), op(ta, tb))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,fn,name", OPS)
@pytest.mark.parametrize("scalar", [3, -2.5, True])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_python_numbers(device, op, fn, name, scalar, dtype):
    a, _, ta, _ = _pair((9,), (9,), dtype, dtype, device)
    if op is operator.sub and scalar is True:
        return  # bool subtraction: an error on both sides, covered below
    _same(op(a, scalar), fn.apply(a, scalar), op(ta, scalar))


@pytest.mark.parametrize("device", DEVICES)
def test_number_subclass_and_numpy_scalar_take_the_general_path(device):
    class Two(float):
        pass

    a, _, ta, _ = _pair((5,), (5,), "float32", "float32", device)
    _same(a * Two(2.0), E.Mul.apply(a, 2.0), ta * 2.0)
    _same(a + np.float64(1.5), E.Add.apply(a, 1.5), ta + 1.5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,fn,name", OPS)
@pytest.mark.parametrize("grads", [(True, False), (False, True), (True, True)])
def test_requires_grad_records_a_node(device, op, fn, name, grads):
    a, b, ta, tb = _pair((4, 3), (4, 3), "float64", "float64", device, requires_grad=grads)
    out, expected = op(a, b), op(ta, tb)
    _same(out, fn.apply(a, b), expected)
    assert out.grad_fn.name() == name
    out.sum().backward()
    expected.sum().backward()
    for g, t in ((a, ta), (b, tb)):
        if t.requires_grad:
            np.testing.assert_allclose(g.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
        else:
            assert g.grad is None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,fn,name", OPS)
def test_requires_grad_scalar_and_no_grad(device, op, fn, name):
    a, _, ta, _ = _pair((6,), (6,), "float32", "float32", device, requires_grad=(True, True))
    _same(op(a, 2.0), fn.apply(a, 2.0), op(ta, 2.0))
    with genesis.no_grad(), torch.no_grad():
        out = op(a, a)
        _same(out, fn.apply(a, a), op(ta, ta))
        assert out.grad_fn is None and not out.requires_grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,fn,name", OPS)
def test_autocast_is_obeyed(device, op, fn, name):
    low = genesis.bfloat16 if device == "cpu" else genesis.float16
    a, b, _, _ = _pair((8,), (8,), "float32", "float32", device)
    h = a.to(low)
    with genesis.autocast(device, dtype=low):
        fast, general = op(h, b), fn.apply(h, b)
    assert fast.dtype == general.dtype
    np.testing.assert_array_equal(fast.float().cpu().numpy(), general.float().cpu().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_parameter_operands_give_plain_tensors(device):
    a, b, ta, tb = _pair((5,), (5,), "float32", "float32", device)
    p = genesis.nn.Parameter(a, requires_grad=False)
    q = genesis.nn.Parameter(b, requires_grad=False)
    _same(p + q, E.Add.apply(p, q), ta + tb)
    _same(p * b, E.Mul.apply(p, b), ta * tb)
    _same(a - q, E.Sub.apply(a, q), ta - tb)


@pytest.mark.parametrize("device", DEVICES)
def test_errors_match(device):
    a, _, _, _ = _pair((3,), (3,), "float32", "float32", device)
    c, _, _, _ = _pair((4,), (4,), "float32", "float32", device)
    m = genesis.tensor(np.array([True, False, True]), device=device)
    for call in (lambda: a + c, lambda: E.Add.apply(a, c)):
        with pytest.raises(RuntimeError, match="size of tensor"):
            call()
    for call in (lambda: m - m, lambda: E.Sub.apply(m, m)):
        with pytest.raises(RuntimeError, match="Subtraction"):
            call()
    for call in (lambda: m - True, lambda: E.Sub.apply(m, True)):
        with pytest.raises(RuntimeError, match="Subtraction"):
            call()
    assert a.__add__("x") is NotImplemented
    with pytest.raises(TypeError):
        a + "x"


def test_in_place_operators_still_bump_versions():
    a, b, _, _ = _pair((5,), (5,), "float32", "float32", "cpu")
    before = a._version[0]
    a += b
    a *= 2
    assert a._version[0] == before + 2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "shape", [(5,), (0,), ((2, 3),), ([2, 3],), (2, 3), ((np.int32(2), 3),), (genesis.Size((2, 2)),)]
)
def test_empty_shapes_match_torch(device, shape):
    """empty's plain-int fast paths and the general conversion give torch's shapes."""
    torch_shape = tuple(tuple(int(x) for x in s) if isinstance(s, tuple | list) else int(s) for s in shape)
    out = genesis.empty(*shape, device=device)
    assert tuple(out.shape) == tuple(torch.empty(*torch_shape).shape)
    assert all(type(n) is int for n in out.shape)
    assert out.dtype == genesis.get_default_dtype() and not out.requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_empty_negative_sizes_raise_as_torch(device):
    for shape in ((-1,), (2, -3), ((2, -1),)):
        with pytest.raises(RuntimeError, match="negative dimension"):
            genesis.empty(*shape, device=device)
        with pytest.raises(RuntimeError, match="negative dimension"):
            torch.empty(*shape)


# ------------------------------------------------------------------ the recording path under autocast
def test_arithmetic_functions_have_no_autocast_policy():
    """The operators skip apply's policy lookup inside autocast: right only while these have none."""
    from genesis_autograd.autocast import policy_of, resolved_policy

    for _, fn, _ in OPS:
        assert policy_of(fn) is None and resolved_policy(fn) is None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,fn,name", OPS)
@pytest.mark.parametrize("grads", [(False, False), (True, False), (False, True), (True, True)])
def test_autocast_with_grad_equals_apply_and_torch(device, op, fn, name, grads):
    """Inside autocast, the operator (inline or recording directly) and apply give the same result, node and
    gradients, for mixed input dtypes too (no cast: these ops run in their inputs' promoted dtype)."""
    low = genesis.bfloat16 if device == "cpu" else genesis.float16
    tlow = torch.bfloat16 if device == "cpu" else torch.float16
    results = []
    for call in (op, fn.apply):
        torch.manual_seed(0)
        a, b, ta, tb = _pair((4, 3), (3,), "float32", "float32", device, requires_grad=grads)
        with genesis.autocast(device, dtype=low):
            out = call(a.to(low) if grads[0] else a, b)
        if out.requires_grad:
            out.float().sum().backward()
        results.append((out, a.grad, b.grad))
    (fast, fa, fb), (general, ga, gb) = results
    expected = op(ta.to(tlow) if grads[0] else ta, tb)  # torch's autocast casts none of these either
    _same(fast, general, expected)
    if expected.requires_grad:
        expected.float().sum().backward()
        for x, t in ((fa, ta), (fb, tb)):
            if t.grad is not None:
                torch.testing.assert_close(torch.from_numpy(x.cpu().numpy()), t.grad, rtol=1e-2, atol=1e-2)
    assert fast.requires_grad == general.requires_grad == any(grads)
    assert (fast.grad_fn is None) == (general.grad_fn is None)
    if fast.grad_fn is not None:
        assert fast.grad_fn.name() == general.grad_fn.name() == name
    np.testing.assert_array_equal(fast.detach().float().cpu().numpy(), general.detach().float().cpu().numpy())
    for x, y in ((fa, ga), (fb, gb)):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x.cpu().numpy(), y.cpu().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_autocast_cast_inputs_against_torch(device):
    """Linear under autocast with grad: inputs cast by the 'lower' policy, float64 left alone, gradients
    back in each input's dtype; values against torch's autocast."""
    low, tlow = (genesis.bfloat16, torch.bfloat16) if device == "cpu" else (genesis.float16, torch.float16)
    torch_device = "cpu" if device == "cpu" else "cuda"
    x = torch.randn(5, 7, dtype=torch.float64)
    w = torch.randn(3, 7, dtype=torch.float64)
    gx = genesis.tensor(x.float().numpy(), device=device, requires_grad=True)
    gw = genesis.tensor(w.float().numpy(), device=device, requires_grad=True)
    tx = x.float().to(torch_device).requires_grad_(True)
    tw = w.float().to(torch_device).requires_grad_(True)
    with genesis.autocast(device, dtype=low), torch.autocast(torch_device, dtype=tlow):
        out = genesis.nn.functional.linear(gx, gw)
        expected = torch.nn.functional.linear(tx, tw)
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    got = torch.from_numpy(out.detach().float().cpu().numpy())
    torch.testing.assert_close(got, expected.detach().float().cpu(), rtol=2e-2, atol=2e-2)
    out.float().sum().backward()
    expected.float().sum().backward()
    assert gx.grad.dtype == genesis.float32 and gw.grad.dtype == genesis.float32
    torch.testing.assert_close(torch.from_numpy(gw.grad.cpu().numpy()), tw.grad.cpu(), rtol=2e-2, atol=2e-2)
    # float64 stays float64 under "lower" (torch's rule): nothing to cast, apply gets args itself
    from genesis_autograd.autocast import cast_inputs

    d = genesis.tensor(x.numpy(), device=device)
    args = (d, 2.0)
    with genesis.autocast(device, dtype=low):
        assert cast_inputs("lower", args) is args
        assert cast_inputs("float32", (d.to(low),))[0].dtype == genesis.float32
        same = (gx.to(low), None)
        assert cast_inputs("lower", same) is same


def test_resolved_policy_is_cached_per_class_and_clearable():
    from genesis_autograd.autocast import clear_policy_cache
    from genesis_autograd.function import Function

    class Twice(Function):
        autocast_policy = "float32"

        @staticmethod
        def forward(ctx, x):
            return x.data * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = genesis.randn(4, dtype=genesis.bfloat16)
    with genesis.autocast("cpu", dtype=genesis.bfloat16):
        assert Twice.apply(x).dtype == genesis.float32
        Twice.autocast_policy = "lower"  # a change after first use is seen only once the cache is cleared
        assert Twice.apply(x).dtype == genesis.float32
        clear_policy_cache()
        assert Twice.apply(x).dtype == genesis.bfloat16
    clear_policy_cache()


# ------------------------------------------------------------------ unary methods (E._unary_method)
UNARY = [
    ("__neg__", E.Neg, False),
    ("exp", E.Exp, False),
    ("exp2", E.Exp2, False),
    ("expm1", E.Expm1, False),
    ("log", E.Log, True),
    ("log2", E.Log2, True),
    ("log10", E.Log10, True),
    ("log1p", E.Log1p, True),
    ("sqrt", E.Sqrt, True),
    ("rsqrt", E.Rsqrt, True),
    ("reciprocal", E.Reciprocal, True),
    ("square", E.Square, False),
    ("abs", E.Abs, False),
    ("sin", E.Sin, False),
    ("cos", E.Cos, False),
    ("tan", E.Tan, False),
    ("tanh", E.Tanh, False),
    ("sigmoid", E.Sigmoid, False),
    ("relu", E.ReLU, False),
    ("erf", E.Erf, False),
    ("sign", E.Sign, False),
    ("floor", E.Floor, False),
    ("ceil", E.Ceil, False),
    ("round", E.Round, False),
    ("trunc", E.Trunc, False),
]


def _unary_input(shape, dtype, device, positive, requires_grad=False):
    t = torch.randn(shape, dtype=torch.float64).mul(2)
    if positive:
        t = t.abs() + 0.5
    t = t.to(DTYPES[dtype])
    return genesis.tensor(t.numpy(), device=device, requires_grad=requires_grad), t.requires_grad_(requires_grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method,fn,positive", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_method_equals_apply_and_torch(device, method, fn, positive, dtype):
    a, ta = _unary_input((5, 7), dtype, device, positive)
    _same(getattr(a, method)(), fn.apply(a), getattr(ta, method)())
    _same(getattr(a.t(), method)(), fn.apply(a.t()), getattr(ta.t(), method)())  # a non-contiguous input


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method,fn,positive", UNARY)
def test_unary_method_records_like_apply(device, method, fn, positive):
    a, ta = _unary_input((4, 3), "float64", device, positive, requires_grad=True)
    out, expected, general = getattr(a, method)(), getattr(ta, method)(), fn.apply(a)
    assert out.grad_fn._fn is fn and out.grad_fn.name() == general.grad_fn.name()
    if method in ("log1p", "square"):  # torch names these nodes Log1PBackward0 and PowBackward0
        expected = expected.detach().requires_grad_(True)
        expected = expected * 1  # (a node of torch's, so _same's checks hold; the names are not compared)
        out, general = out * 1, general * 1
    _same(out, general, expected)
    out = getattr(a, method)()
    expected = getattr(ta, method)()
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-12)
    with genesis.no_grad(), torch.no_grad():
        out = getattr(a, method)()
        _same(out, fn.apply(a), getattr(ta, method)())
        assert out.grad_fn is None and not out.requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_unary_method_integers_and_parameters(device):
    ti = torch.randint(-5, 6, (9,))
    i = genesis.tensor(ti.numpy(), device=device)
    for method, fn in (("abs", E.Abs), ("__neg__", E.Neg), ("sign", E.Sign), ("square", E.Square), ("exp", E.Exp)):
        _same(getattr(i, method)(), fn.apply(i), getattr(ti, method)())
    a, ta = _unary_input((6,), "float32", device, False)
    p = genesis.nn.Parameter(a, requires_grad=False)
    _same(p.relu(), E.ReLU.apply(p), ta.relu())
    _same(-p, E.Neg.apply(p), -ta)


@pytest.mark.parametrize("device", DEVICES)
def test_unary_method_obeys_autocast_policies(device, monkeypatch):
    """Inside an autocast region the methods take apply, which casts by the op's policy, as resolved then:
    a policy set on a class (here float32 on ReLU, lower on Exp) is obeyed like the table's."""
    from genesis_autograd.autocast import clear_policy_cache

    low = genesis.bfloat16 if device == "cpu" else genesis.float16
    a, _ = _unary_input((8,), "float32", device, False)
    h = a.to(low)
    with genesis.autocast(device, dtype=low):
        assert h.relu().dtype == low and a.exp().dtype == genesis.float32  # no policy: dtypes as given
    monkeypatch.setattr(E.ReLU, "autocast_policy", "float32", raising=False)
    monkeypatch.setattr(E.Exp, "autocast_policy", "lower", raising=False)
    clear_policy_cache()
    try:
        with genesis.autocast(device, dtype=low):
            fast, general = h.relu(), E.ReLU.apply(h)
            assert fast.dtype == general.dtype == genesis.float32
            np.testing.assert_array_equal(fast.cpu().numpy(), general.cpu().numpy())
            assert a.exp().dtype == E.Exp.apply(a).dtype == low
        assert h.relu().dtype == low and a.exp().dtype == genesis.float32  # outside the region: as given
    finally:
        monkeypatch.undo()
        clear_policy_cache()
