"""Cast folding: a widening cast read only by an op that widens its input itself is dropped.

``F.cross_entropy(logits.float(), target)`` on 16-bit logits (nanoGPT's head, autocast's float32 policy)
writes a float32 copy of the logits, and the backward writes the float32 gradient and casts it back: four
passes over the largest tensor of a language model's step, which the loss does not need. The fused
cross-entropy reads 16-bit logits as they are and computes in float32, and its ``dtype`` argument says what
dtype the loss comes out in; its backward writes the logits' gradient in their dtype from float32 math, the
one rounding the cast's backward would make. So ``CrossEntropy(Cast(x, float32), ..., dtype)`` becomes
``CrossEntropy(x, ..., dtype)``, with the same loss and the same gradient of ``x``: only the summation
order inside the kernel may differ, in float32.

The pass rewrites only what it can give back exactly: a cast from float16 / bfloat16 to float32, whose
result no other op, no output and no later piece reads, into the logits argument of a CrossEntropy.
"""

from __future__ import annotations

from ..functions.cross_entropy import CrossEntropy
from ..functions.memory import Cast
from .graph import Graph, Op, Ref

_NARROW = frozenset({"float16", "bfloat16"})


def fold_casts(graph: Graph) -> Graph:
    """``graph`` with each widening cast into a cross-entropy's logits dropped (in place; returned)."""
    reads, escaping = graph.read_counts(), graph.read_after()
    casts = {op.outputs.slot: op for op in graph.ops if _widening(graph, op)}
    dropped: set[int] = set()
    for k, op in enumerate(graph.ops):
        if op.cls is not CrossEntropy or op.kwargs or not op.args or not isinstance(op.args[0], Ref):
            continue
        cast = casts.get(op.args[0].slot)
        if cast is None or reads.get(op.args[0].slot) != 1 or op.args[0].slot in escaping:
            continue
        if cast.grad_enabled != op.grad_enabled:
            continue
        graph.ops[k] = Op(op.fn, (cast.args[0], *op.args[1:]), op.kwargs, op.outputs, op.label, op.cls,
                          op.grad_enabled, op.site)  # fmt: skip
        dropped.add(id(cast))
    if dropped:
        graph.ops = [op for op in graph.ops if id(op) not in dropped]
        graph.plan()
    return graph


def _widening(graph: Graph, op: Op) -> bool:
    """A Cast of a float16 / bfloat16 tensor to float32, its result one tensor."""
    if op.cls is not Cast or op.kwargs or len(op.args) != 2 or not isinstance(op.args[0], Ref):
        return False
    if not isinstance(op.outputs, Ref) or getattr(op.args[1], "name", None) != "float32":
        return False
    found = graph.meta.get(op.args[0].slot)
    return found is not None and found[1].name in _NARROW
