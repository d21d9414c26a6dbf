"""Shared helpers of the nn tests: torch <-> genesis tensors and modules with the same weights."""

from __future__ import annotations

import re

import numpy as np
import torch

import genesis

TOL = {torch.float64: dict(rtol=1e-7, atol=1e-9), torch.float32: dict(rtol=1e-5, atol=1e-6)}


def g(t: torch.Tensor, device, requires_grad: bool = False) -> genesis.Tensor:
    return genesis.tensor(t.detach().cpu().numpy(), device=device, requires_grad=requires_grad)


def copy_weights(src: torch.nn.Module, dst: genesis.nn.Module) -> None:
    """Load torch's parameters into the genesis module with the same structure."""
    with genesis.no_grad():
        for (tn, tp), (gn, gp) in zip(src.named_parameters(), dst.named_parameters(), strict=True):
            assert tn == gn, (tn, gn)
            gp.copy_(g(tp, gp.device).to(dtype=gp.dtype))


def assert_close(actual, expected: torch.Tensor, **tol) -> None:
    assert tuple(actual.shape) == tuple(expected.shape), (tuple(actual.shape), tuple(expected.shape))
    assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
    tol = tol or TOL.get(expected.dtype, dict(rtol=0, atol=0))  # integers and bools: exact
    got = torch.from_numpy(np.array(actual.detach().cpu().numpy()))
    torch.testing.assert_close(got, expected.detach().cpu(), **tol)


def to_torch(t: genesis.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.array(t.detach().cpu().numpy()))


def _as_tuple(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def check_forward_backward(torch_fn, genesis_fn, inputs, device, **tol):
    """Run both callables on the same inputs (floating ones requiring grad), compare every output, then
    backpropagate the same random weighting of the floating outputs and compare the inputs' gradients."""
    tins = [
        x.detach().clone().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x for x in inputs
    ]
    gins = [g(x, device, requires_grad=x.is_floating_point()) if isinstance(x, torch.Tensor) else x for x in inputs]
    touts, gouts = _as_tuple(torch_fn(*tins)), _as_tuple(genesis_fn(*gins))
    assert len(touts) == len(gouts)
    tloss = gloss = 0
    for t, out in zip(touts, gouts):
        if t is None:
            assert out is None
            continue
        assert_close(out, t, **tol)
        if t.is_floating_point() and t.requires_grad:
            w = torch.randn(t.shape, dtype=t.dtype)
            tloss = tloss + (t * w).sum()
            gloss = gloss + (out * g(w, device)).sum()
    if isinstance(tloss, torch.Tensor):
        tloss.backward()
        gloss.backward()
    for t, x in zip(tins, gins):
        if isinstance(t, torch.Tensor) and t.grad is not None:
            assert_close(x.grad, t.grad, **tol)
    return gouts, touts


def check_module(torch_module, genesis_module, inputs, device, **tol):
    """Load torch's state dict into the genesis module (so the same names and shapes are required), then
    compare outputs, input gradients and every parameter's gradient, by name."""
    result = genesis_module.load_state_dict(torch_module.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    outs = check_forward_backward(torch_module, genesis_module, inputs, device, **tol)
    tparams = dict(torch_module.named_parameters())
    assert [n for n, _ in genesis_module.named_parameters()] == list(tparams)
    for name, p in genesis_module.named_parameters():
        if tparams[name].grad is None:
            assert p.grad is None or not to_torch(p.grad).any(), name
        else:
            assert_close(p.grad, tparams[name].grad, **tol)
    return outs


# torch 2.13 prints the norms' bias argument (LayerNorm(..., bias=True)); the GPU machine's torch 2.11 does
# not. genesis prints it as torch 2.13 does; against an older torch, compare without it.
_NORM_BIAS_IN_REPR = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 13)


def module_repr(module) -> str:
    """genesis module's repr as the installed torch would print the same module."""
    text = repr(module)
    if not _NORM_BIAS_IN_REPR:  # only the norms' bias: Linear's is printed by every torch
        text = re.sub(
            r"((?:LayerNorm|GroupNorm|BatchNorm[123]d|RMSNorm)\((?:[^()]|\([^()]*\))*?), bias=(?:True|False)",
            r"\1",
            text,
        )
    return text
