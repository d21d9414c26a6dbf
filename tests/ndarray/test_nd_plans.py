"""Resolved per-layout plans (registry.PlanCache; the cuda backend's matmul and linear) against torch.

A plan is made on the first call of a layout class and reused for every later call of the same class, so
each test makes one plan and then calls again with fresh random values, and with operands that differ
only in what a plan must not ignore (strides, pointer alignment, bias, activation, matmul precision).
"""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, to_torch

import genesis_ndarray as nd
from genesis_ndarray import registry

F32, F64 = torch.float32, torch.float64


def _layouts(rows: int, cols: int, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The same shape (rows, cols) stored four ways (fresh values each)."""
    return {
        "contiguous": random_tensor((rows, cols), dtype),
        "transposed": random_tensor((cols, rows), dtype).T,
        "column slice": random_tensor((rows, cols + 3), dtype)[:, 1 : cols + 1],
        "row step": random_tensor((2 * rows, cols), dtype)[::2],
    }


def _misaligned(t: torch.Tensor, device) -> nd.NDArray:
    """``t``'s values in an array whose first element sits one element past an aligned address."""
    flat = from_torch(torch.cat([torch.zeros(1, dtype=t.dtype), t.reshape(-1)]), device)
    return flat[1:].reshape(*t.shape)


@pytest.mark.parametrize("mkn", [(5, 7, 3), (64, 96, 72), (1, 16, 9)], ids=str)
def test_matmul_plans_are_keyed_by_layout(device, mkn):
    m, k, n = mkn
    for _ in range(2):  # the second round reuses every plan the first made, on fresh values
        for name_a, ta in _layouts(m, k, F64).items():
            for name_b, tb in _layouts(k, n, F64).items():
                out = from_torch(ta, device).matmul(from_torch(tb, device))
                assert torch.allclose(to_torch(out), ta @ tb, rtol=1e-7, atol=1e-7), (name_a, name_b)


def test_matmul_plan_is_not_reused_for_another_alignment(device):
    ta, tb = random_tensor((16, 8), F32), random_tensor((8, 24), F32)
    assert_same(from_torch(ta, device).matmul(from_torch(tb, device)), ta @ tb, rtol=1e-5, atol=1e-5)
    ta, tb = random_tensor((16, 8), F32), random_tensor((8, 24), F32)
    out = _misaligned(ta, device).matmul(_misaligned(tb, device))
    assert_same(out, ta @ tb, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(6, 10), (2, 3, 10), (1, 10)], ids=str)
@pytest.mark.parametrize("activation", ["none", "relu", "silu"])
def test_linear_plans(device, shape, activation):
    act = {"none": lambda x: x, "relu": torch.relu, "silu": torch.nn.functional.silu}[activation]
    for _ in range(2):
        x, w, b = random_tensor(shape, F64), random_tensor((4, 10), F64), random_tensor((4,), F64)
        wt = random_tensor((10, 4), F64).T  # the same shape, transposed storage: another layout class
        xt = random_tensor(tuple(reversed(shape)), F64).permute(*reversed(range(len(shape))))
        for xx in (x, xt):
            for ww in (w, wt):
                got = from_torch(xx, device).linear(from_torch(ww, device), from_torch(b, device), activation)
                assert_same(got, act(torch.nn.functional.linear(xx, ww, b)))
                got = from_torch(xx, device).linear(from_torch(ww, device), None, activation)
                assert_same(got, act(torch.nn.functional.linear(xx, ww)))


def test_matmul_precision_change_clears_plans(device):
    """A plan made under "highest" (IEEE float32) must not serve "high" (tf32), nor the other way round."""
    ta, tb = random_tensor((128, 256), F32), random_tensor((256, 128), F32)
    exact = ta.double() @ tb.double()
    a, b = from_torch(ta, device), from_torch(tb, device)
    assert_same(a.matmul(b), exact.float(), rtol=1e-4, atol=1e-4)
    try:
        nd.set_float32_matmul_precision("high")
        assert_same(a.matmul(b), exact.float(), rtol=5e-2, atol=5e-2)
    finally:
        nd.set_float32_matmul_precision("highest")
    # Back under "highest": IEEE again (a tf32 plan kept here would miss this tolerance by far on a GPU).
    assert_same(a.matmul(b), exact.float(), rtol=1e-4, atol=1e-4)


def test_plan_cache_is_cleared_by_invalidation_and_bounded():
    plans = registry.PlanCache(limit=3)
    for i in range(3):
        plans.put(("key", i), i)
    assert len(plans) == 3
    plans.put(("key", 3), 3)  # full: forgets the rest first
    assert dict(plans) == {("key", 3): 3}
    default = nd.get_default_dtype()
    nd.set_default_dtype(nd.float64)
    try:
        assert not plans  # set_default_dtype invalidates every resolved entry and plan
    finally:
        nd.set_default_dtype(default)
    plans.put("again", 1)
    nd.set_float32_matmul_precision("high")
    nd.set_float32_matmul_precision("highest")
    assert not plans
