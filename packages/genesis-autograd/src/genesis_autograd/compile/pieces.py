"""Compiling around graph breaks: a captured run split at its host reads, replayed piece by piece.

torch.compile compiles the code before a graph break, runs the breaking op eagerly and compiles the
code after it as another graph. genesis captures ops, not bytecode, so the same shape comes out as a
tree: each :class:`Piece` is the graph of the ops between two host reads (``item``, ``tolist``, and
``bool`` / ``float`` / ``int`` of a tensor, which read through ``item``); a piece that ends in a read
names the tensor read, and its children are the pieces that followed, one per value the read returned
when captured (the value is the guard of the piece after it: data-dependent Python chose what ran
next, so a different value may mean different ops). Every piece is fused on its own, keeping alive the
values that pieces after it read.

Replay runs the root, performs its read on the replayed tensor, and goes on with the child for that
value. A value never seen before is a miss: the call then runs the function again under a capture
(the pieces before the read run twice, which :class:`~.capture.Capture` allows only when they write no
input or parameter in place) and the new pieces are grafted onto the tree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..tensor import Tensor
from .add_norm import fuse_add_norm
from .casts import fold_casts
from .errors import GraphBreak
from .fusion import fuse_pointwise
from .graph import Graph, Op, fill, refs, run_ops
from .recompute import recompute_activations

MISS = object()  # what :meth:`PieceTree.replay` returns where no piece follows the value read


@dataclass(frozen=True)
class Read:
    """A host read ending a piece: ``Tensor.<name>()`` of the value in ``slot``; ``key`` is the value it
    returned when captured (:func:`value_key`)."""

    slot: int
    name: str
    key: Any


@dataclass
class Segment:
    """A piece as the capture records it: its ops, the read that ended it, and the break it stands for."""

    ops: list[Op]
    read: Read
    why: GraphBreak


def value_key(value: Any) -> Any:
    """A hashable key of a host read's value that tells apart what the Python after it can tell apart
    (the type, the sign of zero, NaN)."""
    if isinstance(value, (list, tuple)):
        return tuple(value_key(v) for v in value)
    if isinstance(value, float):
        return (float, "nan" if math.isnan(value) else value.hex())
    return (type(value), value)


@dataclass
class Piece:
    """The ops between two host reads (``raw``, as captured), the graph they become, and what follows."""

    raw: list[Op]
    read: Read | None  # None: the last piece, which returns ``output``
    output: Any = None
    children: dict[Any, Piece] = field(default_factory=dict)
    graph: Graph | None = None

    def needs(self) -> set[int]:
        """Every slot this piece or a piece after it reads."""
        own = {r.slot for op in self.raw for r in refs(op.args) + refs(op.kwargs)} | {r.slot for r in refs(self.output)}
        if self.read is not None:
            own.add(self.read.slot)
        for child in self.children.values():
            own |= child.needs()
        return own

    def walk(self) -> list[Piece]:
        """This piece and every piece after it, depth first."""
        return [self] + [p for child in self.children.values() for p in child.walk()]


def _chain(segments: list[Segment], last: list[Op], output: Any) -> Piece:
    """The pieces of one run as a path: each segment's piece has the next as its only child."""
    piece = Piece(list(last), None, output)
    for seg in reversed(segments):
        piece = Piece(list(seg.ops), seg.read, None, {seg.read.key: piece})
    return piece


class PieceTree:
    """The pieces of a compiled function's runs under one set of guards."""

    def __init__(
        self,
        graph: Graph,
        segments: list[Segment],
        fuse: bool,
        autocast_active: bool,
        autocast: tuple[str, str] | None = None,
    ) -> None:
        self.input_slots = list(graph.input_slots)
        self.constants = dict(graph.constants)
        self.meta = dict(graph.meta)
        self.n_slots = graph.n_slots
        self.fuse = fuse
        self.autocast_active = autocast_active
        self.autocast = autocast  # (device type, dtype name) where one device type's autocast is on
        self.root = _chain(segments, graph.ops, graph.output)
        self.breaks: list[GraphBreak] = []
        self._note(segments)
        self.refresh()

    @property
    def graphs(self) -> list[Graph]:
        """Every piece's graph, depth first."""
        return [p.graph for p in self.root.walk() if p.graph is not None]

    @property
    def leaves(self) -> int:
        """How many paths through the tree have been captured."""
        return sum(1 for p in self.root.walk() if p.read is None)

    def replay(self, inputs: list) -> Any:
        """Run the pieces on ``inputs``: the function's output, or :data:`MISS` where a read returned a
        value no piece follows."""
        env: list = [None] * self.size
        for slot, value in zip(self.input_slots, inputs):
            env[slot] = value
        for slot, value in self.constants.items():
            env[slot] = value
        piece = self.root
        while True:
            assert piece.graph is not None
            run_ops(piece.graph, env)
            if piece.read is None:
                return fill(piece.graph.output, env)
            value = getattr(Tensor, piece.read.name)(env[piece.read.slot])
            child = piece.children.get(value_key(value))
            if child is None:
                return MISS
            piece = child

    def merge(self, graph: Graph, segments: list[Segment]) -> bool:
        """Graft a new run's pieces (its last piece ``graph``, the ``segments`` before it) where its reads
        left the tree; False when its ops before that point differ from the tree's (nothing grafted)."""
        piece = self.root
        for i, seg in enumerate(segments):
            same_read = piece.read is not None and (piece.read.slot, piece.read.name) == (seg.read.slot, seg.read.name)
            if not same_read or [op.label for op in piece.raw] != [op.label for op in seg.ops]:
                return False
            child = piece.children.get(seg.read.key)
            if child is None:
                piece.children[seg.read.key] = _chain(segments[i + 1 :], graph.ops, graph.output)
                self.constants.update(graph.constants)
                self.meta.update(graph.meta)
                self.n_slots = max(self.n_slots, graph.n_slots)
                self._note(segments)
                self.refresh()
                return True
            piece = child
        return False

    def refresh(self) -> None:
        """Rebuild every piece's graph from its ops: fused (when the backend fuses), keeping alive the
        values that the read ending it and the pieces after it need."""
        for piece in self.root.walk():
            keep = {piece.read.slot} if piece.read is not None else set()
            for child in piece.children.values():
                keep |= child.needs()
            graph = Graph(
                self.input_slots, dict(self.constants), list(piece.raw), piece.output, self.n_slots, dict(self.meta),
                keep=keep,
            )  # fmt: skip
            if self.fuse:
                fuse_add_norm(graph, self.autocast)  # first: the add it takes must not join a pointwise chain
                fold_casts(graph)  # before the chains: the cast it drops must not join one
                recompute_activations(graph)  # before the chains: the activation it folds must not join one
                fuse_pointwise(graph, autocast_active=self.autocast_active)
            graph.plan()
            piece.graph = graph
        self.size = max(g.n_slots for g in self.graphs)

    def _note(self, segments: list[Segment]) -> None:
        for seg in segments:
            if all(b != seg.why for b in self.breaks):
                self.breaks.append(seg.why)


__all__ = ["MISS", "Piece", "PieceTree", "Read", "Segment", "value_key"]
