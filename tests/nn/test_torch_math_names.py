"""Issue #30's elementwise names against torch on both devices: the top-level functions, the Tensor methods
and their in-place forms, values and dtypes, gradients (compared with torch's autograd on the same float64
inputs) and the errors torch raises."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis


def _pair(values: np.ndarray, device: str, requires_grad: bool = False):
    t = torch.tensor(values, requires_grad=requires_grad)
    g = genesis.tensor(values, device=device, requires_grad=requires_grad)
    return t, g


def _close(got, expected, rtol=1e-10, atol=1e-12) -> None:
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], (got.dtype, expected.dtype)
    np.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().numpy(), rtol=rtol, atol=atol)


rng = np.random.default_rng()
# name -> the input range it needs
UNARY = {
    "asin": (-0.9, 0.9),
    "acos": (-0.9, 0.9),
    "atan": (-3, 3),
    "sinh": (-2, 2),
    "cosh": (-2, 2),
    "asinh": (-3, 3),
    "acosh": (1.1, 4),
    "atanh": (-0.9, 0.9),
    "arcsin": (-0.9, 0.9),
    "arccos": (-0.9, 0.9),
    "arctan": (-3, 3),
    "arcsinh": (-3, 3),
    "arccosh": (1.1, 4),
    "arctanh": (-0.9, 0.9),
    "frac": (-4, 4),
    "fix": (-4, 4),
    "deg2rad": (-360, 360),
    "rad2deg": (-4, 4),
    "absolute": (-3, 3),
    "positive": (-3, 3),
    "negative": (-3, 3),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_function_method_and_gradient(device, name):
    values = rng.uniform(*UNARY[name], size=(2, 3))
    t, g = _pair(values, device, requires_grad=True)
    expected = getattr(torch, name)(t)
    got = getattr(genesis, name)(g)
    _close(got, expected)
    _close(getattr(g, name)(), expected)
    seed = rng.standard_normal((2, 3))
    expected.backward(torch.tensor(seed))
    got.backward(genesis.tensor(seed, device=device))
    _close(g.grad, t.grad)


@pytest.mark.parametrize("name", ["asin", "sinh", "deg2rad", "rad2deg", "atan"])
def test_integer_inputs_give_the_default_float_dtype(device, name):
    values = rng.integers(-1, 2, size=5)
    _close(
        getattr(genesis, name)(genesis.tensor(values, device=device)), getattr(torch, name)(torch.tensor(values)), 1e-6
    )


@pytest.mark.parametrize("name", ["asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_", "atanh_", "frac_", "fix_"])
def test_inplace_unary_forms(device, name):
    values = rng.uniform(-0.9, 0.9, size=4)
    t, g = _pair(values, device)
    out = getattr(g, name)()
    assert out is g
    getattr(t, name)()
    _close(g, t)
    t2, g2 = _pair(values, device)
    top = getattr(genesis, name, None)
    if hasattr(torch, name):
        getattr(torch, name)(t2)
        top(g2)
        _close(g2, t2)


def test_inplace_float_op_into_integers_is_refused(device):
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        genesis.tensor([1, 2], device=device).asin_()


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "fmax", "fmin"])
def test_binary_values_broadcasting_and_gradients(device, name):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(3)
    ta, ga = _pair(a, device, True)
    tb, gb = _pair(b, device, True)
    expected, got = getattr(torch, name)(ta, tb), getattr(genesis, name)(ga, gb)
    _close(got, expected)
    _close(getattr(ga, name)(gb), expected)
    seed = rng.standard_normal((2, 3))
    expected.backward(torch.tensor(seed))
    got.backward(genesis.tensor(seed, device=device))
    _close(ga.grad, ta.grad)
    _close(gb.grad, tb.grad)


def test_fmax_gradient_with_nan_and_ties(device):
    a, b = np.array([np.nan, 1.0, 2.0, 3.0]), np.array([1.0, np.nan, 2.0, 0.5])
    for name in ("fmax", "fmin"):
        ta, ga = _pair(a, device, True)
        tb, gb = _pair(b, device, True)
        getattr(torch, name)(ta, tb).sum().backward()
        getattr(genesis, name)(ga, gb).sum().backward()
        _close(ga.grad, ta.grad)
        _close(gb.grad, tb.grad)


def test_hypot_needs_a_tensor(device):
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        genesis.hypot(genesis.ones(2, device=device), 2)


@pytest.mark.parametrize("name", ["greater", "greater_equal", "less", "less_equal", "not_equal"])
def test_comparison_spellings_and_inplace(device, name):
    a, b = rng.integers(0, 3, size=6).astype(np.float64), rng.integers(0, 3, size=6).astype(np.float64)
    (ta, ga), (tb, gb) = _pair(a, device), _pair(b, device)
    _close(getattr(genesis, name)(ga, gb), getattr(torch, name)(ta, tb))
    _close(getattr(ga, name)(1.0), getattr(ta, name)(1.0))
    getattr(ga, name + "_")(gb)
    getattr(ta, name + "_")(tb)
    _close(ga, ta)


@pytest.mark.parametrize(
    "name", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "logical_and_", "logical_or_", "logical_xor_"]
)
def test_inplace_comparisons_and_logic_keep_the_dtype(device, name):
    a, b = rng.integers(0, 3, size=6), rng.integers(0, 3, size=6)
    (ta, ga), (tb, gb) = _pair(a, device), _pair(b, device)
    getattr(ga, name)(gb)
    getattr(ta, name)(tb)
    _close(ga, ta)
    t, g = _pair(a.astype(np.float64), device)
    t.logical_not_()
    g.logical_not_()
    _close(g, t)


@pytest.mark.parametrize(
    "name", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
)
def test_bitwise_functions_methods_operators_and_inplace(device, name):
    a, b = rng.integers(-50, 50, size=6), rng.integers(0, 6, size=6)
    (ta, ga), (tb, gb) = _pair(a, device), _pair(b, device)
    _close(getattr(genesis, name)(ga, gb), getattr(torch, name)(ta, tb))
    _close(getattr(ga, name)(3), getattr(ta, name)(3))
    _close(getattr(genesis, name)(5, gb), getattr(torch, name)(5, tb))
    symbol = {"bitwise_and": "__and__", "bitwise_or": "__or__", "bitwise_xor": "__xor__"}
    symbol |= {"bitwise_left_shift": "__lshift__", "bitwise_right_shift": "__rshift__"}
    _close(getattr(ga, symbol[name])(gb), getattr(ta, symbol[name])(tb))
    _close(getattr(gb, symbol[name].replace("__", "__r", 1))(7), getattr(tb, symbol[name].replace("__", "__r", 1))(7))
    inplace = symbol[name].replace("__", "__i", 1)
    getattr(ga, inplace)(gb)
    getattr(ta, inplace)(tb)
    _close(ga, ta)
    getattr(ga, name + "_")(2)
    getattr(ta, name + "_")(2)
    _close(ga, ta)


def test_bitwise_not_and_float_refusal(device):
    a = rng.integers(-50, 50, size=5)
    (ta, ga) = _pair(a, device)
    _close(genesis.bitwise_not(ga), torch.bitwise_not(ta))
    ga.bitwise_not_()
    ta.bitwise_not_()
    _close(ga, ta)
    with pytest.raises(NotImplementedError, match="lshift"):
        genesis.ones(2, device=device).bitwise_left_shift(1)


def test_predicates(device):
    values = np.array([np.inf, -np.inf, np.nan, 1.5])
    t, g = _pair(values, device)
    for name in ("isposinf", "isneginf", "isreal"):
        _close(getattr(genesis, name)(g), getattr(torch, name)(t))
        _close(getattr(g, name)(), getattr(t, name)())


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_divide_rounding_modes_and_aliases(device, mode):
    a, b = rng.standard_normal(6) * 5, rng.standard_normal(6)
    (ta, ga), (tb, gb) = _pair(a, device, True), _pair(b, device, True)
    expected, got = ta.divide(tb, rounding_mode=mode), ga.divide(gb, rounding_mode=mode)
    _close(got, expected)
    expected.sum().backward()
    got.sum().backward()
    _close(ga.grad, ta.grad)
    _close(gb.grad, tb.grad)
    ia, ib = rng.integers(-20, 20, size=6), rng.integers(1, 5, size=6) * rng.choice([-1, 1], size=6)
    (tia, gia), (tib, gib) = _pair(ia, device), _pair(ib, device)
    _close(gia.divide(gib, rounding_mode=mode), tia.divide(tib, rounding_mode=mode))
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or 'floor'"):
        ga.divide(gb, rounding_mode="up")


def test_arithmetic_aliases(device):
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    (ta, ga), (tb, gb) = _pair(a, device), _pair(b, device)
    for name in ("multiply", "subtract", "true_divide"):
        _close(getattr(ga, name)(gb), getattr(ta, name)(tb))
    _close(genesis.rsub(ga, gb, alpha=2), torch.rsub(ta, tb, alpha=2))
    _close(genesis.rsub(ga, 3), torch.rsub(ta, 3))
    with pytest.raises(RuntimeError, match="`\\+` operator, on a bool tensor"):
        genesis.positive(genesis.tensor([True], device=device))


@pytest.mark.parametrize(
    "name", ["abs_", "ceil_", "cos_", "exp_", "log1p_", "neg_", "relu_", "sigmoid_", "sqrt_", "tanh_", "zero_"]
)
def test_top_level_inplace_forms(device, name):
    values = rng.uniform(0.1, 2.0, size=5)
    t, g = _pair(values, device)
    assert getattr(genesis, name)(g) is g
    getattr(torch, name)(t)
    _close(g, t)


def test_top_level_clamp_fill_and_detach_forms(device):
    values = rng.standard_normal(5)
    t, g = _pair(values, device)
    genesis.clamp_(g, -0.5, 0.5)
    torch.clamp_(t, -0.5, 0.5)
    _close(g, t)
    _close(genesis.fill(g, 2.5), torch.fill(t, 2.5))
    genesis.fill_(g, 1.5)
    torch.fill_(t, 1.5)
    _close(g, t)
    y = genesis.ones(2, device=device, requires_grad=True) * 2
    assert genesis.detach_(y) is y and y.grad_fn is None and not y.requires_grad
