"""What the launchers do while a CUDA graph is being captured on the current stream.

A captured stream must never be synchronised and nothing may be read back from it: the work is
only recorded, it runs at replay. So every launcher that waits for a result on the host asks
:func:`forbid_readback` first and raises a RuntimeError naming the op, before touching the stream
(the capture stays abortable). Bounds checks take a capture-safe path instead: the kernels mask
out-of-range indices as they always do (memory-safe), and record them in a *graph error flag*,
pinned host memory mapped into the device that lives as long as the graph; a replay hook raises
IndexError at the next ``replay()`` once a replay has met a bad index.

genesis_storage.graphs is looked up through its module on every call (not imported by name), so
that a test can switch a simulated capture on by patching that module.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import numpy as np

from genesis_storage import graphs

from . import runtime as rt
from . import sync_debug

T = TypeVar("T")


def capturing() -> bool:
    """Whether this thread's current stream is being captured into a CUDA graph."""
    return graphs.is_current_stream_capturing()


def forbid_readback(op: str, why: str) -> None:
    """Raise RuntimeError if a capture is under way: ``op`` needs a host read-back (``why``)."""
    if graphs.is_current_stream_capturing():
        raise RuntimeError(f"{op} cannot be captured: it needs a host read-back ({why})")
    sync_debug.check(op)  # eager: the read-back waits for the stream (warn / raise in sync debug mode)


# ----------------------------------------------------------------------------------------------
# Per-graph state, held by the graph itself (keep_alive) and found again by the graph's id.
# ----------------------------------------------------------------------------------------------
_states: dict[tuple[int, str], weakref.ref] = {}
_lock = threading.Lock()


class _Holder:
    """What keep_alive holds: one piece of per-graph state (a weakref target; a dict is not)."""

    __slots__ = ("__weakref__", "value")

    def __init__(self, value: Any) -> None:
        self.value = value


def graph_state(graph: Any, key: str, factory: Callable[[], T]) -> T:
    """The state ``key`` of ``graph`` (made by ``factory`` on first use); it lives exactly as long as
    the graph, which holds it through ``keep_alive``. Only a weak reference stays here."""
    with _lock:
        ref = _states.get((id(graph), key))
        holder = ref() if ref is not None else None
        if holder is None:
            holder = _Holder(factory())
            graph.keep_alive(holder)
            gk = (id(graph), key)
            _states[gk] = weakref.ref(holder, partial(_forget, gk))
        return holder.value


def _forget(key: tuple[int, str], _ref: object) -> None:
    _states.pop(key, None)  # the graph is gone (its id may be reused): so is its state


def existing_graph_state(graph: Any, key: str) -> Any | None:
    """The state ``key`` of ``graph`` if it was ever made, else None (nothing is created)."""
    ref = _states.get((id(graph), key))
    holder = ref() if ref is not None else None
    return None if holder is None else holder.value


# ----------------------------------------------------------------------------------------------
# Graph error flags for the bounds checks of captured kernels
# ----------------------------------------------------------------------------------------------
class ErrorFlag:
    """``slots`` zeroed int64 that a captured kernel writes (device address) and a replay hook reads
    (host address): pinned, device-mapped host memory on the GPU, a numpy array under the interpreter.
    ``report(raw)`` turns a nonzero content into the error to raise (IndexError for bounds checks)."""

    __slots__ = ("_keep", "dev", "host", "report", "slots")

    def __init__(self, slots: int, report: Callable[[np.ndarray], Exception]) -> None:
        self.slots, self.report = slots, report
        if rt.INTERPRET:
            self._keep: Any = np.zeros(slots, dtype=np.int64)
            self.dev = self.host = self._keep.ctypes.data
        else:
            self.host, self.dev = rt.cuda().mapped(8 * slots)
            self._keep = None

    def check(self) -> None:
        """Raise the recorded error (and clear the flag) if a kernel set it."""
        raw = np.frombuffer(ctypes.string_at(self.host, 8 * self.slots), dtype=np.int64).copy()
        if raw.any():
            ctypes.memset(self.host, 0, 8 * self.slots)
            raise self.report(raw)

    def __del__(self) -> None:
        if self._keep is None and self.host:
            try:
                rt.cuda().free_host(self.host)
            except Exception:  # interpreter shutdown: the driver may be gone already
                pass


class _FlagHook:
    """Capture hook: at every replay, raise the IndexError a previous replay of the graph recorded."""

    def on_replay(self, graph: Any) -> None:
        for flag in existing_graph_state(graph, "error_flags") or ():
            flag.check()


def graph_error_flag(slots: int, report: Callable[[np.ndarray], Exception]) -> int:
    """Device address of a fresh error flag owned by the graph being captured (checked at each replay)."""
    graph = graphs.current_capture()
    if graph is None:
        raise RuntimeError("graph_error_flag: no CUDA graph is being captured on this thread")
    _register_hooks()
    flag = ErrorFlag(slots, report)
    flags: list[ErrorFlag] = graph_state(graph, "error_flags", list)
    flags.append(flag)
    return flag.dev


_registered = False


def _register_hooks() -> None:
    global _registered
    if not _registered:
        graphs.register_capture_hook(_FlagHook())
        _registered = True


__all__ = ["ErrorFlag", "capturing", "existing_graph_state", "forbid_readback", "graph_error_flag", "graph_state"]
