"""ActivationLinear (``linear(act(h), w, b)``, the activation recomputed in backward) and RecastLinear (Linear
keeping its weight, not autocast's cast of it), the ops genesis.compile's recompute pass puts in a graph:
against torch's composition in float64, gradcheck / gradgradcheck, eager's values under bf16 autocast, and
what each keeps for backward."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import CPU, I, check_forward_and_gradients, check_gradcheck, check_gradgradcheck, params, to_genesis

import genesis
from genesis_autograd.functions.activation_linear import activation_linear
from genesis_autograd.functions.matmul import RecastLinear

TORCH_ACT = {
    "gelu": lambda x: torch.nn.functional.gelu(x),
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}


def _act_linear(kind: str, keep_weight: bool, bias: bool = True):
    def fn(lib, h, w, *b):
        if lib is torch:
            return torch.nn.functional.linear(TORCH_ACT[kind](h), w, *b)
        return activation_linear(h, w, b[0] if b else None, kind, keep_weight)

    return fn


def _recast(lib, x, w, b):
    return torch.nn.functional.linear(x, w, b) if lib is torch else RecastLinear.apply(x, w, b)


CASES = [
    ("gelu", _act_linear("gelu", False), [I((2, 3, 6)), I((5, 6)), I((5,))]),
    ("gelu-tanh-keep", _act_linear("gelu_tanh", True), [I((4, 6)), I((3, 6)), I((3,))]),
    ("silu-no-bias", _act_linear("silu", True, bias=False), [I((4, 6)), I((3, 6))]),
    ("gelu-h-no-grad", _act_linear("gelu", False), [I((4, 6), rg=False), I((3, 6)), I((3,))]),
    ("gelu-w-no-grad", _act_linear("gelu", True), [I((4, 6)), I((3, 6), rg=False), I((3,))]),
    ("recast", _recast, [I((2, 4, 6)), I((3, 6)), I((3,))]),
]
PARAMS = params(CASES)


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize("case,device", params(CASES, devices=(CPU,)))
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", params(CASES[:3], devices=(CPU,)))
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


def _leaf(t: torch.Tensor, device: str) -> genesis.Tensor:
    return to_genesis(t.float(), device, requires_grad=True)


@pytest.mark.parametrize("kind", ["gelu", "silu"])
@pytest.mark.parametrize("keep_weight", [False, True])
def test_under_autocast_the_values_and_gradients_are_eagers(device: str, kind: str, keep_weight: bool) -> None:
    """bf16 autocast, float32 parameters: the same values and gradients (dtypes included) as the two eager
    ops, since the recomputed activation and the weight cast again are the ones forward made."""
    th, tw, tb, up = torch.randn(6, 8), torch.randn(5, 8) * 0.3, torch.randn(5), torch.randn(6, 5)
    runs = []
    for fused in (False, True):
        h, w, b = _leaf(th, device), _leaf(tw, device), _leaf(tb, device)
        with genesis.autocast(device, dtype=genesis.bfloat16):
            act = genesis.nn.functional.gelu(h) if kind == "gelu" else genesis.nn.functional.silu(h)
            out = activation_linear(h, w, b, kind, keep_weight) if fused else genesis.nn.functional.linear(act, w, b)
        (out.float() * to_genesis(up, device)).sum().backward()
        runs.append((out, h.grad, w.grad, b.grad))
    for eager, fused in zip(*runs):
        assert fused.dtype == eager.dtype and fused.shape == eager.shape
        assert torch.equal(torch.from_numpy(fused.detach().float().cpu().numpy()),
                           torch.from_numpy(eager.detach().float().cpu().numpy()))  # fmt: skip


def test_what_each_keeps_for_backward() -> None:
    """ActivationLinear keeps the activation's input (not its output), and with keep_weight the float32
    weight itself (not its bf16 cast); RecastLinear keeps the weight itself."""
    h, w, b = (_leaf(torch.randn(*s), "cpu") for s in ((4, 6), (3, 6), (3,)))
    with genesis.autocast("cpu", dtype=genesis.bfloat16):
        kept_cast = activation_linear(h, w, b, "gelu", False).grad_fn._saved
        kept_weight = activation_linear(h, w, b, "gelu", True).grad_fn._saved
        x = _leaf(torch.randn(4, 6), "cpu").to(genesis.bfloat16)
        recast = RecastLinear.apply(x, w, b).grad_fn._saved
    assert kept_cast[0] is h and kept_weight[0] is h
    assert kept_cast[1].dtype == genesis.bfloat16 and kept_weight[1] is w and recast[1] is w
