"""sort / argsort / topk on NDArray against torch, on every device: layouts (contiguous, transposed,
sliced), ties (stable), NaN and signed zeros, long rows, 0-d and empty arrays, and torch's errors."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, raises_like, random_tensor

import genesis_ndarray as nd

LAYOUTS = ("contiguous", "transposed", "sliced")


def _array(t: torch.Tensor, device, layout: str = "contiguous") -> nd.NDArray:
    """An NDArray holding t's values, contiguous or as a non-contiguous view (t at least 2-d for those)."""
    if layout == "contiguous":
        return from_torch(t, device)
    if layout == "transposed":
        return from_torch(t.transpose(0, -1).contiguous(), device).transpose(0, -1)
    wide = torch.stack([t, random_tensor(t.shape, t.dtype)], dim=-1)  # every other element along the last dim
    return from_torch(wide.reshape(*t.shape[:-1], 2 * t.shape[-1]), device)[..., ::2]


# ------------------------------------------------------------------ sort / argsort / topk
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_with_ties(device, layout, dim, descending):
    t = torch.randint(-3, 4, (6, 7, 5)).float()  # many ties: only a stable sort matches torch's indices
    values, indices = _array(t, device, layout).sort(dim, descending, stable=True)
    expected = torch.sort(t, dim=dim, descending=descending, stable=True)
    assert_same(values, expected.values)
    assert_same(indices, expected.indices)
    assert_same(
        _array(t, device, layout).argsort(dim, descending, stable=True),
        torch.argsort(t, dim=dim, descending=descending, stable=True),
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.uint8, torch.bool, torch.bfloat16])
def test_sort_dtypes(device, dtype):
    t = random_tensor((3, 9), dtype)
    values, indices = from_torch(t, device).sort(-1, stable=True)
    expected = torch.sort(t, stable=True)
    assert_same(values, expected.values)
    assert_same(indices, expected.indices)


def test_sort_nan_and_signed_zero(device):
    t = torch.tensor([[1.0, float("nan"), -0.0, -2.0, 0.0, float("nan"), float("-inf")]])
    for descending in (False, True):
        values, indices = from_torch(t, device).sort(1, descending, stable=True)
        expected = torch.sort(t, dim=1, descending=descending, stable=True)
        assert_same(values, expected.values)
        assert_same(indices, expected.indices)


def test_sort_long_rows(device):
    t = torch.randperm(2500).float().reshape(1, 2500)  # longer than one in-register block on cuda
    values, indices = from_torch(t, device).sort(1, descending=True)
    expected = torch.sort(t, dim=1, descending=True)
    assert_same(values, expected.values)
    assert_same(indices, expected.indices)


def test_sort_zero_d_and_empty(device):
    s = random_tensor(())
    values, indices = from_torch(s, device).sort(0)
    assert_same(values, s)
    assert_same(indices, torch.tensor(0))
    for e in (random_tensor((0, 3)), random_tensor((3, 0))):
        values, indices = from_torch(e, device).sort(-1)
        expected = torch.sort(e, dim=-1)
        assert_same(values, expected.values)
        assert_same(indices, expected.indices)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_topk(device, layout, dim, largest, k):
    t = torch.randperm(4 * 5 * 6).float().reshape(4, 5, 6) - 60  # distinct values: indices are unique
    values, indices = _array(t, device, layout).topk(k, dim, largest)
    expected = torch.topk(t, k, dim=dim, largest=largest)
    assert_same(values, expected.values)
    assert_same(indices, expected.indices)


def test_topk_whole_dim_int_and_zero_d(device):
    t = torch.randperm(12).reshape(3, 4)
    values, indices = from_torch(t, device).topk(4, 1)
    expected = torch.topk(t, 4, dim=1)
    assert_same(values, expected.values)
    assert_same(indices, expected.indices)
    s = random_tensor(())
    for k in (0, 1):
        values, indices = from_torch(s, device).topk(k)
        expected = torch.topk(s, k)
        assert_same(values, expected.values)
        assert_same(indices, expected.indices)


# ------------------------------------------------------------------ errors, as torch raises them
SORT_ERR_CASES = [
    ("sort_bad_dim", lambda x: x.sort(2), "Dimension out of range"),
    ("topk_k_too_big", lambda x: x.topk(6), "k out of range"),
    ("topk_k_negative", lambda x: x.topk(-1), "k out of range"),
    ("topk_bool", lambda x: (x > 0).topk(1), "bool"),
]


@pytest.mark.parametrize("case", SORT_ERR_CASES, ids=[c[0] for c in SORT_ERR_CASES])
def test_errors_match_torch(device, case):
    _, fn, match = case
    t = random_tensor((4, 5))
    raises_like(lambda: fn(t), lambda: fn(from_torch(t, device)), match)
