"""softmax / log_softmax and their backward against torch (float64 references)."""

from __future__ import annotations

import importlib

import pytest
import torch
from kernels_helpers import assert_close, buf, make, sync

import genesis_kernels as gk

gks = importlib.import_module("genesis_kernels.softmax")  # the package exports the function of that name


# (2, _ONE_PASS_MAX + 3): the two-pass online kernel; (2, 5000): a one-pass row of many warps.
@pytest.mark.parametrize(
    "shape", [(1, 1), (7, 13), (3, 37), (2, 3, 129), (2, 5000), (2, gks._ONE_PASS_MAX + 3), (0, 5), (4,)]
)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_backward(device: str, shape: tuple[int, ...], log: bool) -> None:
    x = make(shape, "float32", device)
    out = torch.empty(shape, device=device)
    gk.softmax(buf(x), buf(out), log=log)
    xx = x.double().requires_grad_()
    ref = torch.log_softmax(xx, -1) if log else torch.softmax(xx, -1)
    dy = make(shape, "float32", device)
    ref.backward(dy.double())
    dx = torch.empty(shape, device=device)
    gk.softmax_backward(buf(out), buf(dy), buf(dx), log=log)
    sync(device)
    assert_close(out, ref.detach().float(), rtol=1e-5, atol=1e-6)
    assert_close(dx, xx.grad.float(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_softmax_dtypes_and_strides(device: str, dtype: str) -> None:
    x = make((37, 11), dtype, device).t()  # the softmax dim has stride 11... reversed: stride 1 rows
    out = torch.empty(x.shape[::-1], dtype=x.dtype, device=device).t()
    gk.softmax(buf(x), buf(out))
    sync(device)
    assert_close(out, torch.softmax(x.double(), -1).to(x.dtype), dtype)
