"""A CUDA-graph capture simulated on the calling thread, for the tests of what launchers do under capture
(refuse host reads, register replay hooks, keep buffers alive) without a GPU."""

from __future__ import annotations

import pytest

import genesis_kernels as gk
from genesis_storage import graphs


class FakeGraph:
    """What the launchers use of a CUDAGraph: keep_alive."""

    def __init__(self) -> None:
        self.kept: list = []

    def keep_alive(self, obj) -> None:
        self.kept.append(obj)


def simulate_capture(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeGraph, list]:
    """Make this thread look as if it captured a graph: (the graph, the capture hooks registered meanwhile)."""
    graph = FakeGraph()
    hooks: list = []
    monkeypatch.setattr(graphs, "is_current_stream_capturing", lambda: True)
    monkeypatch.setattr(graphs, "current_capture", lambda: graph)
    monkeypatch.setattr(graphs, "register_capture_hook", hooks.append)
    monkeypatch.setattr(gk.capture, "_registered", False)
    return graph, hooks
