"""multinomial's probabilities on CUDA: validated by genesis_kernels.sampling_check in one launch, with no
host wait (an invalid row is reported at the next read-back or graph replay, and drawn as uniform)."""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, reg, stream_of


@reg("multinomial_rows")
def multinomial_rows(p: View, row_messages: bool) -> View:
    """The 2-d float ``p`` (any strides) as contiguous float64 rows, invalid rows flagged and made uniform."""
    out = gs.empty(tuple(p.shape), "float64", p.device)
    gk.sampling_check.check_probabilities(p, out, row_messages=row_messages, stream=stream_of(p))
    return out
