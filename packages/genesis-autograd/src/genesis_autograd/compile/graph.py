"""The captured graph, plain data: slots for values, ops in program order, and how to run it again.

A :class:`Graph` names every tensor value by a slot number: the compiled function's tensor inputs
(``input_slots``), tensors it read from outside (``constants``: parameters, buffers, tensors of the
enclosing scope, held by reference so in-place updates such as an optimizer step are seen) and the
outputs of its :class:`Op` s. An op is a callable (a Function's ``apply``, a Tensor method, a factory)
with its arguments as written, :class:`Ref` standing in for each tensor. :func:`replay` runs the ops in
order on new inputs, dropping each value after its last use, and builds the output as captured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import grad_mode

_grad_state = grad_mode._state


@dataclass(frozen=True)
class Ref:
    """A tensor argument or output of the graph, by slot."""

    slot: int


@dataclass
class Op:
    """One recorded call: ``fn(*args, **kwargs)`` with :class:`Ref` s for tensors; ``outputs`` mirrors
    what it returned (a Ref, a tuple of Refs and None for non-tensor items, or None)."""

    fn: Callable[..., Any]
    args: tuple
    kwargs: dict
    outputs: Any
    label: str
    cls: type | None = None  # the Function class, for the passes
    grad_enabled: bool = True
    site: str = ""


@dataclass
class Graph:
    """A captured function: its ops and where every tensor value comes from."""

    input_slots: list[int]
    constants: dict[int, Any]
    ops: list[Op]
    output: Any
    n_slots: int
    meta: dict[int, tuple[tuple[int, ...], Any]] = field(default_factory=dict)  # slot -> (shape, dtype)
    frees: list[list[int]] = field(default_factory=list)  # per op: the slots read for the last time
    # per op: its positional arguments as (slot, constant) pairs (slot -1: the constant), or None where an
    # argument nests a Ref (fill() builds those); what replay reads instead of walking op.args each time
    arg_plans: list[tuple[tuple[int, Any], ...] | None] = field(default_factory=list)
    keep: set[int] = field(default_factory=set)  # slots read after the graph (by the pieces that follow it)

    def plan(self) -> None:
        """Work out, per op, the slots no later op or the output reads (freed during replay)."""
        last: dict[int, int] = {}
        for i, op in enumerate(self.ops):
            for r in refs(op.args) + refs(op.kwargs):
                last[r.slot] = i
        kept = self.read_after() | set(self.constants)
        self.frees = [[] for _ in self.ops]
        for slot, i in last.items():
            if slot not in kept:
                self.frees[i].append(slot)
        self.arg_plans = [_arg_plan(op.args) for op in self.ops]

    def read_counts(self) -> dict[int, int]:
        """slot -> how many times the graph's ops read it (a pass may rewrite a value only one op reads)."""
        reads: dict[int, int] = {}
        for op in self.ops:
            for r in refs(op.args) + refs(op.kwargs):
                reads[r.slot] = reads.get(r.slot, 0) + 1
        return reads

    def read_after(self) -> set[int]:
        """The slots read after the graph: by its output, and by the pieces that follow it (``keep``)."""
        return {r.slot for r in refs(self.output)} | self.keep

    def describe(self) -> str:
        """A readable listing: one line per op, ``%out = Label(%a, %b, 2.0)``."""
        lines = [f"inputs: {', '.join(f'%{s}' for s in self.input_slots)}"]
        for slot, value in self.constants.items():
            shape = tuple(getattr(value, "shape", ()))
            lines.append(f"%{slot} = constant {type(value).__name__}{list(shape)}")
        for op in self.ops:
            args = ", ".join([_show(a) for a in op.args] + [f"{k}={_show(v)}" for k, v in op.kwargs.items()])
            mode = "" if op.grad_enabled else "  [no_grad]"
            lines.append(f"{_show(op.outputs)} = {op.label}({args}){mode}")
        lines.append(f"return {_show(self.output)}")
        return "\n".join(lines)


def refs(template: Any) -> list[Ref]:
    """Every Ref in a nested template of tuples, lists and dicts."""
    if isinstance(template, Ref):
        return [template]
    if isinstance(template, (tuple, list)):
        return [r for item in template for r in refs(item)]
    if isinstance(template, dict):
        return [r for item in template.values() for r in refs(item)]
    return []


def fill(template: Any, env: list) -> Any:
    """``template`` with each Ref replaced by its slot's value in ``env``."""
    cls = template.__class__
    if cls is Ref:
        return env[template.slot]
    if cls is tuple or cls is list:
        return cls(fill(item, env) for item in template)
    if cls is dict:
        return {k: fill(v, env) for k, v in template.items()}
    return template


def bind(template: Any, value: Any, env: list) -> None:
    """Store the tensors of ``value`` (an op's result) in the slots its output template names."""
    if isinstance(template, Ref):
        env[template.slot] = value
    elif isinstance(template, tuple):
        for item, v in zip(template, value):
            bind(item, v, env)


def replay(graph: Graph, inputs: list) -> Any:
    """Run ``graph`` on ``inputs`` (the flat tensor inputs, in capture order): its output."""
    env: list = [None] * graph.n_slots
    for slot, value in zip(graph.input_slots, inputs):
        env[slot] = value
    for slot, value in graph.constants.items():
        env[slot] = value
    run_ops(graph, env)
    return fill(graph.output, env)


def _arg_plan(args: tuple) -> tuple[tuple[int, Any], ...] | None:
    """``args`` as (slot, constant) pairs, slot -1 for a constant; None where an argument nests a Ref."""
    plan = []
    for a in args:
        if a.__class__ is Ref:
            plan.append((a.slot, None))
        elif refs(a):
            return None
        else:
            plan.append((-1, a))
    return tuple(plan)


def run_ops(graph: Graph, env: list) -> None:
    """Run ``graph``'s ops on the values in ``env`` (by slot), storing their results there."""
    for op, frees, plan in zip(graph.ops, graph.frees, graph.arg_plans, strict=True):  # (plan() made both)
        # The replay's own cost per op: flat arguments from their plan (no recursion over op.args).
        args = fill(op.args, env) if plan is None else [env[s] if s >= 0 else c for s, c in plan]
        kwargs = fill(op.kwargs, env) if op.kwargs else op.kwargs
        if op.grad_enabled is _grad_state.enabled:
            out = op.fn(*args, **kwargs)
        else:  # the op ran under another grad mode when captured (a no_grad block in the function)
            with grad_mode.set_grad_enabled(op.grad_enabled):
                out = op.fn(*args, **kwargs)
        outputs = op.outputs
        if outputs.__class__ is Ref:
            env[outputs.slot] = out
        else:
            bind(outputs, out, env)
        for slot in frees:
            env[slot] = None


def _show(item: Any) -> str:
    if isinstance(item, Ref):
        return f"%{item.slot}"
    if isinstance(item, tuple):
        return "(" + ", ".join(_show(i) for i in item) + ("," if len(item) == 1 else "") + ")"
    if isinstance(item, list):
        return "[" + ", ".join(_show(i) for i in item) + "]"
    if isinstance(item, dict):
        return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in item.items()) + "}"
    text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."
