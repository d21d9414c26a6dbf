"""multinomial's probabilities on CPU: torch's checks, eagerly (nothing to wait for on the host)."""

from __future__ import annotations

import torch

from .common import reg

BAD_VALUE = "probability tensor contains either `inf`, `nan` or element < 0"
BAD_SUM = "invalid multinomial distribution (sum of probabilities <= 0)"
BAD_ENTRY = "invalid multinomial distribution (encountering probability entry < 0)"
INF_ENTRY = "invalid multinomial distribution (encountering probability entry = infinity or NaN)"


@reg("multinomial_rows")
def multinomial_rows(p: torch.Tensor, row_messages: bool) -> torch.Tensor:
    """The 2-d float ``p`` as fresh contiguous float64 rows; torch's RuntimeError for invalid probabilities:
    its up-front check's (a bad element anywhere, then a row sum <= 0), or with ``row_messages`` its
    with-replacement kernel's (the first invalid row; in it, the first entry not >= 0 or +inf, else its sum)."""
    rows = p.to(torch.float64, memory_format=torch.contiguous_format, copy=True)
    negative = ~(rows >= 0)  # nan too
    infinite = rows == float("inf")
    zero_sum = rows.sum(1) <= 0
    if not row_messages:
        if bool((negative | infinite).any()):
            raise RuntimeError(BAD_VALUE)
        if bool(zero_sum.any()):
            raise RuntimeError(BAD_SUM)
        return rows
    invalid = negative.any(1) | infinite.any(1) | zero_sum
    if bool(invalid.any()):
        r = int(invalid.nonzero()[0, 0])
        bad = (negative[r] | infinite[r]).nonzero()
        if not len(bad):
            raise RuntimeError(BAD_SUM)
        raise RuntimeError(BAD_ENTRY if bool(negative[r, int(bad[0, 0])]) else INF_ENTRY)
    return rows
