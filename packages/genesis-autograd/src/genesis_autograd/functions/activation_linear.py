"""``linear(act(h), w, b)`` with the activation recomputed in backward instead of kept.

In a transformer MLP the second projection reads the activation's output (``c_proj(gelu(c_fc(x)))``):
eager keeps both ``h`` (for the activation's backward) and ``act(h)`` (for the projection's weight
gradient) from forward to backward, two tensors of the MLP's width per layer. This op keeps ``h`` alone.
Its backward runs the projection's input-gradient product, recomputes ``act(h)`` for the weight gradient
(one elementwise pass over a tensor the activation's backward reads anyway), then the activation's
backward: the values are the composition's, with one tensor of the MLP's width less kept per layer.

genesis.compile puts it where a Linear's input is an activation that nothing else reads
(``compile/recompute.py``). Under autocast it behaves as the two ops do: the activation in its input's
dtype, the product by Linear's "own" policy (the activation's output and the weight cast to the autocast
dtype, a float32 bias kept), each gradient in its input's dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis_ndarray import float32

from ._util import Primitive, backward_recorded, wrap
from .activation import _act, _slope
from .matmul import linear_operands, recast

if TYPE_CHECKING:
    from ..tensor import Tensor


class ActivationLinear(Primitive):
    autocast_policy = "own"  # casts its own operands, as Linear does

    @staticmethod
    def forward(ctx, h, w, b, kind, keep_weight):
        act = wrap(h, h.data.unary(kind))
        xd, wd, bd = linear_operands(act, w, b)
        if ctx.records:
            need = ctx.needs_input_grad
            # keep_weight (a parameter, alive anyway): keep it, not autocast's cast, and cast again in backward
            ctx.weight_cast = None if wd is w.data or not keep_weight else wd.dtype
            kept = w if wd is w.data or keep_weight else wrap(w, wd)
            ctx.save_for_backward(h, kept if need[0] else None)
            ctx.kind = kind
            ctx.bias_dtype = None if b is None else b.data.dtype
            # where autocast cast the activation's output or the weight: (their dtypes, the product's)
            ctx.grad_dtypes = (act.data.dtype, w.data.dtype) if xd is not act.data or wd is not w.data else None
            ctx.product_dtype = xd.dtype
        return xd.linear(wd, bd)

    @staticmethod
    def backward(ctx, g):
        h, w = ctx.saved_tensors
        w = recast(w, ctx.weight_cast)
        need = ctx.needs_input_grad
        kind, dtypes = ctx.kind, ctx.grad_dtypes
        if backward_recorded(g):  # a recorded backward: Tensor ops, differentiable
            return _recorded_backward(ctx, g, h, w)
        # Input gradient first, so that one pass over h gives both the activation's gradient and the
        # activation itself, recomputed for the weight gradient.
        wide = (None, None) if dtypes is None else [d if d is float32 else None for d in dtypes]
        gd, hd, bias_dtype = g.data, h.data, ctx.bias_dtype if need[2] else None
        gh = act = gb = None
        if need[0]:
            gx, _, gb = gd.linear_backward(None, w.data, True, False, bias_dtype, wide[0], None)
            if gx.dtype is not hd.dtype:
                gx = gx.astype(hd.dtype)
            if need[1]:
                gh, act = hd.activation_backward_and_forward(gx, kind)
            else:
                gh = hd.activation_backward(gx, kind)
            gx = None  # (the step's memory peaks in these backwards: nothing is held longer than it is read)
            bias_dtype = None
        elif need[1]:
            act = hd.unary(kind)
        gw = None
        if need[1] or bias_dtype is not None:
            if act is not None and act.dtype is not ctx.product_dtype:
                act = act.astype(ctx.product_dtype)
            _, gw, gb2 = gd.linear_backward(act, None, False, need[1], bias_dtype, None, wide[1])
            gb = gb if gb2 is None else gb2
        act = None
        if gw is not None and dtypes is not None and gw.dtype is not dtypes[1]:
            gw = gw.astype(dtypes[1])
        return (
            None if gh is None else wrap(g, gh),
            None if gw is None else wrap(g, gw),
            None if gb is None else wrap(g, gb),
            None,
            None,
        )


def _recorded_backward(ctx, g, h, w):
    """The backward with Tensor ops (create_graph): the composition's products and the activation's slope."""
    need = ctx.needs_input_grad
    dtype = ctx.product_dtype
    act = _act(h, ctx.kind)
    x = act if act.dtype is dtype else act.to(dtype)
    rows = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
    gh = gw = gb = None
    if need[0]:
        gx = g.matmul(w if w is not None and w.dtype is dtype else w.to(dtype))
        gh = gx.to(h.dtype) * _slope(h, ctx.kind)
    if need[1]:
        gw = rows.mT.matmul(x if x.ndim == 2 else x.reshape(-1, x.shape[-1]))
        if ctx.grad_dtypes is not None:
            gw = gw.to(ctx.grad_dtypes[1])
    if ctx.bias_dtype is not None and need[2]:
        gb = rows.sum(0, dtype=ctx.bias_dtype)
    return gh, gw, gb, None, None


def activation_linear(h: Tensor, weight: Tensor, bias: Tensor | None, kind: str, keep_weight: bool = False) -> Tensor:
    """``linear(act(h), weight, bias)``, ``act`` named by ``kind`` as its elementwise op ("gelu", "gelu_tanh",
    "silu"), keeping ``h`` alone for backward (``keep_weight``: the weight itself too, not autocast's cast of
    it, cast again in backward; for a weight that lives anyway, a parameter)."""
    return ActivationLinear.apply(h, weight, bias, kind, keep_weight)
