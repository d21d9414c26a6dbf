"""torch.segment_reduce: reduce consecutive runs ("segments") of a tensor's first dimension.

Segment ``s`` covers the next ``lengths[s]`` slices of ``data`` (or ``offsets[s]:offsets[s + 1]``);
each is reduced by sum, prod, mean, max or min. Composed of index_add / index_reduce over segment
ids, so gradients follow those ops (max / min share a tie's gradient equally, as torch). torch's
conventions are kept: an empty segment gives the reduction's identity (sum 0, prod 1, max -inf,
min inf, mean nan) or ``initial``; ``initial`` joins every segment's reduction, and for mean it is
added to the sum but not counted.
"""

from __future__ import annotations

import math

from genesis_autograd import Tensor, arange, full, where, zeros

__all__ = ["segment_reduce"]

_REDUCTIONS = {
    "sum": "sum",
    "prod": "prod",
    "mean": "mean",
    "max": "amax",
    "amax": "amax",
    "min": "amin",
    "amin": "amin",
}
_IDENTITY = {"sum": 0.0, "prod": 1.0, "mean": math.nan, "amax": -math.inf, "amin": math.inf}


def segment_reduce(
    data: Tensor,
    reduce: str,
    *,
    lengths: Tensor | None = None,
    indices: Tensor | None = None,
    offsets: Tensor | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial: float | None = None,
) -> Tensor:
    """Reduce runs of ``data`` along ``axis`` given by 1-D ``lengths`` (or ``offsets``), with torch's
    signature; ``unsafe=True`` skips the checks that read the lengths back to the host."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    op = _REDUCTIONS[reduce]
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if lengths is None:
        assert offsets is not None
        lengths = offsets[1:] - offsets[:-1]
    if lengths.ndim != 1:
        raise NotImplementedError("segment_reduce(): genesis takes 1-D lengths / offsets (one row of segments)")
    if axis < 0:
        axis += data.ndim
    if axis != lengths.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if not unsafe:
        if bool((lengths < 0).any()):
            raise RuntimeError("lengths contains negative value!")
        if int(lengths.sum()) != data.shape[axis]:
            raise RuntimeError(
                "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) "
                "when !unsafe."
            )
    segments = lengths.shape[0]
    ids = arange(segments, device=data.device).repeat_interleave(lengths, output_size=data.shape[axis])
    shape = (segments, *data.shape[axis + 1 :])
    if op in ("sum", "mean"):
        total = zeros(shape, dtype=data.dtype, device=data.device).index_add(0, ids, data)
        if initial is not None:
            total = total + initial
        if op == "sum":
            return total
        counts = lengths.to(data.dtype).reshape((segments,) + (1,) * (len(shape) - 1))
        empty = math.nan if initial is None else initial
        return where(counts == 0, full(shape, empty, dtype=data.dtype, device=data.device), total / counts)
    start = full(shape, _IDENTITY[op] if initial is None else initial, dtype=data.dtype, device=data.device)
    return start.index_reduce(0, ids, data, op, include_self=True)
