"""matmul against torch: 1-d, 2-d and batched operands with broadcasting, transposed views."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

F32, F16, F64 = torch.float32, torch.float16, torch.float64


MATMUL_SHAPES = [
    ((4,), (4,)),
    ((3, 4), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((4,), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3, 7), (7, 1)),
    ((1, 3, 4), (2, 4, 5)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{s[0]}@{s[1]}")
@pytest.mark.parametrize("dtype", [F32, F64, F16])
def test_matmul_matches_torch(device, shapes, dtype):
    ta, tb = random_tensor(shapes[0], dtype), random_tensor(shapes[1], dtype)
    expected = (ta.double() @ tb.double()).to(dtype)
    out = from_torch(ta, device) @ from_torch(tb, device)
    tol = {F32: dict(rtol=1e-5, atol=1e-5), F64: dict(rtol=1e-10, atol=1e-10), F16: dict(rtol=2e-3, atol=4e-3)}
    assert_same(out, expected, **tol[dtype])


def test_matmul_of_transposed_operands(device):
    ta, tb = random_tensor((5, 3), F64), random_tensor((4, 5), F64)
    a, b = from_torch(ta, device), from_torch(tb, device)
    assert_same(a.T @ b.T, ta.T @ tb.T)
    assert_same(a.mT[:, ::2] @ b[:, ::2].T, ta.mT[:, ::2] @ tb[:, ::2].T)
