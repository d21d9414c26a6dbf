"""matmul (mm, bmm, batched and broadcast, 1-d operands as torch), linear (one fused launch), and
MatmulMixin, their Tensor methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from genesis_ndarray import float32

from ..autocast import _state as _autocast_state
from ..autocast import lowered
from ..function import _NO_EDGE, Node
from ..tensor_base import TensorBase
from ._util import Primitive, backward_recorded, wrap
from .index_write import torch_name
from .memory import Cast

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


class MatMul(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        if ctx.records:  # what only backward reads
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
            sa, sb = a.data.shape, b.data.shape
            ctx.ndims = (len(sa), len(sb))
            ctx.shapes = (sa, sb)
        return a.data.matmul(b.data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.ndims
        sa, sb = ctx.shapes
        if na == 1 and nb == 1:  # dot product
            return (g * b if ctx.needs_input_grad[0] else None, g * a if ctx.needs_input_grad[1] else None)
        ga = gb = None
        if ctx.needs_input_grad[0]:
            if na == 1:  # (K) @ (..., K, N): the row gradient summed over the batch
                ga = g.unsqueeze(-2).matmul(b.mT).reshape(-1, sa[0]).sum(0)
            elif nb == 1:  # (..., M, K) @ (K): outer product of g and b
                ga = _batch_sum_to(g.unsqueeze(-1).matmul(b.unsqueeze(-2)), sa)
            else:
                ga = _batch_sum_to(g.matmul(b.mT), sa)
        if ctx.needs_input_grad[1]:
            if nb == 1:
                gb = a.mT.matmul(g.unsqueeze(-1)).reshape(-1, sb[0]).sum(0)
            elif na == 1:
                gb = _batch_sum_to(a.unsqueeze(-1).matmul(g.unsqueeze(-2)), sb)
            else:
                gb = _batch_sum_to(a.mT.matmul(g), sb)
        return ga, gb


class Linear(Primitive):
    """``x @ w^T + b`` as one launch (bias fused into the matmul's epilogue).

    The backward reads its operands in the layouts they are in: ``dx = dy @ w`` and
    ``dw = dy^T @ x`` over the rows of every batch dim at once (a transposed view, no copy,
    and no per-batch products summed afterwards), ``db`` the column sums of ``dy``.

    Under autocast (the "own" policy, autocast.py) the op casts its operands itself: the product
    runs in the autocast dtype on casts that are not nodes of the graph (a parameter's cast once
    per region, from autocast's cache), a float32 bias is added in float32, and each gradient
    comes out in its input's own dtype, a float32 one straight from the backward products'
    float32 accumulators. The values are torch's autocast's, with one rounding fewer per gradient.
    """

    @staticmethod
    def forward(ctx, x, w, b):
        xd, wd, bd = linear_operands(x, w, b)
        if ctx.records:
            need = ctx.needs_input_grad
            # Backward multiplies by the operands the product read. A cast one is a copy nobody else
            # holds (kept as a plain tensor of its own); an uncast one is the input, checked for
            # in-place changes.
            ctx.save_for_backward(
                (x if xd is x.data else wrap(x, xd)) if need[1] else None,
                (w if wd is w.data else wrap(w, wd)) if need[0] else None,
            )
            # the bias gradient's dtype (None: no bias), the bias's own
            ctx.bias_dtype = None if b is None else b.data.dtype
            if xd is not x.data or wd is not w.data:
                ctx.grad_dtypes = (x.data.dtype, w.data.dtype)
        return xd.linear(wd, bd)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return _linear_backward(ctx, g, x, w)


class RecastLinear(Linear):
    """Linear keeping the weight itself, not autocast's cast of it: backward casts it again.

    Under autocast a Linear keeps the 16-bit cast of its weight for backward, an extra copy of every
    weight from forward to backward, at the step's memory peak. The weight itself (a parameter) lives
    anyway, so keeping it costs nothing, and one cast in backward gives the same values. genesis.compile
    puts it where a Linear's weight is a parameter (compile/recompute.py)."""

    autocast_policy = "own"

    @staticmethod
    def forward(ctx, x, w, b):
        xd, wd, bd = linear_operands(x, w, b)
        if ctx.records:
            need = ctx.needs_input_grad
            ctx.save_for_backward((x if xd is x.data else wrap(x, xd)) if need[1] else None, w if need[0] else None)
            ctx.bias_dtype = None if b is None else b.data.dtype
            if xd is not x.data or wd is not w.data:
                ctx.grad_dtypes = (x.data.dtype, w.data.dtype)
            ctx.weight_cast = None if wd is w.data else wd.dtype
        return xd.linear(wd, bd)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return _linear_backward(ctx, g, x, recast(w, ctx.weight_cast))


def recast(w: Tensor | None, dtype: Any) -> Tensor | None:
    """A kept weight as forward's product read it: cast again to ``dtype`` (None: it was not cast)."""
    return w if w is None or dtype is None else wrap(w, w.data.astype(dtype))


def _linear_backward(ctx, g, x, w):
    """Linear's gradients from the operands its product read (``x`` / ``w``: None where not needed)."""
    need = ctx.needs_input_grad
    dtypes = ctx.__dict__.get("grad_dtypes")  # (input, weight) gradient dtypes where autocast cast them
    if backward_recorded(g):  # a recorded backward: Tensor ops, differentiable
        if dtypes is not None:
            x, w = _cast_operand(ctx, 0, x), _cast_operand(ctx, 1, w)
        rows = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])  # a 2-D input's rows need no reshape op
        gx = g.matmul(w) if need[0] else None
        gw = rows.mT.matmul(x if x.ndim == 2 else x.reshape(-1, x.shape[-1])) if need[1] else None
        gb = rows.sum(0, dtype=ctx.bias_dtype) if ctx.bias_dtype is not None and need[2] else None
        if dtypes is not None:
            gx = None if gx is None else gx.to(dtypes[0])
            gw = None if gw is None else gw.to(dtypes[1])
        return gx, gw, gb
    # The usual backward: one NDArray op for all three (the backend takes its cached 2-D matmul plans
    # over the rows of every batch dim), none of the Tensor layer's per-op cost; the same products in
    # the same layouts as the recorded path. A float32 bias's gradient is summed into float32, and a
    # float32 input's or weight's gradient is written in float32 by the product itself.
    gd = g.data
    wide = (None, None) if dtypes is None else [d if d is float32 else None for d in dtypes]
    gx, gw, gb = gd.linear_backward(
        None if x is None else x.data,
        None if w is None else w.data,
        need[0],
        need[1],
        ctx.bias_dtype if need[2] else None,
        wide[0],
        wide[1],
    )
    if dtypes is not None:  # (a dtype the products do not write: float16 under bfloat16 autocast, ...)
        if gx is not None and gx.dtype is not dtypes[0]:
            gx = gx.astype(dtypes[0])
        if gw is not None and gw.dtype is not dtypes[1]:
            gw = gw.astype(dtypes[1])
    return (
        None if gx is None else wrap(g, gx),
        None if gw is None else wrap(g, gw),
        None if gb is None else wrap(g, gb),
    )


def linear_operands(x: Tensor, w: Tensor, b: Tensor | None) -> tuple[Any, Any, Any]:
    """The NDArrays a linear product of the "own" autocast policy computes on: the input and weight in the
    autocast dtype where autocast casts them, a float32 bias kept as it is (added to the float32 accumulator),
    and the inputs' own data outside an autocast region."""
    xd, wd = x.data, w.data
    bd = None if b is None else b.data
    if _autocast_state.active:
        xd, wd = lowered(x), lowered(w)
        if bd is not None and bd.dtype is not float32:
            bd = lowered(b)
    return xd, wd, bd


def _cast_operand(ctx: Node, i: int, saved: Tensor | None) -> Tensor | None:
    """For a recorded backward (create_graph): Linear's input ``i`` as the product read it, differentiable
    back to that input. Where autocast cast it inside the op, ``saved`` is that cast, with no history: it
    gets the history the cast would have had, a Cast node on the input's edge (so a second derivative
    reaches the input, in its own dtype)."""
    if saved is None or saved.grad_fn is not None or saved.requires_grad:
        return saved  # not saved, or the input itself (uncast)
    edge = ctx.next_functions[i]
    if edge[0] is None:  # the input needs no gradient
        return saved
    dtype = ctx.__dict__["grad_dtypes"][i]
    if saved.dtype is dtype:
        return saved
    node = Node(Cast, (True, False), (edge, _NO_EDGE))
    node.__dict__["dtype"] = dtype  # what Cast's forward keeps for its backward
    t = wrap(saved, saved.data)
    t.requires_grad = True
    t.grad_fn = node
    return t


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """torch.nn.functional.linear for a 2-D weight: ``input @ weight^T + bias``, one kernel launch.

    Under autocast the op casts its operands itself and a float32 bias stays float32 (the "own" policy,
    see Linear and autocast.py); outside it the bias must have the input's dtype, as torch requires."""
    if bias is not None and bias.dtype is not input.dtype and not _autocast_state.active:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {torch_name(bias.dtype)} and {torch_name(input.dtype)}"
        )
    return Linear.apply(input, weight, bias)


def _batch_sum_to(grad, shape):
    """Sum a gradient over the batch dims its operand was broadcast along."""
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape[:-2]) if s == 1 and grad.shape[lead + i] != 1
    )
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.reshape(*shape) if tuple(grad.shape) != tuple(shape) else grad


class MatmulMixin(TensorBase):
    __slots__ = ()

    def matmul(self, other: Tensor) -> Tensor:
        """The matrix product, with torch.matmul's rules: 1-D operands are vectors (dot, matrix-vector),
        leading dimensions of N-D operands broadcast as batches; under autocast, in the autocast dtype.
        """
        if not isinstance(other, self._result_type):
            raise TypeError(f"matmul(): argument 'other' must be Tensor, not {type(other).__name__}")
        return MatMul.apply(self, other)

    __matmul__ = matmul  # the same method: one call fewer for ``a @ b``

    def __rmatmul__(self, other: Any) -> Tensor:
        return other.matmul(self)
