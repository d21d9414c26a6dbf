"""The cuda Philox generator: one (seed, offset) per device, eagerly and inside CUDA-graph capture.

Eager: a draw of n numbers takes counters offset .. offset+n-1 (whole Philox counters of four) and
advances the offset; the kernels get (seed, offset) as integers.

Under capture (torch's scheme): a replayed graph must draw fresh numbers each time, so its kernels
cannot hold the seed and offset as constants. Each graph owns a device int64[2] (seed, base offset),
kept alive by the graph; a captured draw gets its offset *within* the graph (fixed at capture) and
the buffer's address, and its kernel adds the two (genesis_kernels.random.philox_state). The
generator does not move during capture. Before each replay the hook writes the generator's current
(seed, offset) into the buffer (a kernel on the current stream, so in order before the graph's launch)
and advances the generator by everything the graph draws: every replay draws new numbers, and eager
draws after a replay do not repeat the replay's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import genesis_kernels as gk
import genesis_storage as gs
from genesis_storage import graphs
from genesis_storage.stream import current_stream_handle

from ...device import Device
from .common import View, index_of

_state: dict[int, list[int]] = {}  # device index -> [seed, offset]
_default_seed = [0]


class Draw(NamedTuple):
    """Where a draw's numbers come from: ``seed`` and ``offset``, or with ``rng_ptr`` (capture) the device
    int64[2] holding (seed, base offset), ``offset`` then being relative to the base."""

    seed: int
    offset: int
    rng_ptr: int = 0


def state_of(device: int) -> list[int]:
    """The mutable [seed, offset] of a cuda device's generator."""
    return _state.setdefault(device, [_default_seed[0], 0])


def reseed(seed: int) -> None:
    """manual_seed: every device's generator restarts at (seed, 0)."""
    _default_seed[0] = seed
    _state.clear()


def _counters(n: int) -> int:
    return (n + 3) // 4 * 4  # Philox yields four numbers per counter; keep draws on whole counters


class _GraphRng:
    """One graph's share of the generator: its (seed, base offset) buffer and what the graph draws."""

    __slots__ = ("buffer", "device", "total")

    def __init__(self, device: int) -> None:
        self.device = device
        self.total = 0
        self.buffer: View | None = None  # made at the graph's first draw: graphs without one pay nothing


def take(device: Device, n: int) -> Draw:
    """Reserve n numbers of ``device``'s stream."""
    index = index_of(device)
    if graphs.is_current_stream_capturing():
        return _take_captured(index, n)
    state = state_of(index)
    seed, offset = state
    state[1] = offset + _counters(n)
    return Draw(seed, offset)


def _take_captured(device: int, n: int) -> Draw:
    graph = graphs.current_capture()
    rng = gk.capture.graph_state(graph, "philox", lambda: _GraphRng(device))
    if rng.device != device:
        raise RuntimeError(f"a CUDA graph captured on cuda:{rng.device} cannot draw random numbers on cuda:{device}")
    if rng.buffer is None:
        rng.buffer = gs.empty((2,), "int64", device)  # from the graph's pool; lives with the graph
    offset = rng.total
    rng.total += _counters(n)
    return Draw(0, offset, int(rng.buffer.ptr))


def snapshot(draw: Draw, device: int) -> tuple[Draw, View | None]:
    """A captured draw as a Draw of offset 0 over a buffer of its own (its absolute (seed, offset), written
    by a kernel at each replay): what a backward recomputing the same numbers needs, even from another
    graph. An eager draw is returned as it is (its integers say everything)."""
    if not draw.rng_ptr:
        return draw, None
    own = gs.empty((2,), "int64", device)
    gk.write_rng_state(own.ptr, 0, draw.offset, src=draw.rng_ptr, stream=current_stream_handle(device))
    return Draw(0, 0, int(own.ptr)), own


class _ReplayHook:
    """Before each replay: fresh (seed, offset) into the graph's buffer, then the generator moves on."""

    def on_replay(self, graph: Any) -> None:
        rng = gk.capture.existing_graph_state(graph, "philox")
        if rng is None or rng.buffer is None:
            return
        state = state_of(rng.device)
        gk.write_rng_state(rng.buffer.ptr, state[0], state[1], stream=current_stream_handle(rng.device))
        state[1] += rng.total


graphs.register_capture_hook(_ReplayHook())


__all__ = ["Draw", "reseed", "snapshot", "state_of", "take"]
