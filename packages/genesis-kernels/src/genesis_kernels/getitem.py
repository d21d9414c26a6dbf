"""The getitem family's kernel: ``index_put`` (``x[indices] = values``, or ``+=``), the write side of
advanced indexing. A launch of the shared indexed-elementwise kernel (``indexed.py``) with negative
indices wrapping, as torch's ``index_put_``; reads (``x[indices]``) are a ``gather`` (``index.py``).
"""

from __future__ import annotations

from .buffer import BufferLike
from .indexed import MAX_INDICES, KnownRange, launch


def index_put(
    out: BufferLike,
    indices: tuple[BufferLike, ...],
    values: BufferLike | float | int | bool,
    *,
    accumulate: bool = False,
    ranges: list[KnownRange | None] | None = None,
    stream: int = 0,
) -> None:
    """In place: ``out[indices] = values`` (or ``+=`` with ``accumulate``), torch ``index_put_``.
    ``ranges``: host-known bounds of each index buffer's values (indexed.launch: in range, no stream wait).

    ``indices``: 1 to 4 int64/int32 buffers, already broadcast to one shape ``B``, indexing the leading
    ``len(indices)`` dims of ``out`` (permute ``out`` for other dims); negative indices count from the end.
    ``values`` has shape ``B + out.shape[len(indices):]`` (broadcast with strides 0) or is a scalar.
    """
    k = len(indices)
    if not 1 <= k <= min(MAX_INDICES, len(out.shape)):
        raise ValueError(f"index_put takes 1 to {min(MAX_INDICES, len(out.shape))} index buffers, got {k}")
    bshape = tuple(indices[0].shape)
    for ib in indices:
        if tuple(ib.shape) != bshape:
            raise ValueError("index_put: index buffers must be broadcast to one shape")
    tail = tuple(out.shape[k:])
    shape = bshape + tail
    if hasattr(values, "ptr"):
        if tuple(values.shape) != shape:  # type: ignore[union-attr]
            raise ValueError(f"index_put: values.shape {tuple(values.shape)} != {shape}")  # type: ignore[union-attr]
        vst = tuple(values.strides)  # type: ignore[union-attr]
    else:
        vst = (0,) * len(shape)
    nb = len(bshape)
    idx = [(ib, tuple(ib.strides) + (0,) * len(tail), j, out.shape[j], out.strides[j]) for j, ib in enumerate(indices)]
    dst_dims = (-1,) * nb + tuple(range(k, len(out.shape)))
    if accumulate:
        launch("add", out, values, idx, shape, dst_dims, vst, neg=True, op="index_put", ranges=ranges, stream=stream)
    else:
        launch("put", out, values, idx, shape, dst_dims, vst, neg=True, op="index_put", ranges=ranges, stream=stream)
