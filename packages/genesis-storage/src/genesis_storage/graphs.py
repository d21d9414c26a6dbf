"""CUDA-graph capture state: a minimal stand-in with the interface of /work/notes/graphs.md.

The "graphs" helper owns the real module (stream capture, private pools, replay); this stub only
carries the names the ops below rely on, so they can be written and tested now: a thread-local
capturing flag (always False here: nothing captures), the capture hooks, and ``keep_alive``.
The lead replaces this file with the real one at merge.
"""

from __future__ import annotations

import threading
from typing import Any

_local = threading.local()  # .graph: the CUDAGraph capturing on this thread's current stream, or None
_hooks: list[Any] = []


class CUDAGraph:
    """A captured graph (stub): only ``keep_alive``; the real class captures and replays."""

    def __init__(self) -> None:
        self._kept: list[Any] = []

    def keep_alive(self, obj: Any) -> None:
        """Hold ``obj`` as long as the graph lives (a buffer a captured kernel or copy reads)."""
        self._kept.append(obj)


def is_current_stream_capturing() -> bool:
    """True while this thread's current stream is being captured (a thread-local read)."""
    return getattr(_local, "graph", None) is not None


def current_capture() -> CUDAGraph | None:
    """The graph being captured on this thread's current stream, or None."""
    return getattr(_local, "graph", None)


def register_capture_hook(hook: Any) -> None:
    """Call ``hook.on_capture_begin(graph)`` / ``on_capture_end(graph)`` / ``on_replay(graph)`` (each
    optional) for every graph; on_replay runs before the graph's launch."""
    _hooks.append(hook)


__all__ = ["CUDAGraph", "current_capture", "is_current_stream_capturing", "register_capture_hook"]
