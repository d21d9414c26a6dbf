"""Pointwise fusion: maximal chains of pointwise ops in a captured graph become one FusedPointwise each.

A chain is a run of consecutive pointwise ops (add / sub / mul / div with broadcasting, casts between
float dtypes, GELU / SiLU / ReLU / sigmoid / tanh and a few more unary ops) of one output shape, each
reading a value the run made before it. The run becomes one genesis_kernels.codegen program: its
inputs are the tensors it reads from outside, its outputs the values something after it reads, each in
the dtype eager gave it. Inside the kernel every value stays in float32 (float64 when an input is), so
a low-precision chain rounds once instead of after every op (as torch.compile's kernels do). Its
backward is the program's generated gradient program (FusedPointwise).

Eager dropout's ops are first folded into one op (dropout.py), which joins a chain as the generated
program's Philox dropout.

A ``Linear`` keeps its bias in the matmul's epilogue. An earlier version moved the bias add into the
chain after it, so that bias + GELU was one kernel. Measured on GPT-2 (H200), that lost: the chain's
backward writes the bias gradient as a float32 tensor of the activation's full size and reduces it
after, where the Linear's backward reduces the output gradient it already has. Its 24 kernels took
1.89 ms of GPU time per step, against 0.61 ms for eager's 12 GELU backward kernels.

Under autocast the ops of a chain fuse too. The casts autocast inserts run inside an op's apply, so
they are not in the graph; the program puts them back: an op with the "float32" policy (exp, log,
rsqrt) casts its lower-precision inputs to float32 first, which the recorded output dtype shows.
"""

from __future__ import annotations

from typing import Any

from genesis_ndarray.pointwise_codegen import Program, ProgramBuilder, generated_source

from ..autocast import resolved_policy
from ..functions.activation import _Activation
from ..functions.elementwise import Add, Div, Mul, Sub, Unary
from ..functions.fused_pointwise import FusedPointwise
from ..functions.memory import Cast
from .dropout import DropoutOp, fold_dropout
from .graph import Graph, Op, Ref, refs

_BINARY = {Add: "add", Sub: "sub", Mul: "mul", Div: "div"}
_UNARY = frozenset(
    {"neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "abs"}
)
_FLOAT = frozenset({"float32", "float16", "bfloat16", "float64"})


def fuse_pointwise(graph: Graph, autocast_active: bool = False) -> Graph:
    """``graph`` with each chain of two or more pointwise ops replaced by one FusedPointwise op (in place;
    returned). Under autocast (``autocast_active``: the graph was captured in an autocast region), the
    casts of ops with the "float32" policy go into the program; ops of other policies do not fuse."""
    fold_dropout(graph)
    ops = graph.ops
    out: list[Op] = []
    run: list[Op] = []
    for op in ops:
        if _fusible(graph, op, autocast_active) and run and _joins(graph, run, op):
            run.append(op)
            continue
        out.extend(_fused(graph, run))
        run = [op] if _fusible(graph, op, autocast_active) else []
        if not run:
            out.append(op)
    out.extend(_fused(graph, run))
    graph.ops = out
    graph.plan()
    return graph


def fused_programs(graph: Graph) -> list[Program]:
    """The programs of the graph's FusedPointwise ops, in order."""
    return [op.args[0] for op in graph.ops if op.cls is FusedPointwise]


def kernel_sources(graph: Graph) -> dict[str, str]:
    """The generated Triton source of each fused program's forward kernel and of its gradient kernel
    (every input's gradient), by name: what GENESIS_COMPILE_DEBUG dumps."""
    sources = {}
    for program in fused_programs(graph):
        sources[f"fused_{program.key}"] = generated_source(program)
        gradient = program.gradient((True,) * program.n_inputs)
        sources[f"fused_{program.key}_backward"] = generated_source(gradient.program)
    return sources


# ------------------------------------------------------------------ what fuses
def _op_name(op: Op) -> str | None:
    cls = op.cls
    if cls in _BINARY:
        return _BINARY[cls]
    if cls is Cast:
        return "cast"
    if cls is DropoutOp:
        return "dropout"
    if isinstance(cls, type) and issubclass(cls, (Unary, _Activation)) and cls.op in _UNARY:
        return str(cls.op)
    return None


def _fusible(graph: Graph, op: Op, autocast_active: bool) -> bool:
    name = _op_name(op)
    if name is None or op.kwargs or not isinstance(op.outputs, Ref):
        return False
    if autocast_active and name not in ("dropout", "cast"):
        if resolved_policy(op.cls) not in (None, "float32"):  # type: ignore[arg-type]
            return False
    tensors = [a for a in op.args if isinstance(a, Ref)]
    if not tensors or not _is_float(graph, op.outputs) or not all(_is_float(graph, r) for r in tensors):
        return False
    if name == "cast":
        return getattr(op.args[1], "name", None) in _FLOAT
    scalars = [a for a in op.args if not isinstance(a, Ref)]
    return all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scalars)


def _is_float(graph: Graph, r: Ref) -> bool:
    found = graph.meta.get(r.slot)
    return found is not None and found[1].name in _FLOAT


def _joins(graph: Graph, run: list[Op], op: Op) -> bool:
    """Whether ``op`` continues the chain ``run``: the same output shape and grad mode, reading its values."""
    first = run[0]
    if graph.meta[op.outputs.slot][0] != graph.meta[first.outputs.slot][0] or op.grad_enabled != first.grad_enabled:
        return False
    made = {o.outputs.slot for o in run}
    return any(isinstance(a, Ref) and a.slot in made for a in op.args)


# ------------------------------------------------------------------ a chain -> one op
def _fused(graph: Graph, run: list[Op]) -> list[Op]:
    """The run as one FusedPointwise op (a run of one op stays as it is)."""
    if len(run) < 2:
        return run
    in_run = {id(op) for op in run}
    read_after = {r.slot for op in graph.ops if id(op) not in in_run for r in refs(op.args) + refs(op.kwargs)}
    read_after |= graph.read_after()
    escaping = [op.outputs for op in run if op.outputs.slot in read_after]
    if not escaping:
        return run
    b = ProgramBuilder()
    values: dict[int, Any] = {}
    inputs: list[Ref] = []

    def operand(a: Any) -> Any:
        if not isinstance(a, Ref):
            return float(a)
        if a.slot not in values:
            values[a.slot] = b.input()
            inputs.append(a)
        return values[a.slot]

    labels = []
    for op in run:
        name = _op_name(op)
        labels.append(op.label)
        if name == "cast":
            v = b.cast(operand(op.args[0]), op.args[1].name)
        elif name == "dropout":
            v = b.dropout(operand(op.args[0]), op.args[1])
        elif name in _BINARY.values():
            v = b.op(name, operand(op.args[0]), operand(op.args[1]))  # type: ignore[arg-type]
        else:
            v = b.op(name, _autocast_float32(graph, op, b, operand(op.args[0]), op.args[0]))  # type: ignore[arg-type]
        values[op.outputs.slot] = v
    for r in escaping:
        b.output(values[r.slot], graph.meta[r.slot][1].name)
    program = b.build()
    outputs: Any = escaping[0] if len(escaping) == 1 else tuple(escaping)
    label = f"FusedPointwise[{' -> '.join(labels)}]"
    return [Op(FusedPointwise.apply, (program, (), None, None, *inputs), {}, outputs, label, FusedPointwise,
               run[0].grad_enabled)]  # fmt: skip


def _autocast_float32(graph: Graph, op: Op, b: ProgramBuilder, value: Any, arg: Any) -> Any:
    """``value`` (the op's operand ``arg``) cast to float32 where autocast's "float32" policy cast it: the
    op's output is float32 while the operand is of another float dtype."""
    if not isinstance(arg, Ref) or not isinstance(op.outputs, Ref) or op.cls is None:
        return value
    out_dtype, in_dtype = graph.meta[op.outputs.slot][1], graph.meta[arg.slot][1]
    if resolved_policy(op.cls) == "float32" and out_dtype.name == "float32" and in_dtype.name != "float32":
        return b.cast(value, "float32")
    return value
