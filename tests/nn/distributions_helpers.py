"""Shared by the distributions tests: the same distribution built in torch and in genesis from the same
parameters, and comparisons of values and parameter gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.distributions as TD

import genesis
import genesis.distributions as GD

TOL = {torch.float64: dict(rtol=1e-7, atol=1e-9), torch.float32: dict(rtol=2e-4, atol=2e-5)}


def to_genesis(t: Any, device: str, requires_grad: bool = False) -> Any:
    """A torch tensor as a genesis tensor (a leaf, requiring grad if floating and asked); others as they are."""
    if not isinstance(t, torch.Tensor):
        return t
    rg = requires_grad and t.is_floating_point()
    return genesis.tensor(t.detach().cpu().numpy(), device=device, requires_grad=rg)


def to_torch(t: genesis.Tensor) -> torch.Tensor:
    """A genesis tensor's values as a cpu torch tensor."""
    return torch.from_numpy(np.array(t.detach().cpu().numpy()))


def close(actual: genesis.Tensor, expected: torch.Tensor, **tol: Any) -> None:
    """Same shape and values (NaN equal to NaN, infinities equal) within the dtype's tolerance."""
    assert tuple(actual.shape) == tuple(expected.shape), (tuple(actual.shape), tuple(expected.shape))
    got = to_torch(actual)
    expected = expected.detach().cpu()
    if expected.is_floating_point():
        got = got.to(expected.dtype)
    tol = tol or TOL.get(expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(got, expected, equal_nan=True, **tol)


def build(
    name: str, params: dict[str, Any], device: str, requires_grad: bool = True, **kw: Any
) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """torch's and genesis' distribution ``name`` over the same parameters (fresh leaves for each)."""
    tparams = {
        k: (
            v.detach().clone().requires_grad_(requires_grad and v.is_floating_point())
            if isinstance(v, torch.Tensor)
            else v
        )
        for k, v in params.items()
    }
    gparams = {k: to_genesis(v, device, requires_grad) for k, v in params.items()}
    return getattr(TD, name)(**tparams, **kw), getattr(GD, name)(**gparams, **kw), tparams, gparams


def compare_with_grads(
    tout: torch.Tensor,
    gout: genesis.Tensor,
    tparams: dict[str, Any],
    gparams: dict[str, Any],
    device: str,
    **tol: Any,
) -> None:
    """Values equal; then the gradients of the same random weighting of the outputs w.r.t. every floating
    parameter equal."""
    close(gout, tout, **tol)
    wanted = [k for k, v in tparams.items() if isinstance(v, torch.Tensor) and v.requires_grad]
    if not wanted or not tout.requires_grad:
        return
    finite = torch.isfinite(tout)
    w = torch.where(finite, torch.randn(tout.shape, dtype=tout.dtype), torch.zeros((), dtype=tout.dtype))
    tgrads = torch.autograd.grad(
        (tout.where(finite, 0) * w).sum(), [tparams[k] for k in wanted], allow_unused=True, retain_graph=True
    )
    gw = to_genesis(w, device)
    gfinite = to_genesis(finite, device)
    gsafe = genesis.where(gfinite, gout, genesis.zeros_like(gout))
    ggrads = genesis.autograd.grad(
        (gsafe * gw.to(gout.dtype)).sum(), [gparams[k] for k in wanted], allow_unused=True, retain_graph=True
    )
    for k, tg, gg in zip(wanted, tgrads, ggrads):
        if tg is None:
            assert gg is None or bool((gg == 0).all().item()), k
            continue
        assert gg is not None, f"no gradient for {k}"
        close(gg, tg, **tol)


def method_outputs(dist: Any, value: Any) -> dict[str, Callable[[], Any]]:
    """The quantities compared for a distribution, as thunks."""
    return {
        "log_prob": lambda: dist.log_prob(value),
        "cdf": lambda: dist.cdf(value),
        "entropy": lambda: dist.entropy(),
        "mean": lambda: dist.mean,
        "variance": lambda: dist.variance,
        "stddev": lambda: dist.stddev,
        "mode": lambda: dist.mode,
    }
