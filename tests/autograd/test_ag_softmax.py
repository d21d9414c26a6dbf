"""softmax and log_softmax (functions/softmax.py) against torch: forward values and gradients (float64),
gradcheck and gradgradcheck (the double backward goes through the Tensor-op form of the backward)."""

from __future__ import annotations

import pytest
from ag_helpers import I, check_forward_and_gradients, check_gradcheck, check_gradgradcheck, params

CASES = [
    ("softmax", lambda lib, a: a.softmax(1), [I((3, 4))]),
    ("softmax-dim0-t", lambda lib, a: a.softmax(0), [I((3, 4), layout="t")]),
    ("log_softmax", lambda lib, a: a.log_softmax(-1), [I((2, 3, 4))]),
    ("log_softmax-dim1", lambda lib, a: a.log_softmax(1), [I((2, 3, 4))]),
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
