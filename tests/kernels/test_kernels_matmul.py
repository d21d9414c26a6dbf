"""Batched matmul against torch (float64 references)."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import assert_close, buf, make, sync

import genesis_kernels as gk


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("mnk", [(1, 1, 1), (17, 19, 23), (64, 33, 70)])
def test_matmul(device: str, dtype: str, mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    a = make((2, m, k), dtype, device, low=-1, high=1)
    b = make((2, k, n), dtype, device, low=-1, high=1)
    out = torch.empty(2, m, n, dtype=a.dtype, device=device)
    gk.matmul(buf(a), buf(b), buf(out))
    sync(device)
    ref = (a.double() @ b.double()).to(a.dtype)
    # Half types: exact products, float32 accumulation, one rounding: the dtype's default (about one ulp).
    t = {"float32": dict(rtol=1e-5, atol=1e-5 * k**0.5), "float64": dict(rtol=1e-12, atol=1e-12)}.get(dtype, {})
    assert_close(out, ref, dtype, **t)


@pytest.mark.parametrize("case", ["transposed_a", "transposed_b", "batch_broadcast", "zero_k", "tf32", "sliced"])
def test_matmul_layouts(device: str, case: str) -> None:
    m, n, k = 21, 18, 35
    a = make((3, m, k), "float32", device, low=-1, high=1)
    b = make((3, k, n), "float32", device, low=-1, high=1)
    tf32 = False
    if case == "transposed_a":
        a = a.transpose(1, 2).contiguous().transpose(1, 2)
    elif case == "transposed_b":
        b = b.transpose(1, 2).contiguous().transpose(1, 2)
    elif case == "batch_broadcast":
        b = make((1, k, n), "float32", device).expand(3, k, n)
    elif case == "zero_k":
        a, b = a[:, :, :0], b[:, :0, :]
    elif case == "sliced":
        a = make((3, m, 2 * k), "float32", device)[:, :, ::2]
    else:
        tf32 = True
    out = torch.empty(3, m, n, device=device)
    gk.matmul(buf(a), buf(b), buf(out), allow_tf32=tf32)
    sync(device)
    t = dict(rtol=5e-3, atol=5e-3) if tf32 else dict(rtol=1e-5, atol=1e-5)
    assert_close(out, (a.double() @ b.double()).float(), **t)
