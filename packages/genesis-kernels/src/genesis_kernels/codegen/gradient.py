"""Reverse mode over a pointwise program: the program that computes its inputs' gradients.

The gradient program is itself a pointwise program, generated and launched like any other. Its inputs
are only what it reads: forward inputs (the forward's intermediates are recomputed in the kernel from
them, not saved), the gradients of the forward's outputs, and a forward output where the caller has
it and recomputing that value would cost more than loading it (:func:`_recompute_cost`). A dropout
mask is redrawn from the same (seed, offset) and slot, so the backward uses the forward's mask. Its
outputs are the gradients of the inputs asked for, at the broadcast shape (the caller sums them
down to each input's shape).

The rules are torch's derivative formulas (derivatives.yaml), e.g. maximum splits the gradient in
halves where both operands are equal, relu's passes where its output is positive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .ir import COMPARISONS, FLOAT_DTYPES, Node, Program, ProgramBuilder, Value

# Recompute cost of one node, in units where loading one element of an operand costs LOAD_COST.
LOAD_COST = 4
_EXPENSIVE = frozenset(("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu", "pow"))
_NO_GRADIENT = COMPARISONS | {"const", "scalar", "dropout_mask", "sign"}
_SECOND_ORDER = frozenset(("gelu_grad", "gelu_tanh_grad", "silu_grad"))


@dataclass(frozen=True)
class GradientProgram:
    """A gradient program and how to feed it.

    ``sources[k]`` says what its input ``k`` is: ("input", i) the forward's input i, ("grad", j) the
    gradient of the forward's output j, ("saved", j) the forward's output j. ``grads_for[m]`` is the
    forward input whose gradient its output ``m`` is. Its scalars are the forward's, in order."""

    program: Program
    sources: tuple[tuple[str, int], ...]
    grads_for: tuple[int, ...]


def _recompute_cost(fwd: Program, index: int) -> int:
    """What recomputing node ``index`` costs per element: its ops, and the loads of the inputs it reads."""
    seen: set[int] = set()
    stack, cost = [index], 0
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        node = fwd.nodes[i]
        if node.op == "input":
            cost += LOAD_COST
        elif node.op == "dropout_mask":
            cost += 2 * LOAD_COST  # ten Philox rounds
        elif node.op not in ("const", "scalar"):
            cost += LOAD_COST if node.op in _EXPENSIVE else 1
        stack.extend(node.args)
    return cost


def derive(
    fwd: Program,
    needs_input_grad: tuple[bool, ...],
    has_output_grad: tuple[bool, ...],
    saved_outputs: tuple[bool, ...],
) -> GradientProgram:
    """The :class:`GradientProgram` of ``fwd`` (called through ``Program.gradient``, which caches it)."""
    if len(needs_input_grad) != fwd.n_inputs:
        raise ValueError(f"gradient: {len(needs_input_grad)} flags for a program of {fwd.n_inputs} input(s)")
    if len(has_output_grad) != len(fwd.outputs) or len(saved_outputs) != len(fwd.outputs):
        raise ValueError(f"gradient: output flags must have one entry per output ({len(fwd.outputs)})")
    if not any(needs_input_grad):
        raise ValueError("gradient: no input needs a gradient")
    b = ProgramBuilder()
    scalars = [b.scalar(name) for name in fwd.scalars]
    sources: list[tuple[str, int]] = []
    loaded: dict[tuple[str, int], Value] = {}

    def source(kind: str, index: int) -> Value:
        found = loaded.get((kind, index))
        if found is None:
            found = loaded[(kind, index)] = b.input()
            sources.append((kind, index))
        return found

    saved_at = {
        fwd.outputs[j][0]: j
        for j, keep in enumerate(saved_outputs)
        if keep and _recompute_cost(fwd, fwd.outputs[j][0]) > LOAD_COST
    }
    values: dict[int, Value] = {}

    def value(i: int) -> Value:
        """Forward node ``i`` in the gradient program: loaded, or recomputed from what it reads."""
        found = values.get(i)
        if found is not None:
            return found
        node = fwd.nodes[i]
        if i in saved_at:
            found = source("saved", saved_at[i])
        elif node.op == "input":
            found = source("input", node.attr)
        elif node.op == "scalar":
            found = scalars[node.attr]
        elif node.op == "const":
            found = b.const(node.attr)
        elif node.op == "dropout_mask":
            found = b._add(Node("dropout_mask", (), node.attr))  # the same (p, slot): the same mask
        else:
            attr = node.attr if node.op in ("pow", "cast") else None
            found = b.op(node.op, *[value(a) for a in node.args], attr=attr)
        values[i] = found
        return found

    adjoint: dict[int, Value] = {}

    def accumulate(i: int, g: Value) -> None:
        adjoint[i] = g if i not in adjoint else adjoint[i] + g

    for j, (index, _) in enumerate(fwd.outputs):
        if has_output_grad[j]:
            accumulate(index, source("grad", j))
    for i in range(len(fwd.nodes) - 1, -1, -1):
        g = adjoint.get(i)
        if g is None:
            continue
        node = fwd.nodes[i]
        if node.op == "input" or node.op in _NO_GRADIENT:
            continue
        if node.op in _SECOND_ORDER:
            raise NotImplementedError(f"gradient: the derivative of {node.op!r} (a second derivative) is not supported")
        rule = _RULES[node.op]
        for arg, grad in zip(node.args, rule(b, node, g, value, i)):
            if grad is not None:
                accumulate(arg, grad)
    input_node = {n.attr: i for i, n in enumerate(fwd.nodes) if n.op == "input"}
    grads_for = []
    for k, need in enumerate(needs_input_grad):
        if need:
            grad = adjoint.get(input_node[k]) if k in input_node else None
            b.output(grad if grad is not None else b.const(0.0))
            grads_for.append(k)
    if not sources:  # every gradient is a constant: still one tensor input, so the program has a shape
        source("grad", next((j for j, h in enumerate(has_output_grad) if h), 0))
    return _drop_unread_inputs(b.build(), sources, tuple(grads_for))


def _drop_unread_inputs(
    program: Program, sources: list[tuple[str, int]], grads_for: tuple[int, ...]
) -> GradientProgram:
    """Renumber the inputs the finished program reads (a rule may have loaded an operand for the gradient
    of a node that needs none, e.g. x for a dropout mask's; pruning dropped that work, not the load)."""
    read = sorted({n.attr for n in program.nodes if n.op == "input"}) or [0]
    if len(read) == program.n_inputs:
        return GradientProgram(program, tuple(sources), grads_for)
    number = {old: new for new, old in enumerate(read)}
    nodes = tuple(Node("input", (), number[n.attr]) if n.op == "input" else n for n in program.nodes)
    kept = Program(len(read), program.scalars, nodes, program.outputs)
    return GradientProgram(kept, tuple(sources[k] for k in read), grads_for)


Rule = Callable[[ProgramBuilder, Node, Value, Callable[[int], Value], int], tuple[Value | None, ...]]


def _maximum_like(greater: str) -> Rule:
    """maximum / minimum: the gradient to the operand that wins, halves where the two are equal."""

    def rule(b: ProgramBuilder, node: Node, g: Value, value: Callable[[int], Value], i: int) -> tuple:
        x, y = value(node.args[0]), value(node.args[1])
        tie = b.where(b.eq(x, y), g * 0.5, g)
        return b.where(b.op(greater, y, x), 0.0, tie), b.where(b.op(greater, x, y), 0.0, tie)

    return rule


def _pow(b: ProgramBuilder, node: Node, g: Value, value: Callable[[int], Value], i: int) -> tuple:
    e = node.attr
    if e == 0.0:
        return (None,)
    return (g * (e * b.pow(value(node.args[0]), e - 1.0)),)


def _cast(b: ProgramBuilder, node: Node, g: Value, value: Callable[[int], Value], i: int) -> tuple:
    # A float cast passes the gradient unrounded: inside the kernel no tensor of the narrow dtype holds it
    # (torch would round the gradient to that dtype). Casts to integers and bool have no gradient.
    return (g if node.attr in FLOAT_DTYPES else None,)


def _activation(grad_op: str) -> Rule:
    return lambda b, node, g, value, i: (g * b.op(grad_op, value(node.args[0])),)


_RULES: dict[str, Rule] = {
    "add": lambda b, node, g, value, i: (g, g),
    "sub": lambda b, node, g, value, i: (g, -g),
    "mul": lambda b, node, g, value, i: (g * value(node.args[1]), g * value(node.args[0])),
    "div": lambda b, node, g, value, i: (g / value(node.args[1]), -(g / value(node.args[1])) * value(i)),
    "neg": lambda b, node, g, value, i: (-g,),
    "exp": lambda b, node, g, value, i: (g * value(i),),
    "log": lambda b, node, g, value, i: (g / value(node.args[0]),),
    "sqrt": lambda b, node, g, value, i: (g / (2.0 * value(i)),),
    "rsqrt": lambda b, node, g, value, i: (-0.5 * g * b.pow(value(i), 3.0),),
    "tanh": lambda b, node, g, value, i: (g * (1.0 - value(i) * value(i)),),
    "sigmoid": lambda b, node, g, value, i: (g * ((1.0 - value(i)) * value(i)),),
    "relu": lambda b, node, g, value, i: (b.where(b.gt(value(i), 0.0), g, 0.0),),
    "gelu": _activation("gelu_grad"),
    "gelu_tanh": _activation("gelu_tanh_grad"),
    "silu": _activation("silu_grad"),
    "abs": lambda b, node, g, value, i: (g * b.sign(value(node.args[0])),),
    "maximum": _maximum_like("gt"),
    "minimum": _maximum_like("lt"),
    "where": lambda b, node, g, value, i: (
        None,
        b.where(value(node.args[0]), g, 0.0),
        b.where(value(node.args[0]), 0.0, g),
    ),
    "pow": _pow,
    "cast": _cast,
}
