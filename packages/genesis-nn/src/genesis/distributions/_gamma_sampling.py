"""Gamma(alpha, 1) draws with implicit reparameterisation gradients, and the regularised lower incomplete
gamma function P(alpha, x) they rest on.

Draws: Marsaglia and Tsang's squeeze-rejection method ("A simple method for generating gamma variables",
2000), vectorised: every element not yet accepted proposes again until all are accepted (about 1.05
proposals per element for alpha >= 1). alpha < 1 draws Gamma(alpha + 1) and scales by U^(1/alpha).

Gradient: for x = F^-1(u; alpha) with F = P(alpha, .), dx/dalpha = -(dF/dalpha) / f(x; alpha)
(Figurnov et al., "Implicit reparameterization gradients", 2018). With P's power series
P = x^a e^-x / Gamma(a + 1) * S, S = sum_n x^n / ((a + 1) ... (a + n)), that is
dx/da = -(x / a) * S * (log x - digamma(a + 1) + S' / S), where S' = dS/da is summed beside S.
"""

from __future__ import annotations

import genesis
from genesis import Tensor

from ._math import digamma, lgamma
from .utils import broadcast_all, tiny

__all__ = ["gammainc", "standard_gamma"]

_MAX_TERMS = 20000
_CHECK_EVERY = 16


def _series(a: Tensor, x: Tensor, with_derivative: bool) -> tuple[Tensor, Tensor | None]:
    """S(a, x) (and dS/da) summed until every term is below 1e-16 of its sum."""
    term = genesis.ones_like(x)
    total = genesis.ones_like(x)
    dlog = genesis.zeros_like(x)  # d log(term) / da
    dtotal = genesis.zeros_like(x) if with_derivative else None
    for n in range(1, _MAX_TERMS):
        term = term * x / (a + n)
        total = total + term
        if dtotal is not None:
            dlog = dlog - 1 / (a + n)
            dtotal = dtotal + term * dlog
        if n % _CHECK_EVERY == 0 and bool((term.detach() <= 1e-16 * total.detach()).all().item()):
            break
    return total, dtotal


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function P(a, x) (torch.special.gammainc), for a > 0, x >= 0;
    differentiable in both (through the series)."""
    a, x = broadcast_all(a, x)
    safe_x = x.clamp(min=tiny(x.dtype))
    total, _ = _series(a, safe_x, with_derivative=False)
    log_p = a * safe_x.log() - safe_x - lgamma(a + 1) + total.log()
    return genesis.where(x > 0, log_p.exp(), genesis.zeros_like(log_p))


def _dx_dalpha(alpha: Tensor, x: Tensor) -> Tensor:
    """The implicit reparameterisation derivative of Gamma(alpha, 1) draws ``x`` w.r.t. alpha (float64)."""
    a = alpha.to(genesis.float64)
    xd = x.to(genesis.float64).clamp(min=1e-300)
    total, dtotal = _series(a, xd, with_derivative=True)
    assert dtotal is not None
    dlog_p = xd.log() - digamma(a + 1) + dtotal / total
    return (-(xd / a) * total * dlog_p).to(x.dtype)


def _marsaglia_tsang(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) draws of alpha's shape (no graph)."""
    small = alpha < 1
    boosted = genesis.where(small, alpha + 1, alpha)
    d = boosted - 1 / 3
    c = (9 * d).rsqrt()
    out = genesis.zeros_like(alpha)
    pending = genesis.ones_like(alpha, dtype=genesis.bool)
    while bool(pending.any().item()):
        z = genesis.randn_like(alpha)
        u = genesis.rand_like(alpha)
        v = (1 + c * z) ** 3
        positive = v > 0
        safe_v = genesis.where(positive, v, genesis.ones_like(v))
        accept = positive & (u.log() < 0.5 * z * z + d - d * safe_v + d * safe_v.log())
        take = accept & pending
        out = genesis.where(take, d * safe_v, out)
        pending = pending & ~accept
    # alpha < 1: X * U^(1/alpha), in log space so that tiny alphas underflow gracefully to `tiny`.
    u = genesis.rand_like(alpha).clamp(min=tiny(alpha.dtype))
    scaled = (out.log() + u.log() / alpha).exp()
    return genesis.where(small, scaled, out).clamp(min=tiny(alpha.dtype))


def standard_gamma(alpha: Tensor) -> Tensor:
    """One Gamma(alpha, 1) draw per element of ``alpha``; differentiable in alpha by implicit
    reparameterisation (as torch._standard_gamma)."""
    with genesis.no_grad():
        x = _marsaglia_tsang(alpha.detach())
    if not (alpha.requires_grad and genesis.is_grad_enabled()):
        return x
    with genesis.no_grad():
        slope = _dx_dalpha(alpha.detach(), x)
    return x + (alpha - alpha.detach()) * slope
