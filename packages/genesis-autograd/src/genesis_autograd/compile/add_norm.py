"""Residual add + norm fusion: ``s = a + b`` then ``LayerNorm(s)`` / ``RMSNorm(s)`` become one add_norm op.

A pre-norm transformer block ends each half with a residual add whose result the next norm reads right
away: eager writes ``s``, and the norm reads it back. The fused op (genesis_autograd's add_layer_norm /
add_rms_norm: one kernel each way on cuda) reads the two addends once and writes ``s`` and the normed
rows together; its backward adds the norm's input gradient to the gradient ``s`` gets from its other uses
(the next residual add) and writes the sum once.

Under autocast the normed output is float32 (the norm's policy), and a Linear that reads it casts it to the
autocast dtype first: a float32 write, a read and a 16-bit write per norm. Where every reader of the normed
output is a Linear (a transformer block's qkv and fc projections), the fused op writes it in the autocast
dtype itself (computed in float32 and rounded once, the same values the cast gave), so the cast and its
launch are gone. The Linear then gives its input gradient in that dtype, as torch's autocast does (genesis's
eager Linear gives a float32 input its gradient in float32).

The pass runs before pointwise fusion, so the add it takes is no longer there for a chain to absorb, and
a Linear's bias stays in the matmul's epilogue. It rewrites only the pattern whose values it can give
back exactly: an ``Add`` of two tensors of one shape (no broadcast, no ``alpha``), read next by a norm
over its trailing dims, with no op in between reading the sum (the fused op takes the norm's place). The
fused function itself falls back to the composition for anything its kernel does not take (mixed 16-bit
dtypes, float64 under autocast), so the result is eager's either way; under autocast it makes the norm's
float32 output and casts the parameters as the norm's policy does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from genesis_ndarray import as_dtype

from ..functions.add_norm import _add_norm, add_layer_norm, add_rms_norm
from ..functions.elementwise import Add
from ..functions.matmul import Linear
from ..functions.normalization import LayerNorm, RMSNorm
from .graph import Graph, Op, Ref, refs

_FLOAT = frozenset({"float32", "float16", "bfloat16", "float64"})


def fuse_add_norm(graph: Graph, autocast: tuple[str, str] | None = None) -> Graph:
    """``graph`` with each residual add + norm pair replaced by one fused op (in place; returned).
    ``autocast``: (device type, dtype name) of the autocast region the graph was captured in, where one
    device type's autocast was on; its fused norms read only by Linears then write that dtype."""
    producer: dict[int, int] = {}
    for i, op in enumerate(graph.ops):
        if isinstance(op.outputs, Ref):
            producer[op.outputs.slot] = i
    fused: dict[int, Op] = {}  # the norm's index -> its replacement
    dropped: set[int] = set()  # the adds taken into a replacement
    for j, norm in enumerate(graph.ops):
        if norm.cls not in (LayerNorm, RMSNorm) or norm.kwargs or not isinstance(norm.outputs, Ref):
            continue
        source = norm.args[0]
        found = producer.get(source.slot) if isinstance(source, Ref) else None
        if found is None or found in dropped:
            continue
        i = found
        add = graph.ops[i]
        if not _fusible_add(graph, add) or add.grad_enabled != norm.grad_enabled:
            continue
        if any(source in refs(op.args) + refs(op.kwargs) for op in graph.ops[i + 1 : j]):
            continue  # the sum is read before the norm: it must exist there
        replacement = _fused(graph, add, norm)
        if replacement is None:
            continue
        fused[j] = replacement
        dropped.add(i)
    if fused:
        graph.ops = [fused.get(k, op) for k, op in enumerate(graph.ops) if k not in dropped]
        if autocast is not None:
            _lower_outputs(graph, autocast)
        graph.plan()
    return graph


def _lower_outputs(graph: Graph, autocast: tuple[str, str]) -> None:
    """Each fused op whose normed output only Linears read (as their input), on the autocast device type,
    writes it in the autocast dtype."""
    device_type, dtype = autocast
    readers: dict[int, list[tuple[Op, int]]] = {}
    for op in graph.ops:
        for position, arg in enumerate(op.args):
            for r in refs(arg):
                readers.setdefault(r.slot, []).append((op, position))
    escaping = graph.read_after()
    for k, op in enumerate(graph.ops):
        if op.fn not in _LOWERED:
            continue
        y = op.outputs[0]
        weight = graph.constants.get(op.args[3].slot) if isinstance(op.args[3], Ref) else None
        found = readers.get(y.slot, [])
        if (
            y.slot in escaping
            or not found
            or any(reader.cls is not Linear or position != 0 for reader, position in found)
            or getattr(getattr(weight, "device", None), "type", None) != device_type
        ):
            continue
        graph.ops[k] = Op(_LOWERED[op.fn], op.args, op.kwargs, op.outputs, op.label, op.cls, op.grad_enabled, op.site)
        graph.meta[y.slot] = (graph.meta[y.slot][0], as_dtype(dtype))


def _lowered_layer_norm(input, residual, normalized_shape, weight=None, bias=None, eps=1e-5):
    """add_layer_norm with the normed output in the autocast dtype (see the module's docstring)."""
    return _add_norm(input, residual, normalized_shape, weight, bias, eps, rms=False, lowered=True)


def _lowered_rms_norm(input, residual, normalized_shape, weight=None, eps=None):
    """add_rms_norm with the normed output in the autocast dtype (see the module's docstring)."""
    return _add_norm(input, residual, normalized_shape, weight, None, eps, rms=True, lowered=True)


_LOWERED: dict[Callable[..., Any], Callable[..., Any]] = {
    add_layer_norm: _lowered_layer_norm,
    add_rms_norm: _lowered_rms_norm,
}


def _fusible_add(graph: Graph, add: Op) -> bool:
    """An Add of two float tensors of one shape, its result one tensor."""
    if add.cls is not Add or add.kwargs or len(add.args) != 2 or not isinstance(add.outputs, Ref):
        return False
    a, b = add.args
    if not (isinstance(a, Ref) and isinstance(b, Ref)):
        return False
    metas = [graph.meta.get(r.slot) for r in (a, b, add.outputs)]
    if any(m is None or m[1].name not in _FLOAT for m in metas):
        return False
    return metas[0][0] == metas[1][0] == metas[2][0]  # type: ignore[index]


def _fused(graph: Graph, add: Op, norm: Op) -> Op | None:
    """The op computing ``(norm output, sum)`` in one call, or None where the norm's arguments are not
    the recorded form (input, weight[, bias], n, eps)."""
    shape = graph.meta[add.outputs.slot][0]
    fn: Callable[..., Any]
    args: tuple
    residual, addend = add.args  # ``residual + addend``: the same values either way round
    if norm.cls is LayerNorm and len(norm.args) == 5:
        _, weight, bias, n, eps = norm.args
        fn, args = add_layer_norm, (addend, residual, tuple(shape[len(shape) - n :]), weight, bias, eps)
        label = "AddLayerNorm"
    elif norm.cls is RMSNorm and len(norm.args) == 4:
        _, weight, n, eps = norm.args
        fn, args = add_rms_norm, (addend, residual, tuple(shape[len(shape) - n :]), weight, eps)
        label = "AddRMSNorm"
    else:
        return None
    if not isinstance(n, int) or not 0 < n <= len(shape):
        return None
    return Op(fn, args, {}, (norm.outputs, add.outputs), label, None, norm.grad_enabled, norm.site)
