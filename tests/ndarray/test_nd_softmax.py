"""softmax / log_softmax and their backward against torch."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

F32, F16, F64 = torch.float32, torch.float16, torch.float64


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [F32, F64, F16])
def test_softmax_log_softmax_and_backward(device, dim, dtype):
    t = random_tensor((3, 4, 5), dtype) * 4
    a = from_torch(t, device)
    # float16: both torch and genesis compute in float32 and round once; they can differ by one ulp of
    # the result, which near 0 (tiny probabilities, log-probabilities close to 0) is large relative to it.
    tol = dict(rtol=2e-3, atol=1e-3) if dtype == F16 else {}
    assert_same(a.softmax(dim), torch.softmax(t, dim), **tol)
    assert_same(a.log_softmax(dim), torch.log_softmax(t, dim), **tol)
    if dtype == F16:
        return
    dy = random_tensor((3, 4, 5), dtype)
    for log in (False, True):
        x = t.clone().requires_grad_()
        y = torch.log_softmax(x, dim) if log else torch.softmax(x, dim)
        (expected,) = torch.autograd.grad(y, x, dy)
        got = from_torch(y.detach(), device).softmax_backward(from_torch(dy, device), dim, log)
        assert_same(got, expected)
