"""Scans (functions/scan.py): cumsum and cumprod against torch, forward values and every input's gradient
(float64), gradcheck and gradgradcheck, through zeros too; dtypes, in-place forms and torch's errors."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    CPU,
    FWD_TOL,
    I,
    assert_close,
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

import genesis

CASES = [
    ("cumsum", lambda lib, a: a.cumsum(1), [I((3, 4))]),
    ("cumsum-dim0-t", lambda lib, a: a.cumsum(0), [I((3, 4), layout="t")]),
    ("cumsum-3d", lambda lib, a: lib.cumsum(a, -2), [I((2, 3, 4))]),
    ("cumprod", lambda lib, a: a.cumprod(1), [I((3, 4))]),
    ("cumprod-t", lambda lib, a: a.cumprod(0), [I((3, 4), layout="t")]),
    ("cumprod-zeros", lambda lib, a: a.cumprod(1), [I((3, 4), domain="zeros")]),
    ("cumprod-zeros-t", lambda lib, a: a.cumprod(0), [I((4, 3), domain="zeros", layout="t")]),
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


def test_cumprod_and_prod_gradients_with_several_zeros_match_torch():
    """Two zeros in one row: prod's backward (reduce.py) uses the exclusive products of scan.py."""
    t = values((2, 6))
    t[0, 1] = t[0, 4] = 0  # two zeros in one row, none in the other
    for fn in (lambda x: x.cumprod(1), lambda x: x.prod(1), lambda x: x.prod()):
        tl, gl = t.clone().requires_grad_(), to_genesis(t, CPU, requires_grad=True)
        w = values(tuple(fn(tl).shape))
        (fn(tl) * w).sum().backward()
        (fn(gl) * to_genesis(w, CPU)).sum().backward()
        assert_close(gl.grad, tl.grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["f16", "bf16", "f32"])
def test_cumsum_forward_half_types(device, dtype):
    ta = values((3, 5)).to(dtype)
    assert_fwd(to_genesis_any_dtype(ta, device).cumsum(1), ta.cumsum(1), **FWD_TOL[dtype])


def test_integer_inputs_promote_as_torch(device):
    ti, tf = torch.randint(1, 6, (3, 4), dtype=torch.int32), values((3, 4), "pos").float()
    i, f = to_genesis(ti, device), to_genesis(tf, device)
    assert_close(i.cumsum(1), ti.cumsum(1))
    assert_close(i.cumprod(0), ti.cumprod(0))
    assert_close(f.cumsum(1, dtype=genesis.float64), tf.cumsum(1, dtype=torch.float64))


def test_inplace_forms_match_torch(device):
    assert_inplace_forms_match_torch(device, [("cumsum_", (1,)), ("cumprod_", (0,))])


def test_bad_dim_raises_like_torch(device):
    with pytest.raises(IndexError, match="Dimension out of range"):
        to_genesis(values((3,), dtype=torch.float32), device).cumsum(1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        values((3,)).cumsum(1)
