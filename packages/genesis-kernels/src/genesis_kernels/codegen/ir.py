"""The pointwise IR: a program is a DAG of per-element ops over broadcast inputs, plain data.

A :class:`Program` has ``n_inputs`` tensor inputs (their dtypes, shapes and strides come with the buffers
at launch), named float ``scalars`` (runtime kernel arguments: a new value never recompiles), constants,
ops and one or more outputs (each with a dtype, or None for the inputs' promoted dtype). Every value
is computed in the compute dtype (float32; float64 when an operand is float64): a comparison is 1.0 or
0.0, ``cast`` rounds a value through another dtype (torch's ``.to``: truncation for integers), and
``dropout_mask`` is Philox's keep-mask times ``1 / (1 - p)``, drawn as random.py draws it.

Programs are made by :class:`ProgramBuilder`, which shares common subexpressions (one node per distinct
(op, args, attr)), checks arity and attributes as each node is added, and keeps the nodes in
topological order; ``Program.key`` hashes the program, which names its generated kernel.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# op -> arity. "input" / "scalar" / "const" / "dropout_mask" are leaves (their attr says which / what).
OPS: dict[str, int] = {
    "input": 0,
    "scalar": 0,
    "const": 0,
    "dropout_mask": 0,
    "add": 2,
    "sub": 2,
    "mul": 2,
    "div": 2,
    "maximum": 2,
    "minimum": 2,
    "eq": 2,
    "ne": 2,
    "lt": 2,
    "le": 2,
    "gt": 2,
    "ge": 2,
    "where": 3,
    "neg": 1,
    "exp": 1,
    "log": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "tanh": 1,
    "sigmoid": 1,
    "relu": 1,
    "gelu": 1,
    "gelu_tanh": 1,
    "silu": 1,
    "abs": 1,
    "pow": 1,  # attr: the (constant) exponent
    "cast": 1,  # attr: the dtype name the value is rounded through
    # Derivatives the gradient programs use (also usable directly): act'(x), sign(x).
    "gelu_grad": 1,
    "gelu_tanh_grad": 1,
    "silu_grad": 1,
    "sign": 1,
}
UNARY = frozenset(op for op, n in OPS.items() if n == 1 and op not in ("pow", "cast"))
COMPARISONS = frozenset(("eq", "ne", "lt", "le", "gt", "ge"))
CAST_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")


class Node(NamedTuple):
    """One op of a program: ``args`` are indices of earlier nodes; ``attr`` the op's constant (input
    number, scalar number, value, exponent, dtype, or (p, slot) of a dropout mask)."""

    op: str
    args: tuple[int, ...]
    attr: Any = None


@dataclass(frozen=True)
class Program:
    """A pointwise program: inputs, scalars, nodes in topological order, outputs (node, dtype or None)."""

    n_inputs: int
    scalars: tuple[str, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[tuple[int, str | None], ...]
    key: str = field(init=False)
    # Derived programs (gradients), cached per request; not part of equality or the hash.
    _derived: dict = field(init=False, default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        text = repr((self.n_inputs, self.scalars, tuple(tuple(n) for n in self.nodes), self.outputs))
        object.__setattr__(self, "key", hashlib.sha256(text.encode()).hexdigest()[:24])

    @property
    def dropout_slots(self) -> int:
        """How many dropout masks' counters the program spans (slot k draws counters offset + k * numel + i)."""
        found = self._derived.get("dropout_slots")
        if found is None:
            found = self._derived["dropout_slots"] = (
                max((n.attr[1] for n in self.nodes if n.op == "dropout_mask"), default=-1) + 1
            )
        return found

    def gradient(
        self,
        needs_input_grad: tuple[bool, ...],
        has_output_grad: tuple[bool, ...] | None = None,
        saved_outputs: tuple[bool, ...] | None = None,
    ) -> Any:
        """The :class:`~genesis_kernels.codegen.gradient.GradientProgram` of this program (cached): what
        computes the gradients of the inputs in ``needs_input_grad`` from those of the outputs."""
        from .gradient import derive  # gradient.py builds on this module

        has = has_output_grad if has_output_grad is not None else (True,) * len(self.outputs)
        saved = saved_outputs if saved_outputs is not None else (False,) * len(self.outputs)
        key = (tuple(needs_input_grad), tuple(has), tuple(saved))
        found = self._derived.get(key)
        if found is None:
            found = self._derived[key] = derive(self, *key)
        return found

    def __repr__(self) -> str:
        return f"Program(key={self.key}, inputs={self.n_inputs}, nodes={len(self.nodes)}, outputs={len(self.outputs)})"


class Value:
    """A node of a program being built; arithmetic operators add nodes (Python numbers become constants)."""

    __slots__ = ("builder", "index")

    def __init__(self, builder: ProgramBuilder, index: int) -> None:
        self.builder = builder
        self.index = index

    def __add__(self, other: Value | float) -> Value:
        return self.builder.op("add", self, other)

    def __radd__(self, other: float) -> Value:
        return self.builder.op("add", other, self)

    def __sub__(self, other: Value | float) -> Value:
        return self.builder.op("sub", self, other)

    def __rsub__(self, other: float) -> Value:
        return self.builder.op("sub", other, self)

    def __mul__(self, other: Value | float) -> Value:
        return self.builder.op("mul", self, other)

    def __rmul__(self, other: float) -> Value:
        return self.builder.op("mul", other, self)

    def __truediv__(self, other: Value | float) -> Value:
        return self.builder.op("div", self, other)

    def __rtruediv__(self, other: float) -> Value:
        return self.builder.op("div", other, self)

    def __neg__(self) -> Value:
        return self.builder.op("neg", self)

    def __repr__(self) -> str:
        return f"Value({self.index}: {self.builder.nodes[self.index].op})"


class ProgramBuilder:
    """Builds a :class:`Program` node by node, sharing common subexpressions.

    ``b.input()`` / ``b.scalar(name)`` / ``b.const(v)`` make leaves, ``b.op(name, *args)`` (or a method
    named after the op: ``b.gelu(x)``, ``b.where(c, x, y)``, ``b.pow(x, 2.0)``, ``b.cast(x, "bfloat16")``,
    ``b.dropout(x, p)``) adds an op, ``b.output(v, dtype)`` marks an output, ``b.build()`` returns the program.
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._index: dict[Node, int] = {}
        self.n_inputs = 0
        self.scalar_names: list[str] = []
        self.outputs: list[tuple[int, str | None]] = []

    # ---------------------------------------------------------------- leaves
    def input(self) -> Value:
        """The next tensor input (inputs are numbered in the order they are made)."""
        self.n_inputs += 1
        return self._add(Node("input", (), self.n_inputs - 1))

    def scalar(self, name: str) -> Value:
        """A float scalar passed at each launch (a new value never recompiles); names are unique."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"a scalar's name must be an identifier, got {name!r}")
        if name in self.scalar_names:
            raise ValueError(f"scalar {name!r} is already defined")
        self.scalar_names.append(name)
        return self._add(Node("scalar", (), len(self.scalar_names) - 1))

    def const(self, value: float) -> Value:
        """A constant, folded into the generated source."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"a constant must be an int or a float, got {type(value).__name__}")
        return self._add(Node("const", (), float(value)))

    # ---------------------------------------------------------------- ops
    def op(self, name: str, *args: Value | float, attr: Any = None) -> Value:
        """Add op ``name`` on ``args`` (Values of this builder, or numbers made constants)."""
        arity = OPS.get(name)
        if arity is None or name in ("input", "scalar", "const", "dropout_mask"):
            raise ValueError(f"unknown pointwise op {name!r}; expected one of {sorted(set(OPS) - {'input', 'scalar'})}")
        if len(args) != arity:
            raise ValueError(f"pointwise op {name!r} takes {arity} operand(s), got {len(args)}")
        indices = tuple(self._operand(a, name) for a in args)
        if name == "pow":
            if isinstance(attr, bool) or not isinstance(attr, (int, float)):
                raise TypeError(f"pow takes a constant exponent (int or float), got {type(attr).__name__}")
            attr = float(attr)
        elif name == "cast":
            if attr not in CAST_DTYPES:
                raise TypeError(f"cast to unsupported dtype {attr!r}; expected one of {CAST_DTYPES}")
        elif attr is not None:
            raise ValueError(f"pointwise op {name!r} takes no attribute, got {attr!r}")
        return self._add(Node(name, indices, attr))

    def pow(self, x: Value, exponent: float) -> Value:
        """``x ** exponent`` for a constant exponent."""
        return self.op("pow", x, attr=exponent)

    def cast(self, x: Value, dtype: str) -> Value:
        """``x`` rounded through ``dtype`` (torch's ``.to(dtype)``; the result is computed on in float)."""
        return self.op("cast", x, attr=dtype)

    def dropout(self, x: Value, p: float) -> Value:
        """``x * keep / (1 - p)`` with a fresh Philox keep-mask (probability 1 - p) per dropout and call."""
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
        slot = sum(1 for n in self.nodes if n.op == "dropout_mask")  # each dropout draws its own counters
        mask = self._add(Node("dropout_mask", (), (float(p), slot)))
        return self.op("mul", x, mask)

    def __getattr__(self, name: str) -> Any:
        # b.exp(x), b.where(c, a, b), ...: the op of that name
        if name in OPS and name not in ("input", "scalar", "const", "dropout_mask", "pow", "cast"):
            return lambda *args: self.op(name, *args)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def output(self, value: Value, dtype: str | None = None) -> None:
        """Make ``value`` an output, stored in ``dtype`` (None: the inputs' promoted float dtype)."""
        self._operand(value, "output")
        if dtype is not None and dtype not in CAST_DTYPES:
            raise TypeError(f"output dtype {dtype!r} is not supported; expected one of {CAST_DTYPES}")
        self.outputs.append((value.index, dtype))

    def build(self) -> Program:
        """The finished program (nodes that no output reaches are dropped)."""
        if not self.outputs:
            raise ValueError("a pointwise program needs at least one output (ProgramBuilder.output)")
        if self.n_inputs == 0:
            raise ValueError("a pointwise program needs at least one tensor input (ProgramBuilder.input)")
        return prune(self.n_inputs, tuple(self.scalar_names), self.nodes, self.outputs)

    # ---------------------------------------------------------------- helpers
    def _operand(self, a: Value | float, op: str) -> int:
        if isinstance(a, Value):
            if a.builder is not self:
                raise ValueError(f"{op}: operand {a!r} belongs to another ProgramBuilder")
            return a.index
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return self.const(a).index
        raise TypeError(f"{op}: operands must be Values or numbers, got {type(a).__name__}")

    def _add(self, node: Node) -> Value:
        found = self._index.get(node)
        if found is None:
            found = self._index[node] = len(self.nodes)
            self.nodes.append(node)
        return Value(self, found)


def prune(
    n_inputs: int, scalars: tuple[str, ...], nodes: list[Node] | tuple[Node, ...], outputs: list[tuple[int, str | None]]
) -> Program:
    """A Program of the nodes ``outputs`` reach, renumbered in their order (inputs keep their numbers)."""
    live = set()
    stack = [i for i, _ in outputs]
    while stack:
        i = stack.pop()
        if i not in live:
            live.add(i)
            stack.extend(nodes[i].args)
    order = sorted(live)
    renumber = {old: new for new, old in enumerate(order)}
    kept = tuple(Node(nodes[i].op, tuple(renumber[a] for a in nodes[i].args), nodes[i].attr) for i in order)
    return Program(n_inputs, scalars, kept, tuple((renumber[i], dt) for i, dt in outputs))
