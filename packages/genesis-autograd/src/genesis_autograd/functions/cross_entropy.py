"""cross_entropy over logits with class-index targets: one fused NDArray op each way.

The forward keeps, per row, only the logsumexp (and the target's weight): no softmax, no one-hot.
The plain backward is one fused op that recomputes the softmax from the logits and that logsumexp
and writes the logits' gradient in their dtype; a backward that is itself recorded
(create_graph=True, or a gradient that requires grad) is written with Tensor ops instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis_ndarray import DType, float32

from ._util import Primitive, backward_recorded, wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this package
    from ..tensor import Tensor


class CrossEntropy(Primitive):
    """Logits (classes in the last dim, any row dims) against class indices of the row dims' shape.

    Args after the two tensors: weight (a (C,) Tensor or None; it gets no gradient, as in torch),
    ignore_index, label_smoothing, reduction ("none" / "sum" / "mean"), and the result's dtype
    (the logits' own, or float32 under autocast: computed in float32 without a float32 copy).
    """

    @staticmethod
    def forward(ctx, logits, target, weight, ignore_index, label_smoothing, reduction, dtype):
        w = None if weight is None else weight.data
        loss, lse, row_weight = logits.data.cross_entropy(target.data, w, ignore_index, label_smoothing)
        loss, total = reduce_losses(loss, row_weight, reduction)
        if ctx.records:
            ctx.save_for_backward(logits, target, weight)
            ctx.args = (ignore_index, label_smoothing, reduction)
            ctx.lse, ctx.total = lse, total
        return loss if loss.dtype == dtype else loss.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        logits, target, weight = ctx.saved_tensors
        ignore_index, label_smoothing, _ = ctx.args
        if backward_recorded(g):
            return _composed_backward(ctx, g, logits, target, weight), None, None, None, None, None, None
        dx = logits.data.cross_entropy_backward(
            target.data,
            None if weight is None else weight.data,
            ctx.lse,
            g.data,
            ctx.total,
            ignore_index,
            label_smoothing,
        )
        return wrap(g, dx), None, None, None, None, None, None


def reduce_losses(loss, row_weight, reduction: str) -> tuple:
    """(the reduced loss, the summed row weights that divide a mean, else None) of per-row losses (NDArrays)."""
    if reduction == "sum":
        return loss.sum(), None
    if reduction == "mean":
        total = row_weight.sum()
        return loss.sum() / total, total  # all rows ignored: 0 / 0 = nan, as torch
    return loss, None


def _composed_backward(ctx, g, logits, target, weight):
    """The fused backward's formula in Tensor ops, so that it can itself be differentiated:
    scale * (softmax * ((1 - e) w[y] + e W / C) - (1 - e) w[y] [c == y] - e / C w[c])."""
    ignore_index, eps, reduction = ctx.args
    n = logits.shape[-1]
    acc = logits.dtype if logits.dtype.itemsize >= 4 else float32  # as the fused kernel: fp32 math
    x = logits.to(acc)
    kept = target != ignore_index
    safe = target.where(kept, 0)
    keptf = kept.to(acc)
    w = None if weight is None else weight.detach().to(acc)
    wy = keptf if w is None else w[safe] * keptf
    scale = g.to(acc)
    if reduction == "mean":
        total = wy.sum()
        scale = scale / (total + (total == 0).to(acc))  # all ignored: every row is masked anyway
    scale = scale * keptf
    a = (1 - eps) * wy * scale
    b = (eps / n) * scale
    coef = a + b * (n if w is None else w.sum())
    p = x.softmax(-1)
    one_hot = (p.detach() * 0).scatter(-1, safe.unsqueeze(-1), 1.0)
    dx = p * coef.unsqueeze(-1) - one_hot * a.unsqueeze(-1)
    if eps > 0:
        dx = dx - b.unsqueeze(-1) * (1.0 if w is None else w)
    return dx.to(logits.dtype)


def cross_entropy(
    logits: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    reduction: str = "mean",
    dtype: DType | None = None,
) -> Tensor:
    """Fused cross-entropy of ``logits`` (classes in the LAST dim) against class indices ``target``.

    torch's semantics (ignore_index, label_smoothing, class weights, reduction); the result is in
    ``dtype`` (default: the logits'), computed in float32 (float64 for float64 logits) whatever the
    logits' dtype, without a float32 copy of them. nn.functional.cross_entropy moves torch's class
    dim 1 last (a view) and calls this.
    """
    if reduction not in ("none", "sum", "mean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return CrossEntropy.apply(
        logits,
        target,
        weight,
        int(ignore_index),
        float(label_smoothing),
        reduction,
        logits.dtype if dtype is None else dtype,
    )
