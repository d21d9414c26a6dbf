"""The elementwise ops issue #30 wired through NDArray: inverse trigonometric and hyperbolic functions, frac,
isposinf / isneginf, and the binary hypot, logaddexp, fmax, fmin and bitwise shifts, against torch on
both devices (on cuda the Triton kernels, under the interpreter here, on tiny inputs): values, result
dtypes, integer promotion, NaN and infinity handling, out-of-range shift counts and torch's refusals."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

F32, F16, F64 = torch.float32, torch.float16, torch.float64
I8, I32, I64, U8, BOOL = torch.int8, torch.int32, torch.int64, torch.uint8, torch.bool

# op -> (the input's range, its dtypes): "unit" in (-1, 1), "above1" in (1, 4), "any" normal values.
UNARY = {
    "asin": ("unit", [F32, F64, I64]),
    "acos": ("unit", [F32, F64, F16]),
    "atan": ("any", [F32, F64, I32]),
    "sinh": ("any", [F32, F64, BOOL]),
    "cosh": ("any", [F32, F64]),
    "asinh": ("any", [F32, F64]),
    "acosh": ("above1", [F32, F64, I64]),
    "atanh": ("unit", [F32, F64]),
    "frac": ("any", [F32, F64, F16]),
}


def _input(domain: str, dtype: torch.dtype) -> torch.Tensor:
    if dtype == BOOL:
        return random_tensor((2, 3), BOOL)
    if not dtype.is_floating_point:
        return random_tensor((2, 3), dtype, low=1 if domain == "above1" else -1, high=4 if domain != "unit" else 2)
    if domain == "unit":
        return random_tensor((2, 3), dtype, low=-0.95, high=0.95)
    if domain == "above1":
        return random_tensor((2, 3), dtype, low=1.05, high=4)
    return random_tensor((2, 3), dtype) * 2


CASES = [(op, dt) for op, (_, dts) in UNARY.items() for dt in dts]


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o}-{str(d)[6:]}" for o, d in CASES])
def test_unary_matches_torch(device, op, dtype):
    t = _input(UNARY[op][0], dtype)
    assert_same(from_torch(t, device).unary(op), getattr(torch, op)(t))


def test_unary_float64_matches_to_the_last_bits(device):
    t = random_tensor((7,), F64, low=-0.9, high=0.9)
    for op in ("asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "frac"):
        assert_same(from_torch(t, device).unary(op), getattr(torch, op)(t), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [F32, F64, I64, BOOL])
def test_isposinf_isneginf(device, dtype):
    t = random_tensor((2, 4), dtype)
    if dtype.is_floating_point:
        t[0, 0], t[0, 1], t[1, 2] = float("inf"), float("-inf"), float("nan")
    for op in ("isposinf", "isneginf"):
        assert_same(from_torch(t, device).unary(op), getattr(torch, op)(t))


@pytest.mark.parametrize("dtype", [I64, BOOL])
def test_frac_of_integers_is_refused(device, dtype):
    t = random_tensor((3,), dtype)
    name = {I64: "Long", BOOL: "Bool"}[dtype]
    with pytest.raises(NotImplementedError, match=f"\"frac_(cpu|cuda)\" not implemented for '{name}'"):
        from_torch(t, device).unary("frac")


FLOAT_PAIRS = [(F32, F32), (F64, F64), (F16, F32), (F32, I64)]


@pytest.mark.parametrize("op", ["hypot", "logaddexp", "fmax", "fmin"])
@pytest.mark.parametrize(("da", "db"), FLOAT_PAIRS, ids=[f"{str(a)[6:]}-{str(b)[6:]}" for a, b in FLOAT_PAIRS])
def test_float_binary_matches_torch(device, op, da, db):
    ta, tb = random_tensor((2, 3), da), random_tensor((3,), db)
    assert_same(from_torch(ta, device).binary(op, from_torch(tb, device)), getattr(torch, op)(ta, tb))


def test_fmax_fmin_skip_nan_and_logaddexp_keeps_infinities(device):
    nan, inf = float("nan"), float("inf")
    ta = torch.tensor([nan, 1.5, nan, inf, -inf, -inf, 2.0], dtype=F64)
    tb = torch.tensor([0.5, nan, nan, inf, -inf, 3.0, -1.0], dtype=F64)
    a, b = from_torch(ta, device), from_torch(tb, device)
    for op in ("fmax", "fmin", "logaddexp", "hypot"):
        assert_same(a.binary(op, b), getattr(torch, op)(ta, tb))


@pytest.mark.parametrize("dtype", [I32, I64, U8, BOOL])
def test_fmax_fmin_of_integers(device, dtype):
    ta, tb = random_tensor((4,), dtype), random_tensor((4,), dtype)
    for op in ("fmax", "fmin"):
        assert_same(from_torch(ta, device).binary(op, from_torch(tb, device)), getattr(torch, op)(ta, tb))


@pytest.mark.parametrize("op", ["hypot", "logaddexp"])
def test_float_only_binary_refuses_integers(device, op):
    t = random_tensor((3,), I64)
    with pytest.raises(NotImplementedError, match=f"\"{op}_(cpu|cuda)\" not implemented for 'Long'"):
        from_torch(t, device).binary(op, from_torch(t, device))


@pytest.mark.parametrize("dtype", [I8, U8, I32, I64])
def test_shifts_match_torch_for_every_count(device, dtype):
    values = random_tensor((13,), dtype, low=-60 if dtype != U8 else 0, high=120)
    counts = torch.tensor([-1, 0, 1, 3, 7, 8, 9, 15, 31, 32, 33, 63, 64], dtype=I64)
    a, n = from_torch(values, device), from_torch(counts, device)
    for op in ("bitwise_left_shift", "bitwise_right_shift"):
        assert_same(a.binary(op, n), getattr(torch, op)(values, counts))
        assert_same(a.binary(op, 3), getattr(torch, op)(values, 3))


@pytest.mark.parametrize(("dtype", "name"), [(F32, "Float"), (BOOL, "Bool")])
def test_shifts_refuse_floats_and_bools(device, dtype, name):
    t = random_tensor((3,), dtype)
    for op, kernel in (("bitwise_left_shift", "lshift"), ("bitwise_right_shift", "rshift")):
        with pytest.raises(NotImplementedError, match=f"\"{kernel}_(cpu|cuda)\" not implemented for '{name}'"):
            from_torch(t, device).binary(op, from_torch(t, device))
