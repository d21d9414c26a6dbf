"""A generated pointwise program as one differentiable op: forward and backward are one kernel each.

``FusedPointwise`` runs a genesis_kernels.codegen Program through NDArray.fused_pointwise (the
generated kernel on cuda, the same program in torch ops on cpu). Its backward runs the program's
gradient program (``Program.gradient``), which recomputes the forward's intermediates from the saved
inputs and redraws its dropout masks from the forward's (seed, offset); gradients of broadcast inputs
are computed at the broadcast shape in float32 (or float64) and summed down to the input's shape. A
backward that is itself recorded (create_graph=True) applies FusedPointwise to the gradient program,
so second derivatives flow (except through act'(x) nodes, which have no derivative rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from genesis_ndarray import float32, promote_types

from ._util import Primitive, backward_recorded, reduce_to, wrap

if TYPE_CHECKING:
    from ..tensor import Tensor

_LEAD = 4  # forward's arguments before the tensor inputs: program, scalars, rng, out_dtypes


class FusedPointwise(Primitive):
    """``apply(program, scalars, rng, out_dtypes, *inputs)``: the program's outputs (a Tensor, or a tuple)."""

    @staticmethod
    def forward(ctx, program, scalars, rng, out_dtypes, *inputs):
        arrays = [x.data for x in inputs]
        outs, used = arrays[0].fused_pointwise(program, *arrays[1:], scalars=scalars, rng=rng, out_dtypes=out_dtypes)
        if ctx.records:
            ctx.save_for_backward(*inputs)
            ctx.program, ctx.scalars, ctx.rng = program, scalars, used
            ctx.shape = outs[0].shape
        return outs if len(outs) > 1 else outs[0]

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.saved_tensors
        needs = tuple(ctx.needs_input_grad[_LEAD:])
        has = tuple(g is not None for g in grads)
        result: list[Any] = [None] * (_LEAD + len(inputs))
        if not any(needs) or not any(has):
            return tuple(result)
        gp = ctx.program.gradient(needs, has)
        feed = [inputs[i] if kind == "input" else grads[i] for kind, i in gp.sources]
        # A broadcast input's gradient is summed down after the kernel: keep it wide until then.
        dtypes = [
            x.dtype if tuple(x.shape) == tuple(ctx.shape) else promote_types(x.dtype, float32)
            for x in (inputs[k] for k in gp.grads_for)
        ]
        if backward_recorded(*grads):
            out = FusedPointwise.apply(gp.program, ctx.scalars, ctx.rng, dtypes, *feed)
            computed = out if isinstance(out, tuple) else (out,)
        else:
            arrays = [t.data for t in feed]
            nds, _ = arrays[0].fused_pointwise(
                gp.program, *arrays[1:], scalars=ctx.scalars, rng=ctx.rng, out_dtypes=dtypes
            )
            computed = tuple(wrap(feed[0], nd) for nd in nds)
        for k, g in zip(gp.grads_for, computed):
            result[_LEAD + k] = reduce_to(g, (tuple(inputs[k].shape), inputs[k].data.dtype))
        return tuple(result)


def fused_pointwise(
    program: Any, *inputs: Tensor, scalars: Sequence[float] = (), out_dtypes: Sequence[Any] | None = None
) -> Tensor | tuple[Tensor, ...]:
    """Run a genesis_kernels.codegen Program over ``inputs`` (Tensors, broadcast together) as one
    differentiable op; one output gives a Tensor, several a tuple. Dropout masks are fresh per call."""
    if len(inputs) != program.n_inputs:
        raise ValueError(f"fused_pointwise: the program takes {program.n_inputs} input(s), got {len(inputs)}")
    for k, x in enumerate(inputs):
        if not hasattr(x, "grad_fn"):
            raise TypeError(f"fused_pointwise(): input {k} must be a Tensor, not {type(x).__name__}")
    return FusedPointwise.apply(program, tuple(scalars), None, out_dtypes, *inputs)
