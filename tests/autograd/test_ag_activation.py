"""The activation family (functions/activation.py) against torch in float64: gelu (erf and tanh) and silu
with their fused backward, glu, and the Genesis-only swiglu / geglu against their torch compositions;
gradcheck and gradgradcheck (the double backward goes through the Tensor-op form of the backward)."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    CPU,
    CUDA,
    I,
    check_forward_and_gradients,
    check_gradcheck,
    check_gradgradcheck,
    params,
    to_genesis,
)

import genesis


def _swiglu(lib, a, b):
    return lib.nn.functional.silu(a) * b if lib is torch else lib.nn.functional.swiglu(a, b)


def _geglu(lib, a, b, approximate="none"):
    if lib is torch:
        return lib.nn.functional.gelu(a, approximate=approximate) * b
    return lib.nn.functional.geglu(a, b, approximate)


CASES = [
    ("gelu", lambda lib, a: lib.nn.functional.gelu(a), [I((3, 5))]),
    ("gelu-tanh-t", lambda lib, a: lib.nn.functional.gelu(a, approximate="tanh"), [I((4, 3), layout="t")]),
    ("silu", lambda lib, a: lib.nn.functional.silu(a), [I((2, 3, 4))]),
    ("glu-last", lambda lib, a: lib.nn.functional.glu(a), [I((3, 8))]),
    ("glu-dim0-t", lambda lib, a: lib.nn.functional.glu(a, 0), [I((4, 3), layout="t")]),
    ("glu-dim1-3d", lambda lib, a: lib.nn.functional.glu(a, 1), [I((2, 6, 3))]),
    ("swiglu", _swiglu, [I((3, 5)), I((3, 5))]),
    ("swiglu-halves", lambda lib, x: _swiglu(lib, *x.chunk(2, -1)), [I((4, 10))]),
    ("swiglu-broadcast", _swiglu, [I((3, 1, 5)), I((4, 5))]),
    ("swiglu-up-no-grad", _swiglu, [I((3, 5)), I((3, 5), rg=False)]),
    ("swiglu-gate-no-grad-t", _swiglu, [I((3, 4), rg=False, layout="t"), I((3, 4))]),
    ("geglu", _geglu, [I((2, 7)), I((2, 7))]),
    ("geglu-tanh", lambda lib, a, b: _geglu(lib, a, b, "tanh"), [I((5,)), I((5,))]),
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


@pytest.mark.parametrize("device", [CPU, CUDA])
def test_grad_fn_names_match_torch(device):
    x = genesis.randn(2, 4, device=device, requires_grad=True)
    assert genesis.nn.functional.glu(x).grad_fn.name() == "GluBackward0"
    assert genesis.nn.functional.gelu(x, approximate="tanh").grad_fn.name() == "GeluBackward0"
    assert genesis.nn.functional.silu(x).grad_fn.name() == "SiluBackward0"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("device", [CPU, CUDA])
def test_low_precision_gated_against_float64(device, dtype):
    # Each gradient within the relative error of the float64 result: fp32 1e-5, bf16 1e-2.
    rel = 1e-5 if dtype == torch.float32 else 1e-2
    x = torch.randn(6, 2 * 33, dtype=torch.float64)
    dy = torch.randn(6, 33, dtype=torch.float64)
    xt = x.clone().requires_grad_()
    a, b = xt.chunk(2, -1)
    ref = torch.nn.functional.silu(a) * b
    ref.backward(dy)
    xg = to_genesis(x, device).to(getattr(genesis, str(dtype).removeprefix("torch."))).requires_grad_()
    ga, gb = xg.chunk(2, -1)
    out = genesis.nn.functional.swiglu(ga, gb)
    out.backward(to_genesis(dy, device).to(out.dtype))
    for got, want in ((out, ref.detach()), (xg.grad, xt.grad)):
        got = torch.tensor(got.detach().cpu().to(genesis.float64).numpy())
        assert ((got - want).norm() / want.norm()).item() <= rel


def test_errors_match_torch():
    x = genesis.randn(3, 5)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 5"):
        genesis.nn.functional.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        genesis.nn.functional.glu(genesis.tensor(1.0))
    with pytest.raises(IndexError):
        genesis.nn.functional.glu(x, 2)
    with pytest.raises(RuntimeError, match="size of tensor a"):
        genesis.nn.functional.swiglu(x, genesis.randn(3, 4))
    with pytest.raises(RuntimeError, match="approximate argument"):
        genesis.nn.functional.geglu(x, x, "fast")
    with pytest.raises(NotImplementedError):
        genesis.nn.functional.swiglu(genesis.ones(3, dtype=genesis.int64), genesis.ones(3, dtype=genesis.int64))
    # torch's own messages, for the record of what we mirror
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        torch.nn.functional.glu(torch.randn(3, 5))


def test_glu_module():
    m = genesis.nn.GLU(0)
    assert repr(m) == repr(torch.nn.GLU(0)) == "GLU(dim=0)"
    x = torch.randn(4, 3, dtype=torch.float64)
    got = m(to_genesis(x, "cpu"))
    torch.testing.assert_close(torch.tensor(got.numpy()), torch.nn.GLU(0)(x))
