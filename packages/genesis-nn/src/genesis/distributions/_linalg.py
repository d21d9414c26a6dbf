"""Small dense linear algebra for MultivariateNormal, composed of differentiable genesis ops.

genesis has no factorisations yet; event sizes of a multivariate normal are small, so a Cholesky
factor and triangular solves are built one column (one row) at a time, looping over the matrix
dimension with batched elementwise ops. Gradients come from autograd through the loop.
"""

from __future__ import annotations

import genesis
from genesis import Tensor

__all__ = ["cholesky", "cholesky_inverse", "cholesky_ok", "solve_triangular", "tril_inverse"]


def _unpivoted_columns(a: Tensor) -> list[Tensor]:
    """The columns of the lower Cholesky factor of ``a`` (..., n, n), each (..., n); NaN where ``a`` is
    not positive definite."""
    n = a.shape[-1]
    rows = genesis.arange(n, device=a.device)
    cols: list[Tensor] = []
    for j in range(n):
        v = a[..., :, j]
        if cols:
            previous = genesis.stack(cols, -1)  # (..., n, j): L[:, :j]
            v = v - (previous * previous[..., j : j + 1, :]).sum(-1)
        pivot = v[..., j : j + 1].sqrt()
        below = (rows >= j).to(a.dtype)  # the rows above the diagonal of column j are zero
        cols.append(v / pivot * below)
    return cols


def cholesky(a: Tensor) -> Tensor:
    """The lower-triangular L with L @ L.mT == a, for a batch of symmetric positive-definite matrices;
    RuntimeError (torch.linalg.cholesky's class) when one is not."""
    if a.dim() < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"cholesky: expected a batch of square matrices, got shape {tuple(a.shape)}")
    # Read from the symmetrised matrix, so that the gradient is symmetric as torch's (the loop itself reads
    # only the lower triangle).
    factor = genesis.stack(_unpivoted_columns((a + a.mT) / 2), -1)
    if not bool(factor.diagonal(dim1=-2, dim2=-1).isfinite().all().item()):
        raise RuntimeError("cholesky: the input is not positive-definite (a leading minor is not positive)")
    return factor


def cholesky_ok(a: Tensor) -> Tensor:
    """Per matrix of the batch, whether a Cholesky factorisation succeeds (positive definite)."""
    with genesis.no_grad():
        diag = genesis.stack(_unpivoted_columns(a), -1).diagonal(dim1=-2, dim2=-1)
        return ((diag > 0) & diag.isfinite()).all(-1)


def solve_triangular(lower: Tensor, b: Tensor) -> Tensor:
    """X with ``lower @ X == b`` for lower-triangular ``lower`` (..., n, n) and ``b`` (..., n, k), by
    forward substitution; the batch dimensions broadcast."""
    n = lower.shape[-1]
    rows: list[Tensor] = []
    for i in range(n):
        r = b[..., i, :]
        for k, x in enumerate(rows):
            r = r - lower[..., i, k : k + 1] * x
        rows.append(r / lower[..., i, i : i + 1])
    return genesis.stack(rows, -2)


def tril_inverse(lower: Tensor) -> Tensor:
    """The inverse of a batch of invertible lower-triangular matrices (itself lower triangular)."""
    n = lower.shape[-1]
    eye = genesis.eye(n, dtype=lower.dtype, device=lower.device)
    return solve_triangular(lower, eye.expand(*lower.shape))


def cholesky_inverse(lower: Tensor) -> Tensor:
    """(L @ L.mT)^-1 from its Cholesky factor L."""
    inv = tril_inverse(lower)
    return inv.mT @ inv
