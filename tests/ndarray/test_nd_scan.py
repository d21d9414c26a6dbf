"""cumsum / cumprod against torch: values, result dtypes (integers accumulate in int64), the dtype
argument, strided, 0-d and empty inputs, zeros, bad dims."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, transposed

F32, F16, BF16, F64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
I32, I64, U8, BOOL = torch.int32, torch.int64, torch.uint8, torch.bool
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
    assert_same(getattr(from_torch(t, device), op)(dim), expected, **tol)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_with_dtype_and_strides(device, op):
    t = random_tensor((6, 5), F32, low=0.5, high=1.5)
    a = transposed(t, device)
    assert_same(getattr(a, op)(1), getattr(torch, op)(t, 1))
    assert_same(getattr(a, op)(0, dtype="float64"), getattr(torch, op)(t, 0, dtype=F64))
    ti = random_tensor((4, 5), I32, low=-3, high=4)
    assert_same(getattr(from_torch(ti, device), op)(1, dtype="int32"), getattr(torch, op)(ti, 1, dtype=I32))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_of_zero_dim_and_empty_arrays(device, op):
    t = random_tensor(())
    assert_same(getattr(from_torch(t, device), op)(0), getattr(torch, op)(t, 0))
    e = torch.empty((0, 3))
    assert_same(getattr(from_torch(e, device), op)(1), getattr(torch, op)(e, 1))


def test_cumprod_through_zeros(device):
    t = random_tensor((3, 6), nonzero=True)
    t[0, 2] = t[1, 0] = t[1, 4] = 0
    assert_same(from_torch(t, device).cumprod(1), torch.cumprod(t, 1))


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_refuse_a_bad_dim(device, op):
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(from_torch(random_tensor((3, 2)), device), op)(2)
