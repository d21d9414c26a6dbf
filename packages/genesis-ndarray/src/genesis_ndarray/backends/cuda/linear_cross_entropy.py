"""Cross-entropy of a linear layer's output on cuda, ``chunk`` rows at a time: the (rows, classes) logits
never exist whole (a language model's head: 8,192 tokens x 50,304 classes are 824 MB in bf16).

Per chunk, in stream order, reusing one (chunk, classes) buffer:
  1. the logits, ``x_c @ w^T + b``, in ``x``'s dtype (a 16-bit product on the tensor cores, as autocast's
     linear gives them);
  2. the fused cross-entropy kernel: per-row loss, logsumexp and target weight;
  3. with an incoming gradient: the logits' gradient written over the logits (the same kernel family's
     backward, in place), then its products: ``d x_c = dz @ w`` into the input gradient's rows, ``d w +=
     dz^T @ x_c`` summed over the chunks in the matmul's epilogue, and ``d b +=`` its column sums.

The gradients are float32 for 16-bit inputs (float64 for float64): one rounding of each, when the caller
casts them. The targets are bounds-checked once for all chunks (one synchronisation at most; none when
their range is known), before anything is queued.
"""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import dtype_by_name
from ...precision import allow_tf32
from .common import View, reg, stream_of, value_range
from .cross_entropy import _per_row, _weight_sum
from .memory import contiguous
from .reduce import reduce

_ALIGN = 8  # the logits buffer's row stride, in elements: 16-byte rows, so the tensor-memory accelerator reads them


@reg("linear_cross_entropy")
def linear_cross_entropy(
    x: View,
    w: View,
    b: View | None,
    target: View,
    weight: View | None,
    ignore_index: int,
    label_smoothing: float,
    chunk: int,
    grad: View | None,
    total: View | None,
    need: tuple[bool, bool, bool],
) -> tuple[View, View, View | None, View | None, View | None]:
    rows, features = x.shape
    classes = w.shape[0]
    acc = "float64" if x.dtype == "float64" else "float32"
    device = x.device
    stream = stream_of(x)
    x, w, target = contiguous(x), contiguous(w), contiguous(target)
    weight = None if weight is None else contiguous(weight)
    loss, lse, row_weight = (gs.empty((rows,), acc, device) for _ in range(3))
    backward = grad is not None
    gx = gs.empty((rows, features), acc, device) if backward and need[0] else None
    gw = gs.empty((classes, features), acc, device) if backward and need[1] else None
    gb = gs.empty((classes,), acc, device) if backward and need[2] and b is not None else None
    if gb is not None:
        gk.fill(gb, 0, stream=stream)
    if rows == 0:  # no rows: no products to write the weight's gradient
        if gw is not None:
            gk.fill(gw, 0, stream=stream)
        return loss, row_weight, gx, gw, gb
    gk.check_targets(target, classes, ignore_index=ignore_index, target_range=value_range(target), stream=stream)
    wsum = _weight_sum(weight, label_smoothing, acc)
    per_row = None if grad is None else _per_row(grad)
    tf32 = allow_tf32()
    size = min(chunk, rows)
    ld = -(-classes // _ALIGN) * _ALIGN
    buffer = gs.empty((size * ld,), x.dtype, device)
    w_t = w.as_strided((1, features, classes), (0, w.strides[1], w.strides[0]), w.offset)
    w_3 = w.as_strided((1, classes, features), (0, *w.strides), w.offset)
    for start in range(0, rows, size):
        n = min(size, rows - start)
        x_c = x.as_strided((1, n, features), (0, x.strides[0], x.strides[1]), x.offset + start * x.strides[0])
        z = buffer.as_strided((n, classes), (ld, 1), buffer.offset)
        z_3 = buffer.as_strided((1, n, classes), (0, ld, 1), buffer.offset)
        gk.matmul(x_c, w_t, z_3, bias=b, allow_tf32=tf32, stream=stream)
        t_c, lse_c = _rows(target, start, n), _rows(lse, start, n)
        gk.cross_entropy(
            z,
            t_c,
            weight,
            wsum,
            _rows(loss, start, n),
            lse_c,
            _rows(row_weight, start, n),
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
            check=False,
            stream=stream,
        )
        if per_row is None:
            continue
        g_c = per_row if per_row.numel == 1 else _rows(per_row, start, n)
        gk.cross_entropy_backward(
            z, t_c, weight, wsum, lse_c, g_c, total, z,
            ignore_index=ignore_index, label_smoothing=label_smoothing, stream=stream,
        )  # fmt: skip
        if gx is not None:
            gx_c = gx.as_strided((1, n, features), (0, features, 1), gx.offset + start * features)
            gk.matmul(z_3, w_3, gx_c, allow_tf32=tf32, stream=stream)
        if gw is not None:
            dz_t = buffer.as_strided((1, classes, n), (0, 1, ld), buffer.offset)
            gw_3 = gw.as_strided((1, classes, features), (0, features, 1), gw.offset)
            # (the first chunk's product is written, the others added to it)
            gk.matmul(dz_t, x_c, gw_3, accumulate=start > 0, allow_tf32=tf32, stream=stream)
        if gb is not None:
            gk.binary("add", gb, reduce("sum", z, 0, False, dtype_by_name[acc]), gb, compute_dtype=acc, stream=stream)
    return loss, row_weight, gx, gw, gb


def _rows(v: View, start: int, n: int) -> View:
    """Rows [start, start + n) of a contiguous per-row vector."""
    return v.as_strided((n,), (1,), v.offset + start)
