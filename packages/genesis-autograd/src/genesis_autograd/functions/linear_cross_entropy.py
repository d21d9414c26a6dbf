"""linear_cross_entropy: cross-entropy of ``x @ w^T + b`` over class indices, chunked, with its fused backward.

The NDArray op (NDArray.linear_cross_entropy) takes the rows a chunk at a time, so the (rows, classes) logits
never exist whole. For a summed or averaged loss the forward also finds the three gradients, while each chunk's
logits are at hand (the incoming gradient of a reduced loss is one number: it and the mean's divisor scale them
in backward), so nothing is recomputed and the logits are multiplied through three times, as in the unfused
op. For per-row losses (reduction "none") the backward needs a gradient per row, and recomputes the chunks.

Under autocast (the "own" policy, as Linear's) the op casts its input and weight itself; a float32 bias stays
float32; each gradient comes out in its input's own dtype, from the float32 sums.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

from genesis_ndarray import float32, full

from ._util import Primitive, backward_recorded, wrap
from .cross_entropy import _composed_backward, reduce_losses
from .matmul import linear_operands

if TYPE_CHECKING:  # for annotations only: tensor.py imports this package
    from ..tensor import Tensor


class LinearCrossEntropy(Primitive):
    """Inputs: x (N, D), w (C, D), b (C,) or None, target (N,), class weight (C,) or None; then ignore_index,
    label_smoothing, reduction ("none" / "sum" / "mean"), the rows per chunk, and whether a second backward
    through the same graph is allowed (torch's chunked path refuses one unless asked to)."""

    @staticmethod
    def forward(ctx, x, w, b, target, weight, ignore_index, label_smoothing, reduction, chunk, allow_retain_graph):
        xd, wd, bd = linear_operands(x, w, b)
        cw = None if weight is None else weight.data
        need = tuple(ctx.needs_input_grad[:3]) if ctx.records else (False, False, False)
        early = any(need) and reduction != "none"  # the gradients with the forward
        one = full((1,), 1.0, dtype=float32, device=xd.device) if early else None
        loss, row_weight, gx, gw, gb = xd.linear_cross_entropy(
            wd, bd, target.data, cw, ignore_index, label_smoothing, chunk, one, None, need
        )
        loss, total = reduce_losses(loss, row_weight, reduction)
        if ctx.records:
            # Saved, and so released with the graph: the inputs (for a recorded backward), and either the early
            # gradients or the operands as the product read them (autocast's casts: copies nobody else holds,
            # kept as plain tensors) for the recomputing backward.
            if early:
                kept = [None if g is None else wrap(x, g) for g in (gx, gw, gb)]
            else:
                kept = [None if xd is x.data else wrap(x, xd), None if wd is w.data else wrap(w, wd), None]
            ctx.save_for_backward(x, w, b, target, weight, *kept)
            ctx.args = (ignore_index, label_smoothing, reduction, chunk, early)
            ctx.allow_retain_graph, ctx.used = allow_retain_graph, False
            ctx.total = total
            ctx.bias_data = bd
            ctx.compute_dtype = xd.dtype if xd is not x.data or wd is not w.data else None  # autocast's cast
            ctx.dtypes = (x.data.dtype, w.data.dtype, None if b is None else b.data.dtype)
        return loss if loss.dtype is x.data.dtype or xd.dtype is not x.data.dtype else loss.astype(xd.dtype)

    @staticmethod
    def backward(ctx, g):
        x, w, b, target, weight, *kept = ctx.saved_tensors
        ignore_index, label_smoothing, _, chunk, early = ctx.args
        if ctx.used and not ctx.allow_retain_graph:
            raise RuntimeError(
                "linear_cross_entropy: backward called a second time on the chunked path; construct "
                "LinearCrossEntropyOptions(allow_retain_graph=True) to allow repeated backward."
            )
        ctx.used = True
        nones = (None,) * 7
        if backward_recorded(g):
            return (*_recorded_backward(ctx, g, x, w, b, target, weight), *nones)
        if early:
            scale = g.data if ctx.total is None else g.data.astype(float32) / ctx.total
            # Scaled in place where no second backward may read them (nothing else holds them, and a float32 copy of
            # the weight's would double their memory at the peak).
            if ctx.allow_retain_graph:
                grads = [None if e is None else e.data * scale for e in kept]
            else:
                grads = [None if e is None else e.data.mul_(scale) for e in kept]
        else:
            need = tuple(ctx.needs_input_grad[:3])
            gd = g.data if g.data.dtype.itemsize >= 4 else g.data.astype(float32)
            xd = x.data if kept[0] is None else kept[0].data
            wd = w.data if kept[1] is None else kept[1].data
            _, _, *grads = xd.linear_cross_entropy(
                wd, ctx.bias_data, target.data, None if weight is None else weight.data,
                ignore_index, label_smoothing, chunk, gd, ctx.total, need,
            )  # fmt: skip
        out = []
        for grad, dtype in zip(grads, ctx.dtypes, strict=True):
            if grad is not None and grad.dtype is not dtype:
                grad = grad.astype(dtype)
            out.append(None if grad is None else wrap(g, grad))
        return (*out, *nones)


def _recorded_backward(ctx, g, x, w, b, target, weight) -> tuple:
    """For create_graph: the same gradients in Tensor ops, differentiable (the logits recomputed whole), through
    the casts autocast made (Cast nodes here, so that a second derivative reaches the inputs)."""
    ignore_index, label_smoothing, reduction, _, _ = ctx.args
    need = ctx.needs_input_grad
    bd = ctx.bias_data
    if ctx.compute_dtype is not None:
        x, w = x.to(ctx.compute_dtype), w.to(ctx.compute_dtype)
    bias = None if b is None else (b if bd is b.data else b.to(bd.dtype))
    logits = x.matmul(w.mT) if bias is None else x.matmul(w.mT) + bias
    args = SimpleNamespace(args=(ignore_index, label_smoothing, reduction))
    dz = _composed_backward(args, g, logits, target, weight)
    gx = dz.matmul(w) if need[0] else None
    gw = dz.mT.matmul(x) if need[1] else None
    gb = dz.sum(0) if need[2] and b is not None else None
    return tuple(None if t is None else t.to(d) for t, d in zip((gx, gw, gb), ctx.dtypes, strict=True))


def linear_cross_entropy(
    input: Tensor,
    weight: Tensor,
    target: Tensor,
    bias: Tensor | None = None,
    class_weight: Tensor | None = None,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    reduction: str = "mean",
    chunk: int = 1024,
    *,
    allow_retain_graph: bool = True,
) -> Tensor:
    """``cross_entropy(linear(input, weight, bias), target, ...)`` for ``input`` (N, D), ``weight`` (C, D) and
    class indices ``target`` (N,), ``chunk`` rows at a time, the gradients found with the forward (see the module
    docstring). The loss is float32 for 16-bit inputs (as cross_entropy under autocast), else the input's dtype."""
    if reduction not in ("none", "sum", "mean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return LinearCrossEntropy.apply(
        input, weight, bias, target, class_weight, int(ignore_index), float(label_smoothing), reduction, int(chunk),
        bool(allow_retain_graph),
    )  # fmt: skip
