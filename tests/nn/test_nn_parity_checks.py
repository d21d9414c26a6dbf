"""Argument checks and whole-tensor comparisons, against torch: the same error class and message on
every device (the checks sit above the backends), and torch's values for isclose / allclose / equal."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import genesis


def _torch_error(fn) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def _same_error(torch_fn, genesis_fn, match: str) -> None:
    """genesis raises the class torch raises, with a message that names the same values."""
    expected = _torch_error(torch_fn)
    with pytest.raises(type(expected), match=match):
        genesis_fn()


def test_cat_of_nothing_is_a_value_error(device):
    _same_error(lambda: torch.cat([]), lambda: genesis.cat([]), "expected a non-empty list of Tensors")


@pytest.mark.parametrize("chunks", [0, -2])
def test_chunk_needs_a_positive_count(device, chunks):
    _same_error(
        lambda: torch.zeros(4).chunk(chunks),
        lambda: genesis.zeros(4, device=device).chunk(chunks),
        f"chunk expects `chunks` to be greater than 0, got: {chunks}",
    )


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("shape", [(-1, 2), (3, -4)])
def test_negative_sizes_are_refused(device, factory, shape):
    bad = next(s for s in shape if s < 0)
    message = rf"negative dimension {bad}: \[{shape[0]}, {shape[1]}\]"
    _same_error(
        lambda: getattr(torch, factory)(shape), lambda: getattr(genesis, factory)(shape, device=device), message
    )
    _same_error(
        lambda: getattr(torch, factory)(*shape), lambda: getattr(genesis, factory)(*shape, device=device), message
    )


def test_negative_sizes_in_full_and_randint(device):
    _same_error(
        lambda: torch.full((2, -3), 1.0),
        lambda: genesis.full((2, -3), 1.0, device=device),
        r"negative dimension -3: \[2, -3\]",
    )
    _same_error(
        lambda: torch.randint(0, 5, (-1, 2)),
        lambda: genesis.randint(0, 5, (-1, 2), device=device),
        r"negative dimension -1: \[-1, 2\]",
    )


@pytest.mark.parametrize(("n", "m", "message"), [(-1, None, "n must be .* got -1"), (2, -3, "m must be .* got -3")])
def test_eye_refuses_negative_sizes(device, n, m, message):
    _same_error(
        lambda: torch.eye(n, m) if m is not None else torch.eye(n), lambda: genesis.eye(n, m, device=device), message
    )


@pytest.mark.parametrize(("start", "end", "step"), [(0, 5, -1), (5, 0, 1), (0.0, -2.5, 0.5)])
def test_arange_step_pointing_away_from_end(device, start, end, step):
    _same_error(
        lambda: torch.arange(start, end, step),
        lambda: genesis.arange(start, end, step, device=device),
        "upper bound and lower bound inconsistent with step sign",
    )


def test_arange_of_a_negative_end_alone(device):
    _same_error(lambda: torch.arange(-3), lambda: genesis.arange(-3, device=device), "inconsistent with step sign")


def test_arange_step_zero(device):
    _same_error(lambda: torch.arange(0, 5, 0), lambda: genesis.arange(0, 5, 0, device=device), "step must be nonzero")


@pytest.mark.parametrize("method", ["exp_", "log_", "sqrt_", "sigmoid_", "tanh_", "sin_", "rsqrt_"])
@pytest.mark.parametrize(("dtype", "name"), [("int64", "Long"), ("int32", "Int"), ("uint8", "Byte"), ("bool", "Bool")])
def test_float_inplace_ops_on_integer_tensors(device, method, dtype, name):
    values = np.random.default_rng().integers(1, 5, size=6)
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    g = genesis.tensor(values, dtype=dtype, device=device)
    _same_error(lambda: getattr(t, method)(), lambda: getattr(g, method)(), "can't be cast to the desired output type")
    # nothing was written before the check
    np.testing.assert_array_equal(g.cpu().numpy(), t.numpy())


@pytest.mark.parametrize(
    ("dtype", "method", "other", "message"),
    [
        ("int64", "add_", 1.5, "result type Float can't be cast to the desired output type Long"),
        ("int64", "mul_", 0.5, "result type Float can't be cast to the desired output type Long"),
        ("int64", "div_", 2, "result type Float can't be cast to the desired output type Long"),
        ("int32", "sub_", 0.25, "result type Float can't be cast to the desired output type Int"),
        ("bool", "mul_", 2, "result type Long can't be cast to the desired output type Bool"),
    ],
)
def test_binary_inplace_ops_refuse_a_wider_result(device, dtype, method, other, message):
    values = np.random.default_rng().integers(0, 2, size=5)
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    g = genesis.tensor(values, dtype=dtype, device=device)
    _same_error(lambda: getattr(t, method)(other), lambda: getattr(g, method)(other), message)
    np.testing.assert_array_equal(g.cpu().numpy(), t.numpy())


def test_inplace_with_a_float_tensor_operand(device):
    _same_error(
        lambda: torch.tensor([1, 2]).add_(torch.tensor([0.5, 0.5])),
        lambda: genesis.tensor([1, 2], device=device).add_(genesis.tensor([0.5, 0.5], device=device)),
        "result type Float can't be cast to the desired output type Long",
    )


def test_inplace_ops_that_keep_the_dtype_still_run(device):
    g = genesis.tensor([1, 2, 3], device=device)
    g.add_(2).mul_(3)
    np.testing.assert_array_equal(g.cpu().numpy(), [9, 12, 15])
    f = genesis.tensor([1.0, 4.0], device=device)
    f.div_(2).sqrt_()
    np.testing.assert_allclose(f.cpu().numpy(), np.sqrt([0.5, 2.0]), rtol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, d: m.randint(5, (3, 2), device=d),
        lambda m, d: m.randint(2, 7, (4,), device=d),
        lambda m, d: m.randint(2, 7, size=(4,), device=d),
        lambda m, d: m.randint(7, size=(2, 2), device=d),
    ],
)
def test_randint_overloads(device, call):
    expected = call(torch, "cpu")
    got = call(genesis, device)
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.dtype == genesis.int64
    values = got.cpu().numpy()
    assert values.min() >= 0 and values.max() < 7


def test_randint_low_not_below_high(device):
    _same_error(
        lambda: torch.randint(5, 1, (2,)),
        lambda: genesis.randint(5, 1, (2,), device=device),
        "expects 'from' to be less than 'to', but got from=5 >= to=1",
    )


def test_broadcast_to(device):
    values = np.random.default_rng().standard_normal((3, 1))
    expected = torch.broadcast_to(torch.tensor(values), (2, 3, 4))
    got = genesis.broadcast_to(genesis.tensor(values, device=device), (2, 3, 4))
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())


def _pair(rng, n=64):
    a = rng.standard_normal(n)
    b = a + rng.choice([0.0, 1e-9, 1e-6, 1e-4, 1e-2], size=n) * rng.standard_normal(n)
    specials = [math.inf, -math.inf, math.nan, 1.0]
    a[:4], b[:4] = specials, [math.inf, math.inf, math.nan, math.inf]
    return a, b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("rtol", "atol", "equal_nan"), [(1e-5, 1e-8, False), (1e-3, 0.0, True), (0.0, 1e-5, False)])
def test_isclose_and_allclose_match_torch(device, dtype, rtol, atol, equal_nan):
    a, b = _pair(np.random.default_rng())
    ta, tb = torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=getattr(torch, dtype))
    ga, gb = genesis.tensor(a, dtype=dtype, device=device), genesis.tensor(b, dtype=dtype, device=device)
    expected = torch.isclose(ta, tb, rtol=rtol, atol=atol, equal_nan=equal_nan)
    got = genesis.isclose(ga, gb, rtol=rtol, atol=atol, equal_nan=equal_nan)
    assert got.dtype == genesis.bool
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())
    for x, y, tx, ty in [(ga, gb, ta, tb), (ga[4:], gb[4:], ta[4:], tb[4:]), (ga[4:], ga[4:], ta[4:], ta[4:])]:
        result = genesis.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
        assert type(result) is bool
        assert result == torch.allclose(tx, ty, rtol=rtol, atol=atol, equal_nan=equal_nan)


def test_isclose_integers_and_broadcasting(device):
    a = np.random.default_rng().integers(-5, 5, size=(3, 4))
    b = np.random.default_rng().integers(-5, 5, size=(4,))
    for atol in (0, 1, 2):
        expected = torch.isclose(torch.tensor(a), torch.tensor(b), atol=atol)
        got = genesis.isclose(genesis.tensor(a, device=device), genesis.tensor(b, device=device), atol=atol)
        np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())


def test_isclose_argument_errors(device):
    f32 = genesis.ones(2, device=device)
    _same_error(
        lambda: torch.isclose(torch.ones(2), torch.ones(2, dtype=torch.float64)),
        lambda: genesis.isclose(f32, f32.double()),
        "float32.*float64",
    )
    _same_error(
        lambda: torch.isclose(torch.ones(2), torch.ones(2), rtol=-1),
        lambda: genesis.isclose(f32, f32, rtol=-1),
        "rtol must be greater than or equal to zero, but got -1",
    )
    _same_error(
        lambda: torch.isclose(torch.ones(2), torch.ones(2), atol=-0.5),
        lambda: genesis.isclose(f32, f32, atol=-0.5),
        "atol must be greater than or equal to zero, but got -0.5",
    )


def test_equal(device):
    values = np.random.default_rng().standard_normal((2, 3))
    g = genesis.tensor(values, device=device)
    t = torch.tensor(values)
    cases = [
        (g, g.clone(), t, t.clone()),
        (g, g + (g == g.max()).double(), t, t + (t == t.max()).double()),
        (g, g.reshape(3, 2), t, t.reshape(3, 2)),
        (g[0], g, t[0], t),
        (g.round().long(), g.round(), t.round().long(), t.round()),
        (genesis.tensor([math.nan], device=device),) * 2 + (torch.tensor([math.nan]),) * 2,
    ]
    for ga, gb, ta, tb in cases:
        result = genesis.equal(ga, gb)
        assert type(result) is bool
        assert result == torch.equal(ta, tb)


def test_top_level_randint_takes_torchs_keyword_form():
    draws = genesis.randint(high=5, size=(200,))
    assert draws.shape == (200,) and 0 <= draws.min().item() and draws.max().item() < 5
