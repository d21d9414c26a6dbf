"""Dropout in a captured graph as one op that the pointwise fusion understands.

Eager ``F.dropout(x, p)`` is four recorded ops: ``empty`` of x's shape, ``bernoulli_(1 - p)`` on it,
``mul_(1 / (1 - p))`` (the scaled keep-mask) and ``x * mask``. :func:`fold_dropout` replaces each such
run, when nothing else reads the mask, by one :class:`DropoutOp`: ``x`` times a Philox keep-mask of
probability 1 - p, scaled by 1 / (1 - p). Inside a fused chain it becomes the generated program's
dropout (its mask drawn in the kernel from a fresh (seed, offset) of the device's generator per call, as
F.dropout on that device draws, and redrawn, not stored, in the backward); on its own it runs that
one-op program. The masks are not eager's (the draw order differs), their distribution is.

In eval mode, and for p = 0, F.dropout returns its input: no op is recorded, nothing is left to remove.
"""

from __future__ import annotations

import functools
from typing import Any

from genesis_ndarray.pointwise_codegen import Program, ProgramBuilder

from ..functions.elementwise import Mul
from ..functions.fused_pointwise import FusedPointwise
from .graph import Graph, Op, Ref


class DropoutOp:
    """The folded dropout op: ``DropoutOp.run(x, p)`` (the callable a graph replays where it did not fuse)."""

    @staticmethod
    def run(x: Any, p: float) -> Any:
        """``x`` with each element zeroed with probability ``p`` and the rest scaled by 1 / (1 - p)."""
        return FusedPointwise.apply(_program(p), (), None, None, x)


@functools.lru_cache(maxsize=64)
def _program(p: float) -> Program:
    b = ProgramBuilder()
    b.output(b.dropout(b.input(), p))
    return b.build()


def fold_dropout(graph: Graph) -> Graph:
    """``graph`` (in place; returned) with every eager dropout's four ops replaced by one DropoutOp."""
    reads, escaping = graph.read_counts(), graph.read_after()
    ops, i = graph.ops, 0
    out: list[Op] = []
    while i < len(ops):
        folded = _match(graph, ops[i : i + 4], reads, escaping)
        if folded is None:
            out.append(ops[i])
            i += 1
        else:
            out.append(folded)
            i += 4
    graph.ops = out
    return graph


def _match(graph: Graph, run: list[Op], reads: dict[int, int], escaping: set[int]) -> Op | None:
    """The DropoutOp for ``run`` when it is empty -> bernoulli_ -> mul_ -> Mul by the mask, else None."""
    if len(run) < 4:
        return None
    empty, draw, scale, mul = run
    if not (
        empty.label == "genesis.empty"
        and draw.label == "Tensor.bernoulli_"
        and scale.label == "Tensor.mul_"
        and mul.cls is Mul
        and not draw.kwargs
        and not scale.kwargs
        and all(isinstance(o.outputs, Ref) for o in run)
        and len(draw.args) == 2
        and len(scale.args) == 2
        and draw.args[0] == empty.outputs
        and scale.args[0] == draw.outputs
        and isinstance(draw.args[1], float)
        and isinstance(scale.args[1], float)
    ):
        return None
    mask = scale.outputs
    others = [a for a in mul.args if a != mask]
    if len(others) != 1 or not isinstance(others[0], Ref):
        return None
    x = others[0]
    private = (empty.outputs.slot, draw.outputs.slot, mask.slot)
    if any(reads.get(s, 0) != 1 or s in escaping for s in private):
        return None
    if graph.meta[x.slot] != graph.meta[mask.slot] or graph.meta[x.slot] != graph.meta[mul.outputs.slot]:
        return None  # a broadcast mask (feature dropout) or a dtype change: left as eager ops
    p = 1.0 - draw.args[1]
    if not 0.0 < p < 1.0:
        return None
    return Op(DropoutOp.run, (x, p), {}, mul.outputs, f"Dropout(p={p:.6g})", DropoutOp, mul.grad_enabled)
