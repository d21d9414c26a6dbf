"""Recompute instead of keep: what a Linear's backward reads is made again there where that is cheaper.

The memory of a training step peaks where backward starts, holding what forward kept for it. A Linear keeps
its input for the weight gradient; where that input is an activation's output (``c_proj(gelu(h))`` in every
GPT MLP), the activation keeps ``h`` too, so both tensors of the MLP's width live until backward. The pair
becomes one ActivationLinear (functions/activation_linear.py), which keeps ``h`` alone and recomputes the
activation in backward.

The cost model is the pass's condition. Recomputing costs one elementwise pass (read ``h``, write the
activation), in a backward that reads ``h`` anyway; keeping costs the activation's bytes for the whole
span from forward to backward, at the step's peak. An elementwise op whose input is kept regardless is
always cheaper to recompute than to keep, so the pass takes exactly those: GELU (either form) or SiLU whose output one
Linear reads as its input and nothing else reads (no other op, no output, no later piece), under the same
grad mode. Anything more expensive to recompute (a product, a reduction, attention) stays kept.

The same rule takes autocast's weight casts. Under autocast a Linear keeps the 16-bit cast of its weight
for backward: a copy of every weight at the peak. Where the weight is a parameter of the graph (a constant:
it lives anyway), the Linear keeps the parameter instead and casts it again in backward (RecastLinear, and
ActivationLinear's ``keep_weight``): one elementwise pass over the weight against its cast's bytes over the
whole span. Outside autocast nothing is cast, and the ops are the plain ones'.

It runs before pointwise fusion, so the activation is not first absorbed into a chain.
"""

from __future__ import annotations

from ..functions.activation import Gelu, GeluTanh, Silu
from ..functions.activation_linear import ActivationLinear, activation_linear
from ..functions.matmul import Linear, RecastLinear
from .graph import Graph, Op, Ref

_KINDS: dict[type | None, str] = {Gelu: "gelu", GeluTanh: "gelu_tanh", Silu: "silu"}


def recompute_activations(graph: Graph) -> Graph:
    """``graph`` with each activation that only a Linear's input reads folded into that Linear, recomputed
    in its backward (in place; returned)."""
    reads, escaping = graph.read_counts(), graph.read_after()
    constants = graph.constants
    producers = {op.outputs.slot: op for op in graph.ops if op.cls in _KINDS and _plain(op)}
    dropped: set[int] = set()
    for k, op in enumerate(graph.ops):
        if op.cls is not Linear or op.kwargs or len(op.args) != 3 or not isinstance(op.args[0], Ref):
            continue
        slot = op.args[0].slot
        _, weight, bias = op.args
        parameter = isinstance(weight, Ref) and weight.slot in constants
        act = producers.get(slot)
        if act is None or reads.get(slot) != 1 or slot in escaping or act.grad_enabled != op.grad_enabled:
            if parameter:
                args, label = op.args, op.label
                graph.ops[k] = Op(recast_linear, args, {}, op.outputs, label, RecastLinear, op.grad_enabled, op.site)
            continue
        graph.ops[k] = Op(
            activation_linear, (act.args[0], weight, bias, _KINDS[act.cls], parameter), {}, op.outputs,
            f"{act.label}+{op.label}", ActivationLinear, op.grad_enabled, op.site,
        )  # fmt: skip
        dropped.add(id(act))
    graph.ops = [op for op in graph.ops if id(op) not in dropped]
    graph.plan()
    return graph


def recast_linear(input, weight, bias=None):
    """Linear keeping its weight, not the weight's autocast cast, for backward (see the module's docstring)."""
    return RecastLinear.apply(input, weight, bias)


def _plain(op: Op) -> bool:
    """An activation of one tensor argument, its result one tensor."""
    return not op.kwargs and len(op.args) == 1 and isinstance(op.args[0], Ref) and isinstance(op.outputs, Ref)
