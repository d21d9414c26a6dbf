"""Triangles (functions/creation.py): tril and triu against torch, forward values and gradients (float64),
gradcheck and gradgradcheck, dtypes, in-place forms and torch's errors. The factories: test_ag_random.py
(random ones) and the nn tier."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    I,
    assert_fwd,
    assert_inplace_forms_match_torch,
    check_forward_and_gradients,
    check_gradcheck,
    check_gradgradcheck,
    params,
    to_genesis,
    to_genesis_any_dtype,
    values,
)

CASES = [
    ("tril", lambda lib, a: a.tril(), [I((3, 4))]),
    ("tril-neg", lambda lib, a: a.tril(-1), [I((2, 4, 3), layout="t")]),
    ("triu", lambda lib, a: lib.triu(a, 1), [I((4, 3))]),
    ("triu-t", lambda lib, a: a.triu(-2), [I((3, 4), layout="t")]),
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


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["f16", "bf16", "f32"])
def test_tril_forward_half_types(device, dtype):
    ta = values((3, 5)).to(dtype)
    assert_fwd(to_genesis_any_dtype(ta, device).tril(1), ta.tril(1))


def test_inplace_forms_match_torch(device):
    assert_inplace_forms_match_torch(device, [("tril_", (1,)), ("triu_", (0,))])


def test_tril_of_a_vector_raises_like_torch(device):
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        to_genesis(values((3,), dtype=torch.float32), device).tril()
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        values((3,)).tril()
