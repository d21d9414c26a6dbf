"""Reductions against torch: sum / mean / prod / amax / amin / all / any, logsumexp, var, max / min with indices,
argmax / argmin."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

F32, F16, BF16, F64, I32, I64, BOOL = (
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int32,
    torch.int64,
    torch.bool,
)
DIMS = [None, 0, -1, 1, (0, 2), (-1, 0)]


def _torch_reduce(op, t, dim, keepdim):
    if dim is None and not keepdim:
        return getattr(torch, op)(t)
    dim = tuple(range(t.ndim)) if dim is None else dim
    return getattr(torch, op)(t, dim=dim, keepdim=keepdim)


@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize(
    "op,dtype",
    [
        ("sum", F32),
        ("sum", F64),
        ("sum", I32),
        ("sum", BOOL),
        ("sum", F16),
        ("mean", F32),
        ("mean", F64),
        ("amax", F32),
        ("amax", I64),
        ("amin", F32),
        ("amin", F16),
        ("all", BOOL),
        ("any", BOOL),
        ("all", F32),
    ],
    ids=lambda v: v if isinstance(v, str) else str(v)[6:],
)
def test_reduction_matches_torch(device, op, dtype, dim, keepdim):
    t = random_tensor((3, 4, 5), dtype)
    if op in ("all", "any") and dtype == BOOL:
        t = torch.rand(3, 4, 5) > 0.2  # mostly True, so all() is neither trivially True nor False
    out = getattr(from_torch(t, device), op)(dim, keepdim)
    # float16 sums accumulate in float32 and round once, as torch's: the float16 default tolerance holds.
    assert_same(out, _torch_reduce(op, t, dim, keepdim))


@pytest.mark.parametrize("dim", [0, -1, (0, 1)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp(device, dim, keepdim):
    t = random_tensor((3, 4, 5), F64) * 10
    assert_same(from_torch(t, device).logsumexp(dim, keepdim), torch.logsumexp(t, dim, keepdim))


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var(device, dim, correction, keepdim):
    t = random_tensor((3, 4, 5), F64)
    assert_same(
        from_torch(t, device).var(dim, correction, keepdim),
        torch.var(t, dim=dim, correction=correction, keepdim=keepdim),
    )


def test_sum_with_dtype_and_integer_promotion(device):
    t = random_tensor((4, 5), I32)
    a = from_torch(t, device)
    assert_same(a.sum(), t.sum())  # int32 -> int64, as torch
    assert_same(a.sum(1), t.sum(1))
    assert_same(a.sum(0, False, "float64"), t.sum(0, dtype=F64))
    f = random_tensor((4, 5), F16)
    assert_same(from_torch(f, device).sum(1, dtype="float32"), f.sum(1, dtype=F32))


@pytest.mark.parametrize("half", [F16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("shape,dim", [((37, 5), 0), ((6, 3, 29), (0, 2)), ((4096, 3), 0)], ids=["rows", "two", "long"])
def test_half_reduced_into_float32(device, half, op, shape, dim):
    """dtype=float32 over a half input (a Linear's bias gradient under autocast): the result is torch's
    float32 reduction of the float32 values (on cuda the kernels read the half input, no float32 copy)."""
    t = random_tensor(shape, half)
    if op == "prod":
        t = (t.float().sign() * (1 + t.float().abs() / 64)).to(half)  # near 1: a product that stays finite
        dim = dim if isinstance(dim, int) else dim[-1]  # prod takes one dim, as torch.prod
    got = getattr(from_torch(t, device), op)(dim, False, "float32")
    ref = getattr(torch, op)(t.float(), dim=dim)
    assert got.dtype.name == "float32"
    torch.testing.assert_close(torch.from_numpy(got.numpy()), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [F32, I32])
def test_max_min_with_indices_and_arg(device, op, dim, keepdim, dtype):
    t = torch.randperm(60).reshape(3, 4, 5).to(dtype) - 30  # distinct values: indices are unique
    a = from_torch(t, device)
    values, indices = getattr(a, op)(dim, keepdim)
    expected = getattr(torch, op)(t, dim=dim, keepdim=keepdim)
    assert_same(values, expected.values)
    assert_same(indices, expected.indices)
    arg = "argmax" if op == "max" else "argmin"
    assert_same(getattr(a, arg)(dim, keepdim), getattr(torch, arg)(t, dim=dim, keepdim=keepdim))
    assert_same(getattr(a, arg)(), getattr(torch, arg)(t))
    assert_same(getattr(a, op)(), getattr(torch, op)(t))


def test_argmax_on_a_non_contiguous_input(device):
    t = random_tensor((4, 6), F32)
    a = from_torch(t, device)
    assert_same(a.T.argmax(), t.T.argmax())
    assert_same(a.T[:, 1:].argmax(1), t.T[:, 1:].argmax(1))


# ------------------------------------------------------------------ prod with zeros (forward)
def test_prod_through_zeros(device):
    t = random_tensor((3, 4), nonzero=True)
    t[0, 1] = t[2, 0] = t[2, 3] = 0
    assert_same(from_torch(t, device).prod(1), torch.prod(t, 1))
    assert_same(from_torch(t, device).prod(0, keepdim=True), torch.prod(t, 0, keepdim=True))
