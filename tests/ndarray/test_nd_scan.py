"""NDArray math ops against torch: more unary names, atan2/floor_divide/remainder/fmod, lerp, addcmul,
addcdiv, clamp with array bounds, cumsum/cumprod, tril/triu. Values, result dtypes, broadcasting,
strided inputs and the errors torch raises."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

F32, F16, BF16, F64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
I32, I64, U8, I8, BOOL = torch.int32, torch.int64, torch.uint8, torch.int8, torch.bool
FLOATS = [F32, F16, BF16, F64]


def _nd(t, device):
    return from_torch(t, device)


def _transposed(t, device):
    """A non-contiguous NDArray equal to t (2-d): t.T stored contiguously, viewed back through .T."""
    a = from_torch(t.T.contiguous(), device).T
    assert not a.is_contiguous()
    return a


# ------------------------------------------------------------------ unary
UNARY = {
    # op -> (torch function, input domain, dtypes)
    "expm1": (torch.expm1, "any", FLOATS + [I32, I64]),
    "log10": (torch.log10, "pos", FLOATS + [I64]),
    "erf": (torch.erf, "any", FLOATS + [I32]),
    "square": (torch.square, "any", FLOATS + [I32, I64]),
    "exp2": (torch.exp2, "any", FLOATS + [I32]),
    "log2": (torch.log2, "pos", FLOATS + [I64]),
    "log1p": (torch.log1p, "pos", FLOATS + [I32]),
    "tan": (torch.tan, "small", FLOATS),
    "rsqrt": (torch.rsqrt, "pos", FLOATS + [I64]),
    "reciprocal": (torch.reciprocal, "any", FLOATS + [I32]),
    "silu": (torch.nn.functional.silu, "any", FLOATS),
}
UNARY_CASES = [(op, dt) for op, (_, _, dts) in UNARY.items() for dt in dts]


def _unary_input(domain, dtype, shape=(4, 6)):
    if domain == "pos":
        return random_tensor(shape, dtype, low=0.5, high=3) if dtype.is_floating_point else \
            random_tensor(shape, dtype, low=1, high=20)
    if domain == "small":
        return random_tensor(shape, dtype, low=-1.2, high=1.2)
    return random_tensor(shape, dtype, nonzero=True, low=None if dtype.is_floating_point else -4,
                         high=None if dtype.is_floating_point else 5)


@pytest.mark.parametrize("op,dtype", UNARY_CASES, ids=[f"{o}-{str(d)[6:]}" for o, d in UNARY_CASES])
def test_unary_matches_torch(device, op, dtype):
    fn, domain, _ = UNARY[op]
    t = _unary_input(domain, dtype)
    assert_same(getattr(_nd(t, device), op)(), fn(t))


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_on_a_transposed_input(device, op):
    fn, domain, _ = UNARY[op]
    t = _unary_input(domain, F32, (6, 4))
    assert_same(getattr(_transposed(t, device), op)(), fn(t))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu_matches_torch(device, approximate, dtype):
    t = random_tensor((5, 7), dtype) * 3
    expected = torch.nn.functional.gelu(t, approximate=approximate)
    assert_same(_nd(t, device).gelu(approximate), expected)
    assert_same(_transposed(t, device).gelu(approximate), expected)


def test_gelu_refuses_an_unknown_approximation(device):
    with pytest.raises(RuntimeError, match="approximate"):
        _nd(random_tensor((3,)), device).gelu("erf")


# ------------------------------------------------------------------ binary
BINARY = ["atan2", "floor_divide", "remainder", "fmod"]
BINARY_DTYPES = [(F32, F32), (F64, F32), (F16, F16), (BF16, F32), (I32, I32), (I64, I32), (I32, F32)]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("da,db", BINARY_DTYPES, ids=[f"{str(a)[6:]}-{str(b)[6:]}" for a, b in BINARY_DTYPES])
def test_binary_methods_match_torch(device, op, da, db):
    ta = random_tensor((2, 3, 4), da, nonzero=True) * (3 if da.is_floating_point else 1)
    tb = random_tensor((3, 1), db, nonzero=True) * (2 if db.is_floating_point else 1)
    expected = getattr(torch, op)(ta, tb)
    got = getattr(_nd(ta, device), op)(_nd(tb, device))
    assert_same(got, expected)  # remainder / fmod are exact fmod-based, as torch's


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_binary_methods_take_scalars(device, op):
    t = random_tensor((3, 5), F32) * 4
    assert_same(getattr(_nd(t, device), op)(1.5), getattr(torch, op)(t, 1.5))
    ti = random_tensor((3, 5), I64) * 3
    assert_same(getattr(_nd(ti, device), op)(4), getattr(torch, op)(ti, 4))


def test_reflected_modulo_and_floor_division(device):
    t = random_tensor((3, 5), F32, nonzero=True)
    assert_same(7.5 % _nd(t, device), 7.5 % t)
    assert_same(7.5 // _nd(t, device), 7.5 // t)


def test_binary_methods_on_strided_inputs(device):
    ta, tb = random_tensor((4, 5), F32) * 3, random_tensor((4, 5), F32, nonzero=True)
    a, b = _transposed(ta, device), _transposed(tb, device)
    for op in BINARY:
        assert_same(getattr(a, op)(b), getattr(torch, op)(ta, tb))


def test_binary_methods_refuse_mismatched_shapes(device):
    a, b = _nd(random_tensor((3, 4)), device), _nd(random_tensor((3, 5)), device)
    for op in BINARY:
        with pytest.raises(RuntimeError, match="must match the size"):
            getattr(a, op)(b)


# ------------------------------------------------------------------ lerp, addcmul, addcdiv
@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp_with_scalar_and_array_weights(device, dtype):
    ta, tb = random_tensor((3, 4), dtype), random_tensor((4,), dtype)
    tw = random_tensor((2, 1, 4), dtype, low=-0.5, high=1.5)
    a, b, w = _nd(ta, device), _nd(tb, device), _nd(tw, device)
    for weight in (0.3, 0.8):
        assert_same(a.lerp(b, weight), torch.lerp(ta, tb, weight))
    assert_same(a.lerp(b, w), torch.lerp(ta, tb, tw))


def test_lerp_on_strided_inputs(device):
    ta, tb, tw = random_tensor((4, 5)), random_tensor((4, 5)), random_tensor((4, 5), low=0, high=1)
    got = _transposed(ta, device).lerp(_nd(tb, device), _transposed(tw, device))
    assert_same(got, torch.lerp(ta, tb, tw))


def test_lerp_errors_match_torch(device):
    a, b = _nd(random_tensor((3,)), device), _nd(random_tensor((3,), F64), device)
    with pytest.raises(RuntimeError, match="expected dtype"):
        a.lerp(b, 0.5)
    with pytest.raises(RuntimeError, match="expected dtype"):
        a.lerp(a, b)
    with pytest.raises(RuntimeError, match="must match the size"):
        a.lerp(_nd(random_tensor((4,)), device), 0.5)
    ints = _nd(random_tensor((3,), I64), device)
    with pytest.raises(NotImplementedError):
        ints.lerp(ints, 0.5)


ADDC_DTYPES = [(F32, F32, F32), (F16, F16, F16), (BF16, BF16, BF16), (F64, F32, F32), (I32, F32, F16),
               (I32, I64, I32), (F16, F32, F32)]


# Integer addcdiv is an error in torch (test_addc_errors_match_torch), so it is not a case here.
ADDC_CASES = [(op, *ds) for op in ("addcmul", "addcdiv") for ds in ADDC_DTYPES
              if op == "addcmul" or ds[1].is_floating_point or ds[2].is_floating_point]


@pytest.mark.parametrize("op,dx,d1,d2", ADDC_CASES,
                         ids=[f"{c[0]}-" + "-".join(str(d)[6:] for d in c[1:]) for c in ADDC_CASES])
def test_addcmul_addcdiv_match_torch(device, op, dx, d1, d2):
    tx, t1 = random_tensor((2, 3, 4), dx), random_tensor((3, 1), d1)
    t2 = random_tensor((4,), d2, nonzero=True)
    value = 2 if not torch.promote_types(torch.promote_types(dx, d1), d2).is_floating_point else -0.75
    expected = getattr(torch, op)(tx, t1, t2, value=value)
    got = getattr(_nd(tx, device), op)(_nd(t1, device), _nd(t2, device), value=value)
    tol = {F16: dict(rtol=4e-3, atol=2e-3), BF16: dict(rtol=3.2e-2, atol=1.6e-2)}.get(expected.dtype, {})
    assert_same(got, expected, **tol)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_with_zero_dim_operands_promotes_as_torch(device, op):
    tx, t1, t2 = random_tensor((3, 4), F16), random_tensor((), F64), random_tensor((3, 4), F16, nonzero=True)
    expected = getattr(torch, op)(tx, t1, t2)
    assert expected.dtype == F16
    assert_same(getattr(_nd(tx, device), op)(_nd(t1, device), _nd(t2, device)), expected)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc_on_strided_inputs(device, op):
    tx, t1, t2 = random_tensor((5, 4)), random_tensor((5, 4)), random_tensor((5, 4), nonzero=True)
    got = getattr(_transposed(tx, device), op)(_nd(t1, device), _transposed(t2, device), value=0.5)
    assert_same(got, getattr(torch, op)(tx, t1, t2, value=0.5))


def test_addc_errors_match_torch(device):
    x = _nd(random_tensor((3,)), device)
    ints = _nd(random_tensor((3,), I32, nonzero=True), device)
    with pytest.raises(RuntimeError, match="Integer division"):
        x.addcdiv(ints, ints)
    with pytest.raises(RuntimeError, match="must match the size"):
        x.addcmul(x, _nd(random_tensor((4,)), device))


# ------------------------------------------------------------------ clamp with array bounds
CLAMP_DTYPES = [(F32, F32), (F32, F64), (I64, F32), (I32, I32), (F16, F16), (BF16, BF16)]


@pytest.mark.parametrize("dx,db", CLAMP_DTYPES, ids=[f"{str(a)[6:]}-{str(b)[6:]}" for a, b in CLAMP_DTYPES])
def test_clamp_with_array_bounds(device, dx, db):
    tx = random_tensor((2, 3, 4), dx) * (2 if dx.is_floating_point else 1)
    lo = random_tensor((3, 1), db, low=-1, high=0) if db.is_floating_point else random_tensor((3, 1), db, -3, 0)
    hi = random_tensor((4,), db, low=0, high=1) if db.is_floating_point else random_tensor((4,), db, 0, 3)
    x, a_lo, a_hi = _nd(tx, device), _nd(lo, device), _nd(hi, device)
    assert_same(x.clamp(a_lo, a_hi), torch.clamp(tx, lo, hi))
    assert_same(x.clamp(a_lo, None), torch.clamp(tx, min=lo))
    assert_same(x.clamp(None, a_hi), torch.clamp(tx, max=hi))


def test_clamp_bounds_broadcast_the_result(device):
    tx, lo = random_tensor((4,)), random_tensor((3, 1), low=-0.5, high=0.0)
    assert_same(_nd(tx, device).clamp(_nd(lo, device), None), torch.clamp(tx, min=lo))
    tt, hi = random_tensor((4, 3)), random_tensor((4, 1), low=0.0, high=0.5)
    assert_same(_transposed(tt, device).clamp(None, _nd(hi, device)), torch.clamp(tt, max=hi))


def test_clamp_with_mismatched_bounds_raises(device):
    with pytest.raises(RuntimeError, match="must match the size"):
        _nd(random_tensor((3, 4)), device).clamp(_nd(random_tensor((5,)), device), None)


# ------------------------------------------------------------------ cumsum, cumprod
SCAN_DTYPES = [F32, F64, F16, BF16, I32, I64, U8, BOOL]


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=[str(d)[6:] for d in SCAN_DTYPES])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans_match_torch(device, op, dtype, dim):
    if dtype.is_floating_point:
        t = random_tensor((3, 5, 6), dtype, low=0.6, high=1.5) if op == "cumprod" else random_tensor((3, 5, 6), dtype)
    else:
        t = random_tensor((3, 5, 6), dtype, low=-2 if dtype != U8 else 0, high=3)
    expected = getattr(torch, op)(t, dim)
    tol = {F16: dict(rtol=4e-3, atol=4e-3), BF16: dict(rtol=3.2e-2, atol=3.2e-2)}.get(dtype, {})
    assert_same(getattr(_nd(t, device), op)(dim), expected, **tol)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_with_dtype_and_strides(device, op):
    t = random_tensor((6, 5), F32, low=0.5, high=1.5)
    a = _transposed(t, device)
    assert_same(getattr(a, op)(1), getattr(torch, op)(t, 1))
    assert_same(getattr(a, op)(0, dtype="float64"), getattr(torch, op)(t, 0, dtype=F64))
    ti = random_tensor((4, 5), I32, low=-3, high=4)
    assert_same(getattr(_nd(ti, device), op)(1, dtype="int32"), getattr(torch, op)(ti, 1, dtype=I32))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_of_zero_dim_and_empty_arrays(device, op):
    t = random_tensor(())
    assert_same(getattr(_nd(t, device), op)(0), getattr(torch, op)(t, 0))
    e = torch.empty((0, 3))
    assert_same(getattr(_nd(e, device), op)(1), getattr(torch, op)(e, 1))


def test_cumprod_through_zeros(device):
    t = random_tensor((3, 6), nonzero=True)
    t[0, 2] = t[1, 0] = t[1, 4] = 0
    assert_same(_nd(t, device).cumprod(1), torch.cumprod(t, 1))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_refuse_a_bad_dim(device, op):
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(_nd(random_tensor((3, 2)), device), op)(2)


# ------------------------------------------------------------------ tril, triu
@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("dtype", [F32, BF16, I64, BOOL], ids=["f32", "bf16", "i64", "bool"])
def test_triangles_match_torch(device, op, diagonal, dtype):
    t = random_tensor((2, 4, 5), dtype)
    assert_same(getattr(_nd(t, device), op)(diagonal), getattr(torch, op)(t, diagonal))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangles_of_strided_and_wide_inputs(device, op):
    t = random_tensor((6, 4))
    assert_same(getattr(_transposed(t, device), op)(1), getattr(torch, op)(t, 1))
    w = random_tensor((3, 7))
    assert_same(getattr(_nd(w, device), op)(-1), getattr(torch, op)(w, -1))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangles_need_two_dims(device, op):
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        getattr(_nd(random_tensor((4,)), device), op)()


# ------------------------------------------------------------------ prod with zeros (forward)
def test_prod_through_zeros(device):
    t = random_tensor((3, 4), nonzero=True)
    t[0, 1] = t[2, 0] = t[2, 3] = 0
    assert_same(_nd(t, device).prod(1), torch.prod(t, 1))
    assert_same(_nd(t, device).prod(0, keepdim=True), torch.prod(t, 0, keepdim=True))
