"""CUDA graphs: record the work queued on a stream once, replay all of it with one launch.

torch.cuda's API over the driver's stream capture: `CUDAGraph` (capture_begin / capture_end /
replay / reset / pool), the `graph` context manager, `graph_pool_handle()`, and the state the ops
consult (`is_current_stream_capturing()`, `current_capture()`).

While a stream captures, nothing runs: kernels, copies and memsets become nodes of a graph, and a
replay launches them again with the same arguments, i.e. the same device addresses. So:
- allocations of the capturing stream come from the graph's private pool (allocator/private.py),
  which lives as long as a graph that replays it;
- what a captured node reads from host memory (a pinned upload table) or from a buffer nothing
  else references must be held by the graph: `keep_alive(obj)`;
- host synchronisation is illegal during capture (the work has not run). Ops check
  `is_current_stream_capturing()` and raise before touching the stream; a driver call that slips
  through invalidates the capture, and capture_end() then raises. Either way the capture is ended,
  its pool reference dropped and the process stays usable: the next capture works.
Hooks (`register_capture_hook`) let layers above attach per-graph state: the RNG gives each graph a
device-side (seed, offset) that `on_replay` advances, so every replay draws fresh numbers.
"""

from __future__ import annotations

import ctypes
import gc
from typing import Any, Protocol

from . import _driver
from ._driver import check
from .allocator import empty_cache, get_allocator
from .allocator.private import PoolId, next_id
from .device import _tls, current_device, ensure_context, is_available, unavailable_reason
from .device import synchronize as _synchronize
from .errors import CUDAError
from .stream import Stream, current_stream
from .stream import stream as _stream_guard

__all__ = [
    "CUDAGraph",
    "CaptureHook",
    "current_capture",
    "graph",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "register_capture_hook",
]

# stream handle -> the graph capturing on it. Process-wide: capture belongs to a stream, and any
# thread issuing work on that stream records into the graph. Read without a lock (GIL-atomic).
_capturing: dict[int, CUDAGraph] = {}
_hooks: list[CaptureHook] = []
# Objects of reset graphs whose last replays may still run; dropped at the next safe point.
_retired: list[Any] = []

_MODES = ("global", "thread_local", "relaxed")
_DEFAULT_STREAM_MESSAGE = (
    "CUDA graphs must be captured on a non-default stream. (However, after capture, it's ok to replay them on the "
    "default stream.) Use `with genesis.cuda.graph(g):` (it captures on a side stream) or `with "
    "genesis.cuda.stream(s):` around capture_begin()/capture_end()."
)


class CaptureHook(Protocol):
    """What register_capture_hook takes: any object with some of these methods (all optional)."""

    def on_capture_begin(self, graph: CUDAGraph) -> None:
        """Before the stream starts capturing (the hook may still allocate, upload, synchronise)."""

    def on_capture_end(self, graph: CUDAGraph) -> None:
        """After a successful capture, once the graph is instantiated."""

    def on_capture_abort(self, graph: CUDAGraph) -> None:
        """After a failed or abandoned capture (undo what on_capture_begin set up)."""

    def on_replay(self, graph: CUDAGraph) -> None:
        """Before each launch, on the host; work it queues on the current stream precedes the replay."""


def register_capture_hook(hook: Any) -> None:
    """Call `hook`'s on_capture_begin / on_capture_end / on_capture_abort / on_replay (those it has)
    for every graph of the process, in registration order."""
    if not any(hasattr(hook, m) for m in ("on_capture_begin", "on_capture_end", "on_capture_abort", "on_replay")):
        raise TypeError(f"a capture hook needs at least one of the on_* methods, got {type(hook).__name__}")
    _hooks.append(hook)


def _call_hooks(method: str, g: CUDAGraph) -> None:
    for hook in _hooks:
        fn = getattr(hook, method, None)
        if fn is not None:
            fn(g)


def is_current_stream_capturing() -> bool:
    """True while this thread's current stream (on the current device) is being captured.

    Hot (every op that could read back to the host asks): a dict test, and two thread-local reads
    only while some capture is underway."""
    if not _capturing:
        return False
    handles = _tls.handles
    return handles is not None and handles.get(_tls.device, 0) in _capturing


def current_capture() -> CUDAGraph | None:
    """The graph capturing on this thread's current stream, or None."""
    if not _capturing:
        return None
    handles = _tls.handles
    return None if handles is None else _capturing.get(handles.get(_tls.device, 0))


def capturing_graph(stream_handle: int) -> CUDAGraph | None:
    """The graph capturing on the stream with this raw handle, or None (a dict read)."""
    return _capturing.get(stream_handle) if _capturing else None


class _CapturePinned:
    """Page-locked host memory owned by one graph: the source of a host -> device copy captured into it.

    The driver refuses copies from pageable memory during capture, and a captured copy node reads its
    source at every replay, so the bytes must stay put as long as the graph lives. Allocated outside
    the pinned pool: that pool queries events, which a capture forbids."""

    __slots__ = ("nbytes", "ptr")

    def __init__(self, nbytes: int) -> None:
        drv = _driver.driver()
        relaxed = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        prev = check("cuThreadExchangeStreamCaptureMode", drv.cuThreadExchangeStreamCaptureMode(relaxed))
        try:  # (allocating is a "potentially unsafe" call, refused in global capture mode)
            self.ptr = int(check("cuMemHostAlloc", drv.cuMemHostAlloc(max(nbytes, 1), drv.CU_MEMHOSTALLOC_PORTABLE)))
        finally:
            check("cuThreadExchangeStreamCaptureMode", drv.cuThreadExchangeStreamCaptureMode(prev))
        self.nbytes = nbytes

    def __del__(self) -> None:
        # Dropped by CUDAGraph.reset only when no capture is underway and the device is idle.
        if getattr(self, "ptr", None) is not None and not _driver.shutting_down:
            try:
                _driver.driver().cuMemFreeHost(self.ptr)
            except Exception:
                pass


def stage_host_copy(g: CUDAGraph, src_ptr: int, nbytes: int) -> int:
    """Copy nbytes at host address src_ptr into pinned memory that `g` keeps alive; return its address
    (what a captured host -> device copy reads from)."""
    buf = _CapturePinned(nbytes)
    ctypes.memmove(buf.ptr, src_ptr, nbytes)
    g.keep_alive(buf)
    return buf.ptr


def graph_pool_handle() -> PoolId:
    """An opaque memory-pool id: pass it as `pool=` to several captures so their graphs share one
    private pool (safe when they replay in the order they were captured, as torch documents)."""
    return (0, next_id())


def _safe_to_synchronize() -> bool:
    return not _capturing and not _driver.shutting_down


class CUDAGraph:
    """A CUDA graph: capture the work of one stream, then replay it with one launch (torch.cuda.CUDAGraph).

    Capture on a side stream (the `graph` context manager does it for you); the legacy default
    stream cannot capture. A graph holds its private memory pool and every object given to
    keep_alive() until reset() or deletion.
    """

    def __init__(self, keep_graph: bool = False) -> None:
        self._id = next_id()
        self._keep_graph = keep_graph or False
        self._debug = False
        self._graph: Any = None  # CUgraph, kept only with keep_graph / debug mode
        self._exec: Any = None  # CUgraphExec
        self._pool: PoolId | None = None
        self._device = 0
        self._stream: Stream | None = None  # the capturing stream while a capture is underway
        self._kept: list[Any] = []
        self._launched = False

    # ------------------------------------------------------------------ capture
    def capture_begin(self, pool: PoolId | None = None, capture_error_mode: str = "global") -> None:
        """Start capturing this thread's current stream. `pool`: share another graph's private pool
        (`other.pool()` or graph_pool_handle()). `capture_error_mode`: which CUDA calls of other
        threads / streams are refused during the capture ("global", "thread_local", "relaxed")."""
        if capture_error_mode not in _MODES:
            raise ValueError(f"capture_error_mode must be one of {_MODES}, got {capture_error_mode!r}")
        if self._exec is not None or self._stream is not None:
            raise RuntimeError(
                "This CUDAGraph instance already owns a captured graph. To capture a new graph, create a new "
                "instance (or reset() this one)."
            )
        if pool is not None and not (
            isinstance(pool, tuple) and len(pool) == 2 and all(isinstance(x, int) for x in pool)
        ):
            raise TypeError(f"pool must be a handle from graph_pool_handle() or CUDAGraph.pool(), got {pool!r}")
        if not is_available():
            raise RuntimeError(f"CUDA graph capture needs a CUDA device: {unavailable_reason()}")
        dev = current_device()
        s = current_stream(dev)
        if s.handle == 0:
            raise RuntimeError(_DEFAULT_STREAM_MESSAGE)
        if s.handle in _capturing:
            raise RuntimeError(f"{s} is already capturing a CUDA graph; end that capture first")
        drv = ensure_context(dev)
        pool_id = pool if pool is not None else (self._id, 0)
        _call_hooks("on_capture_begin", self)
        allocator = get_allocator(dev)
        allocator.begin_allocate_to_pool(pool_id, s.handle)
        mode = getattr(drv.CUstreamCaptureMode, f"CU_STREAM_CAPTURE_MODE_{capture_error_mode.upper()}")
        try:
            check("cuStreamBeginCapture", drv.cuStreamBeginCapture(s._cu_stream(), mode))
        except BaseException:
            allocator.end_allocate_to_pool(s.handle)
            allocator.release_pool(pool_id)
            _call_hooks("on_capture_abort", self)
            raise
        self._device, self._stream, self._pool = dev, s, pool_id
        _capturing[s.handle] = self

    def capture_end(self) -> None:
        """End the capture and instantiate the graph. If the capture failed (an operation that cannot
        be captured ran on the stream), everything is cleaned up and RuntimeError says so."""
        s = self._stream
        if s is None:
            raise RuntimeError("capture_end() called without a matching capture_begin()")
        drv = ensure_context(self._device)
        err, cu_graph = drv.cuStreamEndCapture(s._cu_stream())
        self._stop_capturing(s)
        if err:
            self._discard(drv, cu_graph)
            name = _driver._error_name(drv, err)
            raise RuntimeError(
                f"CUDA graph capture failed ({name} from cuStreamEndCapture): an operation that cannot be captured "
                "ran while the stream was capturing (a host synchronisation or read-back, a copy from pageable "
                "host memory, or work on the legacy default stream in global mode). The capture was discarded; "
                "the next capture can start."
            ) from CUDAError("cuStreamEndCapture", err, name)
        try:
            self._exec = check("cuGraphInstantiate", drv.cuGraphInstantiate(cu_graph, 0))
        except BaseException:
            self._discard(drv, cu_graph)
            raise
        if self._keep_graph or self._debug:
            self._graph = cu_graph
        else:
            check("cuGraphDestroy", drv.cuGraphDestroy(cu_graph))
        _call_hooks("on_capture_end", self)

    def _abandon_capture(self) -> None:
        """End a capture and throw it away (after an error inside it); never raises for the capture's
        own failure. The pool reference is dropped and the stream is usable again."""
        s = self._stream
        if s is None:
            return
        drv = ensure_context(self._device)
        err, cu_graph = drv.cuStreamEndCapture(s._cu_stream())
        self._stop_capturing(s)
        self._discard(drv, None if err else cu_graph)

    def _stop_capturing(self, s: Stream) -> None:
        _capturing.pop(s.handle, None)
        self._stream = None
        get_allocator(self._device).end_allocate_to_pool(s.handle)

    def _discard(self, drv: Any, cu_graph: Any) -> None:
        """A failed capture: drop the half-made graph, the pool reference and the kept objects."""
        if cu_graph is not None and int(cu_graph):
            drv.cuGraphDestroy(cu_graph)  # best effort: the capture's own error is the one to report
        self._release_pool()
        self._retire_kept()
        _call_hooks("on_capture_abort", self)

    def _release_pool(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            get_allocator(self._device).release_pool(pool)

    # ------------------------------------------------------------------ replay
    def replay(self) -> None:
        """Launch the captured work on the current stream of the graph's device."""
        ex = self._exec
        if ex is None:
            raise RuntimeError("Called CUDAGraph.replay() without a preceding successful capture.")
        if _hooks:
            _call_hooks("on_replay", self)
        drv = ensure_context(self._device)
        handles = _tls.handles
        handle = 0 if handles is None else handles.get(self._device, 0)
        check("cuGraphLaunch", drv.cuGraphLaunch(ex, drv.CUstream(handle)))
        self._launched = True

    # ------------------------------------------------------------------ lifetime
    def reset(self) -> None:
        """Free the graph: its executable, its hold on the private pool (whose free segments become
        releasable once no graph holds it) and the objects it kept alive."""
        if self._stream is not None:
            raise RuntimeError("reset() during a capture: end it with capture_end() first")
        if self._exec is None and self._pool is None and not self._kept:
            return
        drv = ensure_context(self._device)
        if self._exec is not None:
            ex, self._exec = self._exec, None
            check("cuGraphExecDestroy", drv.cuGraphExecDestroy(ex))
        if self._graph is not None:
            g, self._graph = self._graph, None
            check("cuGraphDestroy", drv.cuGraphDestroy(g))
        self._release_pool()
        self._retire_kept()

    def _retire_kept(self) -> None:
        # A replay may still read what the graph kept (a pinned table), and freeing pinned memory
        # synchronises: drop the objects once the device is idle, never during a capture (a
        # synchronisation would invalidate it); until then they wait in _retired.
        _retired.extend(self._kept)
        self._kept = []
        self._launched = False
        if _retired and _safe_to_synchronize():
            _synchronize(self._device)
            _retired.clear()

    def __del__(self) -> None:
        if _driver.shutting_down:
            return
        try:
            if self._stream is not None:
                self._abandon_capture()
            self.reset()
        except Exception:
            pass

    def keep_alive(self, obj: Any) -> None:
        """Hold `obj` as long as the graph lives: a pinned host buffer a captured copy reads, a device
        buffer a captured kernel reads that nothing else references."""
        self._kept.append(obj)

    def pool(self) -> PoolId:
        """The id of this graph's private memory pool, to share it: `other.capture_begin(pool=g.pool())`."""
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph.pool() without a preceding successful capture.")
        return self._pool

    # ------------------------------------------------------------------ debugging
    def enable_debug_mode(self) -> None:
        """Keep the captured (not only the instantiated) graph, for debug_dump()."""
        self._debug = True

    def debug_dump(self, debug_path: str) -> None:
        """Write the captured graph as a Graphviz DOT file (needs enable_debug_mode() before capture)."""
        if self._graph is None:
            raise RuntimeError(
                "debug_dump() needs the captured graph: call enable_debug_mode() (or CUDAGraph(keep_graph=True)) "
                "before the capture"
            )
        drv = ensure_context(self._device)
        flags = int(drv.CUgraphDebugDot_flags.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE)
        check("cuGraphDebugDotPrint", drv.cuGraphDebugDotPrint(self._graph, str(debug_path).encode(), flags))

    def __repr__(self) -> str:
        state = "capturing" if self._stream is not None else "captured" if self._exec is not None else "empty"
        return f"CUDAGraph(id={self._id}, {state}, pool={self._pool})"


class graph:
    """`with graph(g):` captures the block into CUDAGraph `g` (torch.cuda.graph).

    As torch does: synchronises the device, collects garbage and empties the cache first, then
    captures on `stream` (default: one side stream shared by all captures) with `pool` and
    `capture_error_mode` as in CUDAGraph.capture_begin. If the block raises, the capture is thrown
    away and the block's exception propagates; the process stays usable.
    """

    _capture_streams: dict[int, Stream] = {}  # device -> the side stream captures use by default

    def __init__(
        self,
        cuda_graph: CUDAGraph,
        pool: PoolId | None = None,
        stream: Stream | None = None,
        capture_error_mode: str = "global",
    ) -> None:
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph() needs a CUDAGraph, got {type(cuda_graph).__name__}")
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_ctx: _stream_guard | None = None

    def __enter__(self) -> None:
        if not is_available():
            raise RuntimeError(f"CUDA graph capture needs a CUDA device: {unavailable_reason()}")
        s = self.capture_stream
        if s is None:
            dev = current_device()
            s = graph._capture_streams.get(dev)
            if s is None:
                s = graph._capture_streams[dev] = Stream(dev)
        # Work queued before the block must not end up in (or race with) the capture.
        _synchronize()
        gc.collect()
        empty_cache()
        self._stream_ctx = _stream_guard(s)
        self._stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self._stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._stream_ctx is not None
        try:
            if exc_type is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph._abandon_capture()
        finally:
            self._stream_ctx.__exit__(None, None, None)
