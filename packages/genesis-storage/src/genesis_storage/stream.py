"""Streams and events, and the per-device, per-thread current stream.

The current stream of a device is a thread-local setting (default: the legacy default stream,
handle 0). Allocations and copies are ordered on it.
"""

from __future__ import annotations

import threading
from typing import Any

from . import _driver
from ._driver import check
from .device import _tls, check_index, ensure_context, resolve
from .device import device as _device_guard


class Stream:
    """A CUDA stream on one device. `handle` is the raw CUstream as an int (0 = legacy default)."""

    __slots__ = ("__weakref__", "_cu", "_owned", "device", "handle", "priority")

    def __init__(self, device: object = None, priority: int = 0) -> None:
        dev = check_index(resolve(device))
        drv = ensure_context(dev)
        flags = int(drv.CUstream_flags.CU_STREAM_NON_BLOCKING)
        lo, hi = check("cuCtxGetStreamPriorityRange", drv.cuCtxGetStreamPriorityRange())
        # CUDA priorities: lower number = higher priority; clamp like torch does.
        prio = max(min(priority, lo), hi)
        self._cu = check("cuStreamCreateWithPriority", drv.cuStreamCreateWithPriority(flags, prio))
        self.handle = int(self._cu)
        self.device = dev
        self.priority = prio
        self._owned = True

    @classmethod
    def from_handle(cls, handle: int, device: object = None) -> Stream:
        """Wrap a stream created elsewhere (torch, cupy); it is not destroyed by Genesis."""
        s = cls.__new__(cls)
        s.handle = int(handle)
        s.device = resolve(device)
        s.priority = 0
        s._cu = None
        s._owned = False
        return s

    def _cu_stream(self) -> Any:
        if self._cu is None:
            from cuda.bindings import driver as drv

            self._cu = drv.CUstream(self.handle)
        return self._cu

    def synchronize(self) -> None:
        drv = ensure_context(self.device)
        check("cuStreamSynchronize", drv.cuStreamSynchronize(self._cu_stream()))

    def query(self) -> bool:
        """True when all work queued on the stream has finished."""
        drv = ensure_context(self.device)
        (err,) = drv.cuStreamQuery(self._cu_stream())
        if int(err) == 600:  # CUDA_ERROR_NOT_READY
            return False
        check("cuStreamQuery", (err,))
        return True

    def wait_event(self, event: Event) -> None:
        """Make future work on this stream wait for `event` (no host blocking)."""
        if event._cu is None:
            return  # never recorded: nothing to wait for
        drv = ensure_context(self.device)
        check("cuStreamWaitEvent", drv.cuStreamWaitEvent(self._cu_stream(), event._cu, 0))

    def wait_stream(self, other: Stream) -> None:
        """Make future work on this stream wait for the work queued so far on `other`."""
        if other.handle == self.handle and other.device == self.device:
            return
        self.wait_event(other.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (self.handle, self.device) == (other.handle, other.device)

    def __hash__(self) -> int:
        return hash((self.handle, self.device))

    def __repr__(self) -> str:
        return f"Stream(device={self.device}, handle={self.handle:#x})"

    def __del__(self) -> None:
        if getattr(self, "_owned", False) and self._cu is not None:
            if _driver.shutting_down:
                return
            try:
                _driver.driver().cuStreamDestroy(self._cu)
            except Exception:
                pass


class Event:
    """A CUDA event. Created on the device of the stream it is first recorded on."""

    __slots__ = ("__weakref__", "_cu", "device", "enable_timing")

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self.device: int | None = None
        self._cu: Any = None

    def record(self, stream: Stream | None = None) -> None:
        if stream is None:
            stream = current_stream()
        drv = ensure_context(stream.device)
        if self._cu is None:
            flags = 0 if self.enable_timing else int(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)
            self._cu = check("cuEventCreate", drv.cuEventCreate(flags))
            self.device = stream.device
        elif stream.device != self.device:
            raise ValueError(f"event of device {self.device} cannot be recorded on a stream of device {stream.device}")
        check("cuEventRecord", drv.cuEventRecord(self._cu, stream._cu_stream()))

    def synchronize(self) -> None:
        if self._cu is None or self.device is None:  # not recorded yet (record() sets both)
            return
        drv = ensure_context(self.device)
        check("cuEventSynchronize", drv.cuEventSynchronize(self._cu))

    def query(self) -> bool:
        if self._cu is None or self.device is None:  # not recorded yet (record() sets both)
            return True
        drv = ensure_context(self.device)
        (err,) = drv.cuEventQuery(self._cu)
        if int(err) == 600:  # CUDA_ERROR_NOT_READY
            return False
        check("cuEventQuery", (err,))
        return True

    def wait(self, stream: Stream | None = None) -> None:
        (stream if stream is not None else current_stream()).wait_event(self)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and `end` (both recorded, timing enabled)."""
        if self._cu is None or end._cu is None or self.device is None:
            raise RuntimeError("elapsed_time needs both events recorded")
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("elapsed_time needs events created with enable_timing=True")
        drv = ensure_context(self.device)
        return float(check("cuEventElapsedTime", drv.cuEventElapsedTime(self._cu, end._cu)))

    def __del__(self) -> None:
        if getattr(self, "_cu", None) is not None:
            if _driver.shutting_down:
                return
            try:
                _driver.driver().cuEventDestroy(self._cu)
            except Exception:
                pass


_default_streams: dict[int, Stream] = {}


class _CurrentStreams(threading.local):
    """This thread's current Stream per device, beside device.py's raw handles (set together by
    set_stream); a class-level default keeps a read one attribute lookup."""

    streams: dict[int, Stream] | None = None  # device -> current Stream (None: all default streams)


_current = _CurrentStreams()


def default_stream(device: object = None) -> Stream:
    """The legacy default stream (handle 0) of the device."""
    dev = resolve(device)
    s = _default_streams.get(dev)
    if s is None:
        s = _default_streams.setdefault(dev, Stream.from_handle(0, dev))
    return s


def current_stream(device: object = None) -> Stream:
    """This thread's current stream on `device` (default, or a device without an index: the current
    device). Hot: two thread-local reads and a dict lookup."""
    if device is None:
        device = _tls.device
    elif device.__class__ is not int:
        device = resolve(device)
    streams = _current.streams
    if streams is not None:
        s = streams.get(device)
        if s is not None:
            return s
    s = _default_streams.get(device)
    return s if s is not None else default_stream(device)


def current_stream_handle(dev: int) -> int:
    """Fast path for allocation: the raw handle of this thread's current stream on `dev`."""
    handles = _tls.handles
    return 0 if handles is None else handles.get(dev, 0)


def set_stream(s: Stream) -> None:
    """Make `s` the current stream of its device in this thread."""
    streams, handles = _current.streams, _tls.handles
    if streams is None or handles is None:  # both are set together, here
        streams = _current.streams = {}
        handles = _tls.handles = {}
    streams[s.device] = s
    handles[s.device] = s.handle


class stream:
    """`with stream(s):` makes s current on its device (and its device current) inside the block."""

    __slots__ = ("_dev_ctx", "_prev_stream", "s")

    def __init__(self, s: Stream | None) -> None:
        self.s = s
        self._prev_stream: Stream | None = None
        self._dev_ctx: _device_guard | None = None

    def __enter__(self) -> Stream | None:
        if self.s is None:
            return None
        self._dev_ctx = _device_guard(self.s.device)
        self._dev_ctx.__enter__()
        self._prev_stream = current_stream(self.s.device)
        set_stream(self.s)
        return self.s

    def __exit__(self, *exc: object) -> None:
        if self.s is None:
            return
        assert self._prev_stream is not None and self._dev_ctx is not None
        set_stream(self._prev_stream)
        self._dev_ctx.__exit__(*exc)
