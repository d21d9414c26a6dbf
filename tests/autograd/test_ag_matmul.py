"""matmul (functions/matmul.py) against torch: 1-d, 2-d, batched and broadcast operands, transposed
layouts; forward values and gradients (float64), gradcheck and gradgradcheck."""

from __future__ import annotations

import pytest
from ag_helpers import I, check_forward_and_gradients, check_gradcheck, check_gradgradcheck, params

CASES = [
    ("matmul-1d-1d", lambda lib, a, b: a @ b, [I((4,), False), I((4,))]),
    ("matmul-2d-1d", lambda lib, a, b: a @ b, [I((3, 4), False), I((4,))]),
    ("matmul-1d-2d", lambda lib, a, b: a @ b, [I((4,)), I((4, 5), False)]),
    ("matmul-2d", lambda lib, a, b: a @ b, [I((3, 4), False), I((4, 5))]),
    ("matmul-2d-both-t", lambda lib, a, b: a.matmul(b), [I((3, 4), layout="t"), I((4, 5), layout="t")]),
    ("matmul-batched", lambda lib, a, b: a @ b, [I((2, 3, 4)), I((2, 4, 5))]),
    ("matmul-bcast", lambda lib, a, b: a @ b, [I((2, 1, 3, 4), False), I((5, 4, 2))]),
    ("matmul-bcast-2d", lambda lib, a, b: a @ b, [I((2, 3, 4)), I((4, 5))]),
    ("matmul-1d-batched", lambda lib, a, b: a @ b, [I((4,)), I((2, 4, 5))]),
    ("matmul-batched-1d", lambda lib, a, b: a @ b, [I((2, 3, 4)), I((4,))]),
    ("linear", lambda lib, x, w, b: x @ w.T + b, [I((5, 4), False), I((3, 4)), I((3,))]),
    # the fused Linear Function (one launch, bias in the epilogue) behind nn.functional.linear
    ("linear-fused", lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [I((2, 5, 4)), I((3, 4)), I((3,))]),
    ("linear-fused-nobias", lambda lib, x, w: lib.nn.functional.linear(x, w), [I((5, 4), layout="t"), I((3, 4))]),
    ("linear-fused-1d", lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), [I((4,)), I((3, 4), False), I((3,))]),
    ("linear-fused-t-weight", lambda lib, x, w: lib.nn.functional.linear(x, w), [I((6, 4)), I((3, 4), layout="t")]),
]
PARAMS = params(CASES)


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)
