"""matmul against torch: 1-d, 2-d and batched operands with broadcasting, transposed views."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, transposed

import genesis_ndarray as nd

F32, F16, F64 = torch.float32, torch.float16, torch.float64
F32_DTYPE, F64_DTYPE = nd.float32, nd.float64


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


@pytest.mark.parametrize("dtype", [F16, torch.bfloat16])
@pytest.mark.parametrize("activation", ["none", "gelu_tanh"])
def test_linear_takes_a_float32_bias_before_its_one_rounding(device, dtype, activation):
    """A 16-bit product with a float32 bias (autocast's "linear" policy): the bias meets the float32
    accumulator, the activation runs on that, and the result is rounded once, so every element is within
    half an ulp of the float64 value. A bias rounded to 16 bits first (torch's autocast) would add up to
    half an ulp of the bias's own: with biases of ~100 next to products of ~8, that shows."""
    x, w = random_tensor((3, 5, 64), dtype), random_tensor((48, 64), dtype)
    b = random_tensor((48,), F32) * 100
    exact = LINEAR_ACTS[activation](torch.nn.functional.linear(x.double(), w.double(), b.double()))
    out = from_torch(x, device).linear(from_torch(w, device), from_torch(b, device), activation)
    assert out.dtype.name == str(dtype).removeprefix("torch.")
    got = torch.from_numpy(out.astype("float64").numpy())
    mantissa = {F16: 10, torch.bfloat16: 7}[dtype]
    half_ulp = 2.0 ** (exact.abs().clamp_min(1e-30).log2().floor() - mantissa) / 2
    assert ((got - exact).abs() <= half_ulp * 1.001 + 1e-4).all()
    rounded_first = LINEAR_ACTS[activation](
        torch.nn.functional.linear(x.double(), w.double(), b.to(dtype).double())
    ).to(dtype).double()  # fmt: skip
    assert ((rounded_first - exact).abs() > half_ulp * 1.001 + 1e-4).any()  # (the check above can tell)


@pytest.mark.parametrize("need", [(True, True, True), (True, False, False), (False, True, True), (False, False, True)])
@pytest.mark.parametrize("batch", [(), (2, 3)], ids=["rows", "batched"])
def test_linear_backward_matches_torch(device, need, batch):
    x, w = random_tensor((*batch, 7, 12), F64), random_tensor((5, 12), F64)
    g = random_tensor((*batch, 7, 5), F64)
    dx, dw, db = from_torch(g, device).linear_backward(
        from_torch(x, device), from_torch(w, device), need[0], need[1], F64_DTYPE if need[2] else None
    )
    for got, want, asked in ((dx, g @ w, need[0]), (dw, g.reshape(-1, 5).T @ x.reshape(-1, 12), need[1]),
                             (db, g.reshape(-1, 5).sum(0), need[2])):  # fmt: skip
        if asked:
            assert_same(got, want, rtol=1e-12, atol=1e-12)
        else:
            assert got is None


def test_linear_backward_sums_a_half_gradient_into_a_float32_bias_gradient(device):
    g = random_tensor((300, 6), torch.bfloat16)
    _, _, db = from_torch(g, device).linear_backward(None, None, False, False, F32_DTYPE)
    assert db.dtype.name == "float32"
    assert_same(db, g.float().sum(0), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="d input needs the weight"):
        from_torch(g, device).linear_backward(None, None, True, False, None)


@pytest.mark.parametrize("low", [torch.bfloat16, F16])
@pytest.mark.parametrize("shape", [(7, 12, 5), (300, 130, 96)], ids=["small", "tensor-core"])
def test_linear_backward_writes_float32_gradients_of_a_half_product(device, low, shape):
    """A 16-bit product's input and weight gradients asked for in float32 (autocast's float32 master
    weight) are the float32 accumulations of the 16-bit operands, rounded once to float32: close to the
    float64 products of the same operands at float32's precision, not 16 bits'."""
    rows, k, n = shape
    x, w, g = random_tensor((rows, k), low), random_tensor((n, k), low), random_tensor((rows, n), low)
    dx, dw, db = from_torch(g, device).linear_backward(
        from_torch(x, device), from_torch(w, device), True, True, None, F32_DTYPE, F32_DTYPE
    )
    assert dx.dtype.name == "float32" and dw.dtype.name == "float32" and db is None
    exact_dx, exact_dw = g.double() @ w.double(), g.double().T @ x.double()
    assert_same(dx, exact_dx, exact_dtype=False, rtol=1e-5, atol=1e-4)
    assert_same(dw, exact_dw, exact_dtype=False, rtol=1e-5, atol=1e-4)
    # (a gradient rounded to the low dtype first would be off by up to half its ulp: the check above can tell)
    assert ((exact_dw.to(low).double() - exact_dw).abs() > 1e-4 + 1e-5 * exact_dw.abs()).any()
    with pytest.raises(TypeError, match=r"weight gradient of a .* product can be"):
        from_torch(g, device).linear_backward(
            from_torch(x, device), from_torch(w, device), False, True, None, None, nd.float64
        )


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
