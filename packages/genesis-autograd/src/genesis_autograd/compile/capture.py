"""Capture: record a function's first run, op by op, into a :class:`~.graph.Graph`, results unchanged.

Inside ``with Capture(fullgraph) as cap:`` every ``Function.apply`` (function.py's ``_capture_hook``),
every in-place Tensor method and every tensor made outside an op (traced to its maker by
patches.origin) is recorded with its arguments, tensors named by slot; the ops still run eagerly, so
the call returns what it would without the capture. An op inside another op (a Function's forward, an
in-place method's own ops) is part of the outer one and is not recorded.

A host read of a captured tensor (``item``, ``tolist``, and ``bool`` / ``float`` / ``int`` through
``item``: the Python that follows depends on the value) splits the record: the ops before it are one
piece, the read itself is remembered with the value it returned, and recording goes on into the next
piece (see pieces.py, which replays the pieces and picks the next one by the value read). Other things
cannot be replayed: a read of ``numpy`` / ``__array__`` / ``__dlpack__``, a host read of a tensor the
capture cannot follow, a tensor made where the capture cannot follow it, an in-place write it did not
see (the version counter moved), a change of autocast state inside the function. Each ends the
capture: the call finishes eagerly and ``cap.broken`` says why and where. Under ``fullgraph=True``
every break, host reads included, raises :class:`~.errors.Unsupported` instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from genesis_ndarray import NDArray

from .. import function
from ..autocast import _state as _autocast_state
from ..grad_mode import _state as _grad_state
from ..tensor import Tensor
from .errors import GraphBreak, Unsupported, user_site
from .graph import Graph, Op, Ref
from .patches import Patches, origin
from .pieces import Read, Segment, value_key

_CONVERSIONS = frozenset({"__bool__", "_scalar", "__index__", "__float__", "__int__"})
_RESUMABLE = frozenset({"item", "tolist"})  # reads whose value is a hashable-once-frozen Python object


class _Break(Exception):
    """An argument the graph cannot name (internal: becomes a graph break)."""


def autocast_key() -> tuple:
    """The autocast state a graph depends on: enabled device types and their dtypes."""
    return (_autocast_state.active, tuple(sorted((k, v.name) for k, v in _autocast_state.dtypes.items())))


class Capture:
    """Records one run of a function; a context manager that installs and removes the hooks."""

    def __init__(self, fullgraph: bool = False) -> None:
        self.fullgraph = fullgraph
        self.broken: GraphBreak | None = None
        self.ops: list[Op] = []
        self.input_slots: list[int] = []
        self.constants: dict[int, Any] = {}
        self.meta: dict[int, tuple[tuple[int, ...], Any]] = {}
        self._slots: dict[int, int] = {}  # id(tensor) -> its current slot
        self._tainted: dict[int, str] = {}  # id(tensor) -> why it cannot be replayed
        self._keep: list[Any] = []  # every tensor seen stays alive, so its id stays its own
        self._versions: dict[int, tuple[list[int], int]] = {}  # id(version counter) -> (counter, value seen)
        self._n = 0
        self._depth = 0
        self._thread = threading.get_ident()
        self._autocast = autocast_key()
        self._patches: Patches | None = None
        self.segments: list[Segment] = []  # the pieces ended by a host read, in order
        self._pending: tuple[int, str, GraphBreak] | None = None  # a host read running now: slot, name, why
        self._writes_outside = False  # an op wrote an input or a constant in place (the prefix is not pure)

    # ------------------------------------------------------------------ install / remove
    def __enter__(self) -> Capture:
        if function._capture_hook is not None:
            raise RuntimeError("genesis.compile: a capture is already running (compiled functions do not nest)")
        self._patches = Patches(self)
        function._capture_hook = self.on_apply
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the hooks (idempotent): what runs afterwards is plain eager code."""
        if self._patches is not None:
            function._capture_hook = None
            self._patches.restore()
            self._patches = None

    @property
    def active(self) -> bool:
        """Whether ops are being recorded now."""
        return self._patches is not None

    # ------------------------------------------------------------------ inputs and the result
    def add_inputs(self, tensors: list[Tensor]) -> None:
        """Name the compiled function's tensor inputs (in order) before it runs."""
        for t in tensors:
            self.input_slots.append(self._new_slot(t))

    def finish(self, output: Any) -> Graph | None:
        """The graph of the run's last piece (the whole run when no host read split it), which returned
        ``output``; None after a break (``self.broken`` says why). ``self.segments`` holds the pieces
        before it."""
        if self.broken is None:
            try:
                template = self._template(output)
                for counter, seen in self._versions.values():
                    if counter[0] != seen:
                        raise _Break("an in-place write the capture did not see (a tensor's version moved)")
            except _Break as e:
                self._break(str(e), skip=2)
        self.close()
        if self.broken is not None:
            return None
        graph = Graph(list(self.input_slots), dict(self.constants), list(self.ops), template, self._n, dict(self.meta))
        graph.plan()
        return graph

    # ------------------------------------------------------------------ hooks
    def on_apply(self, cls: Any, args: tuple) -> Any:
        """function.py's hook: ``cls.apply(*args)``, recorded."""
        return self.on_call(cls.apply, args, {}, cls.__name__, cls)

    def on_call(self, fn: Callable[..., Any], args: tuple, kwargs: dict, label: str, cls: type | None) -> Any:
        """Run ``fn(*args, **kwargs)`` with the hooks off, and record it when it is a top-level op."""
        top = self._depth == 0 and self.active and threading.get_ident() == self._thread
        arg_t = kw_t = None
        if top:
            try:
                if autocast_key() != self._autocast:
                    raise _Break("an autocast region entered or left inside the compiled function")
                arg_t, kw_t = self._template(args), self._template(kwargs)
            except _Break as e:
                self._break(f"{e} (an argument of {label})")
                top = False
        outside = [a._version for a in args if top and isinstance(a, Tensor) and self._is_outside(a)]
        before = [(counter, counter[0]) for counter in outside]
        hook, function._capture_hook = function._capture_hook, None
        self._depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            self._depth -= 1
            function._capture_hook = hook if self.active else None
        if top:
            self._check_writes(before)
            self._record(fn, arg_t, kw_t, out, label, cls, args)
        return out

    def _check_writes(self, before: list[tuple[list[int], int]]) -> None:
        if any(counter[0] != seen for counter, seen in before):
            self._writes_outside = True

    def on_birth(self, t: Tensor, frame: FrameType) -> None:
        """A Tensor was made: outside an op, record the call that made it (or why it cannot be replayed)."""
        if self._depth or not self.active or threading.get_ident() != self._thread:
            return
        found = origin(frame)
        if isinstance(found, str):
            self._keep.append(t)
            self._tainted[id(t)] = found
            return
        fn, args, kwargs, label, cls = found
        try:
            arg_t, kw_t = self._template(args), self._template(kwargs)
        except _Break as e:
            self._keep.append(t)
            self._tainted[id(t)] = f"{e} (an argument of {label})"
            return
        self._record(fn, arg_t, kw_t, t, label, cls, args)

    def on_host_read(self, t: Tensor, name: str, frame: FrameType, has_args: bool) -> bool:
        """``item`` / ``tolist`` / ``numpy`` ... is about to run: the Python after it depends on values.
        True when the read splits the record (:meth:`after_host_read` follows with its value); otherwise
        the capture ends here (or, under fullgraph=True, raises)."""
        if self._depth or not self.active or threading.get_ident() != self._thread:
            return False
        caller = frame.f_code.co_name
        if caller in _CONVERSIONS:
            reason = f"data-dependent control flow or conversion (Tensor.{caller} reads the tensor on the host)"
        else:
            reason = f"a host read (Tensor.{name}())"
        slot = self._slots.get(id(t))
        resumable = name in _RESUMABLE and not has_args and slot is not None and not self.fullgraph
        if resumable and self._writes_outside:
            reason += " after an in-place write of an input or a parameter (the pieces before it cannot run twice)"
            resumable = False
        if not resumable:
            self._break(reason)
            return False
        try:
            self._template(t)  # an in-place write of the read tensor that the capture did not see
        except _Break as e:
            self._break(str(e))
            return False
        assert slot is not None
        self._pending = (slot, name, GraphBreak(reason, user_site(3)))
        return self.active

    def after_host_read(self, value: Any) -> None:
        """The read announced by :meth:`on_host_read` returned ``value``: the ops so far become a piece."""
        if self._pending is None or not self.active:
            return
        slot, name, why = self._pending
        self._pending = None
        self.segments.append(Segment(self.ops, Read(slot, name, value_key(value)), why))
        self.ops = []

    # ------------------------------------------------------------------ helpers
    def _break(self, reason: str, skip: int = 3) -> None:
        self.broken = GraphBreak(reason, user_site(skip))
        self.close()
        if self.fullgraph:
            raise Unsupported(f"genesis.compile(fullgraph=True): {self.broken.message()}")

    def _record(
        self, fn: Callable[..., Any], arg_t: Any, kw_t: Any, out: Any, label: str, cls: type | None, args: tuple
    ) -> None:
        for a in args:  # an op may write its inputs (mark_dirty, in-place methods): their versions move with it
            if isinstance(a, Tensor):
                self._remember(a)
        outputs = self._bind(out)
        self.ops.append(Op(fn, arg_t, kw_t, outputs, label, cls, bool(_grad_state.enabled)))

    def _new_slot(self, t: Tensor) -> int:
        slot = self._n
        self._n += 1
        self._slots[id(t)] = slot
        self._keep.append(t)
        self.meta[slot] = (tuple(t.shape), t.dtype)
        self._remember(t)
        return slot

    def _is_outside(self, t: Tensor) -> bool:
        """Whether ``t`` is an input or a constant of the graph (a write to it outlives the call)."""
        slot = self._slots.get(id(t))
        return slot is None or slot in self.constants or slot in self.input_slots

    def _remember(self, t: Tensor) -> None:
        counter = t._version
        self._versions[id(counter)] = (counter, counter[0])

    def _bind(self, out: Any) -> Any:
        if isinstance(out, Tensor):
            return Ref(self._new_slot(out))
        if isinstance(out, (tuple, list)):
            return tuple(self._bind(item) for item in out)
        return None

    def _template(self, x: Any) -> Any:
        if isinstance(x, Tensor):
            slot = self._slots.get(id(x))
            if slot is None:
                reason = self._tainted.get(id(x))
                if reason is not None:
                    raise _Break(reason)
                slot = self._new_slot(x)  # made before the call: a parameter, a buffer, a captured tensor
                self.constants[slot] = x
            else:
                counter, seen = self._versions.get(id(x._version), (x._version, x._version[0]))
                if counter[0] != seen:
                    raise _Break("an in-place write the capture did not see (a tensor's version moved)")
            return Ref(slot)
        cls = x.__class__
        if cls is tuple or cls is list:
            return cls(self._template(item) for item in x)
        if cls is dict:
            return {k: self._template(v) for k, v in x.items()}
        if isinstance(x, NDArray):
            raise _Break("an NDArray argument (its origin is unknown to the capture)")
        return x


def is_capturing() -> bool:
    """Whether a capture is recording ops now (genesis.compiler.is_compiling)."""
    return function._capture_hook is not None
