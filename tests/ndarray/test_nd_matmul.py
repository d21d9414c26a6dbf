"""matmul against torch: 1-d, 2-d and batched operands with broadcasting, transposed views."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, transposed

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


LINEAR_ACTS = {
    "none": lambda x: x,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}


@pytest.mark.parametrize("activation", list(LINEAR_ACTS))
@pytest.mark.parametrize("dtype", [F32, torch.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(device, activation, dtype, bias):
    x, w = random_tensor((2, 7, 96), dtype), random_tensor((80, 96), dtype)
    b = random_tensor((80,), dtype) if bias else None
    expected = LINEAR_ACTS[activation](
        torch.nn.functional.linear(x.double(), w.double(), b.double() if bias else None)
    ).to(dtype)
    out = from_torch(x, device).linear(from_torch(w, device), from_torch(b, device) if bias else None, activation)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == F32 else dict(rtol=1.6e-2, atol=2e-2)
    assert_same(out, expected, **tol)


def test_linear_of_strided_input_and_transposed_weight(device):
    x = random_tensor((9, 2 * 33), F64)[:, ::2]
    w = random_tensor((5, 33), F64)
    out = from_torch(x, device).linear(transposed(w, device), None)  # the weight stored transposed
    assert_same(out, x @ w.T, rtol=1e-12, atol=1e-12)


def test_linear_errors_name_shapes_and_dtypes(device):
    x, w = from_torch(random_tensor((4, 3)), device), from_torch(random_tensor((5, 2)), device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 2x5\)"):
        x.linear(w)
    wb = from_torch(random_tensor((5, 3), torch.bfloat16), device)
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype, but got Float and BFloat16"):
        x.linear(wb)
    with pytest.raises(RuntimeError, match=r"bias must have shape \(5,\)"):
        x.linear(from_torch(random_tensor((5, 3)), device), from_torch(random_tensor((4,)), device))


def test_float32_matmul_precision_switch(device):
    import genesis_ndarray as nd

    ta, tb = random_tensor((256, 512)), random_tensor((512, 256))
    a, b = from_torch(ta, device), from_torch(tb, device)
    ref = ta.double() @ tb.double()
    assert nd.get_float32_matmul_precision() == "highest"
    exact = (a @ b).numpy()
    assert float(abs(torch.from_numpy(exact).double() - ref).max() / ref.abs().max()) < 1e-5
    try:
        nd.set_float32_matmul_precision("high")
        fast = torch.from_numpy((a @ b).numpy()).double()
        err = float((fast - ref).norm() / ref.norm())
        assert err < 1e-3  # tf32 on cuda (about 3e-4), exact on cpu
    finally:
        nd.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="Invalid precision"):
        nd.set_float32_matmul_precision("low")
