"""Memory (functions/memory.py) against torch: clone, contiguous and dtype casts in the graph (forward
values and gradients, gradcheck and gradgradcheck), and DLPack at the Tensor level."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import I, check_forward_and_gradients, check_gradcheck, check_gradgradcheck, params

import genesis

CASES = [
    ("clone-contiguous", lambda lib, a: a.contiguous().clone() * 3, [I((3, 4), layout="t")]),
    ("to-float32", lambda lib, a: a.to(lib.float32).exp().to(lib.float64), [I((3, 4))]),
]
# Cases that go through a float32 intermediate are compared with float32's tolerance.
CASE_TOL = {"to-float32": dict(rtol=1.3e-6, atol=1e-6)}


@pytest.mark.parametrize("case,device", params(CASES))
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device, **CASE_TOL.get(case[0], {}))


# Finite differences through a float32 intermediate (eps=1e-6 is below its resolution) measure nothing:
# that case is checked by the torch parity test only.
GC_PARAMS = params([c for c in CASES if c[0] != "to-float32"])


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


def test_tensor_dlpack_round_trip(device):
    xt = torch.randn(3, 4).to(device)
    x = genesis.from_dlpack(xt)
    assert isinstance(x, genesis.Tensor) and not x.requires_grad
    assert x.data_ptr() == xt.data_ptr()
    back = torch.from_dlpack(x)
    assert back.data_ptr() == xt.data_ptr()
    torch.testing.assert_close(back, xt)


def test_dlpack_refuses_tensors_that_require_grad(device):
    x = genesis.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        torch.from_dlpack(x)
    assert torch.from_dlpack(x.detach()).shape == (3,)


def test_cuda_refuses_a_cpu_target_even_for_a_tensor_already_there():
    # torch: x.cuda("cpu") raises "Invalid device, must be cuda device", also when x is on the cpu.
    x = genesis.randn(3)
    for target in ("cpu", genesis.device("cpu"), x.device):
        with pytest.raises(RuntimeError, match="must be cuda device"):
            x.cuda(target)
