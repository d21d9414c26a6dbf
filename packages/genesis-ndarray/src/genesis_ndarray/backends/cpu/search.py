"""CPU searchsorted: torch's."""

from __future__ import annotations

import torch

from .common import reg


@reg("searchsorted")
def searchsorted(seq: torch.Tensor, values: torch.Tensor, right: bool, out_int32: bool) -> torch.Tensor:
    """For each ``values[r, j]``, its insertion index in the sorted row ``seq[r]`` (2-D operands)."""
    return torch.searchsorted(seq, values, right=right, out_int32=out_int32)
