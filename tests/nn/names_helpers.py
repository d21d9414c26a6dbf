"""The parity harness of the torch-names tests (test_torch_shape_names.py, test_torch_indexing_names.py, ...):
one op written once against a module (``torch`` or ``genesis``), run on the same fresh float64 inputs in
both, forward values and the gradients of every floating input compared."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

import genesis


def fresh(shape: Sequence[int], dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Random values kept away from zero (and from each other), in ``dtype``."""
    t = torch.randn(tuple(shape), dtype=torch.float64)
    return (t + 0.05 * torch.where(t >= 0, 1.0, -1.0)).to(dtype)


def to_genesis(t: Any, device: str, requires_grad: bool = False) -> Any:
    """A genesis tensor with a torch tensor's values and dtype (anything else unchanged)."""
    if not isinstance(t, torch.Tensor):
        return t
    return genesis.tensor(t.detach().numpy(), device=device, requires_grad=requires_grad)


def as_numpy(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _flat(out: Any) -> list:
    return [o for item in out for o in _flat(item)] if isinstance(out, tuple | list) else [out]


def assert_same(actual: Any, expected: Any, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Genesis results equal torch's: the same structure, shapes, dtype names and values."""
    got, want = _flat(actual), _flat(expected)
    assert len(got) == len(want), f"{len(got)} results, torch has {len(want)}"
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            assert tuple(g.shape) == tuple(w.shape), f"shape {tuple(g.shape)} vs torch's {tuple(w.shape)}"
            assert g.dtype.name == str(w.dtype).removeprefix("torch."), f"dtype {g.dtype} vs torch's {w.dtype}"
            np.testing.assert_allclose(as_numpy(g), as_numpy(w), rtol=rtol, atol=atol)
        else:
            assert g == w


def check(op: Callable[..., Any], inputs: Sequence[Any], device: str, grad: bool = True) -> None:
    """``op(torch, *inputs)`` against ``op(genesis, *inputs)``: forward, and with ``grad`` the gradients of the
    floating tensor inputs under a random upstream gradient (the same in both)."""
    t_in = [
        x.clone().requires_grad_(grad and x.is_floating_point()) if isinstance(x, torch.Tensor) else x for x in inputs
    ]
    g_in = [to_genesis(x, device, grad and x.is_floating_point()) if isinstance(x, torch.Tensor) else x for x in inputs]
    t_out, g_out = op(torch, *t_in), op(genesis, *g_in)
    assert_same(g_out, t_out)
    if not grad:
        return
    t_flat, g_flat = _flat(t_out), _flat(g_out)
    pairs = [(t, g) for t, g in zip(t_flat, g_flat) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not pairs:
        return
    weights = [fresh(t.shape) for t, _ in pairs]
    sum(((t * w).sum() for (t, _), w in zip(pairs, weights)), torch.zeros((), dtype=torch.float64)).backward()
    total = None
    for (_, g), w in zip(pairs, weights):
        term = (g * to_genesis(w, device)).sum()
        total = term if total is None else total + term
    total.backward()
    for t, g in zip(t_in, g_in):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            assert g.grad is not None, "genesis gave no gradient where torch gives one"
            want = t.grad if t.grad is not None else torch.zeros_like(t)
            np.testing.assert_allclose(as_numpy(g.grad), want.numpy(), rtol=1e-7, atol=1e-9)
