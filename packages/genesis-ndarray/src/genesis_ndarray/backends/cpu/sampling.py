"""multinomial's probabilities on CPU: torch's checks, eagerly (nothing to wait for on the host)."""

from __future__ import annotations

import torch

from .common import reg


@reg("multinomial_rows")
def multinomial_rows(p: torch.Tensor) -> torch.Tensor:
    """The 2-d float ``p`` as fresh contiguous float64 rows; torch's RuntimeError for invalid probabilities
    (a negative / nan / inf element is reported before a row sum <= 0, as torch checks them)."""
    rows = p.to(torch.float64, memory_format=torch.contiguous_format, copy=True)
    if not bool(((rows >= 0) & rows.isfinite()).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((rows.sum(1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    return rows
