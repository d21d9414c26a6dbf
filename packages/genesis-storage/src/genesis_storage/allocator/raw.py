"""Raw (uncached) device allocators: the one narrow interface the caching pool talks to.

`CachingAllocator` never calls the driver itself; it calls a RawAllocator. The CUDA one below
wraps cuMemAlloc/cuMemFree and CUDA events; `FakeRawAllocator` hands out fake addresses from a
fixed capacity so the pool logic (splitting, coalescing, streams, limits, OOM) is tested on CPU.
"""

from __future__ import annotations

from typing import Any, Protocol

from .._driver import check, is_oom
from ..device import check_index, ensure_context


class RawAllocator(Protocol):
    device: int

    def malloc(self, nbytes: int) -> int | None:
        """Return the address of nbytes of fresh device memory, or None when the device is full."""

    def free(self, addr: int, nbytes: int) -> None: ...

    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes of the device."""

    def memset(self, addr: int, nbytes: int, value: int, stream: int) -> None: ...

    def record_event(self, stream: int) -> Any:
        """Record a marker on `stream`; query_event(marker) is True once work before it finished."""

    def query_event(self, event: Any) -> bool: ...

    def synchronize_event(self, event: Any) -> None: ...

    def release_event(self, event: Any) -> None: ...


class CudaRawAllocator:
    """cuMemAlloc / cuMemFree in the device's primary context; events recycled through a free list."""

    def __init__(self, device: int) -> None:
        self.device = check_index(device)
        self._free_events: list[Any] = []

    def _drv(self) -> Any:
        return ensure_context(self.device)

    def malloc(self, nbytes: int) -> int | None:
        drv = self._drv()
        # A new segment may be needed while a CUDA graph captures: in the default ("global") capture
        # mode cuMemAlloc is a prohibited call then, so make it in relaxed mode (as torch does).
        relaxed = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        prev = check("cuThreadExchangeStreamCaptureMode", drv.cuThreadExchangeStreamCaptureMode(relaxed))
        try:
            err, ptr = drv.cuMemAlloc(nbytes)
        finally:
            check("cuThreadExchangeStreamCaptureMode", drv.cuThreadExchangeStreamCaptureMode(prev))
        if err:
            if is_oom(err):
                return None
            check("cuMemAlloc", (err,))
        return int(ptr)

    def free(self, addr: int, nbytes: int) -> None:
        drv = self._drv()
        check("cuMemFree", drv.cuMemFree(drv.CUdeviceptr(addr)))

    def mem_info(self) -> tuple[int, int]:
        drv = self._drv()
        free, total = check("cuMemGetInfo", drv.cuMemGetInfo())
        return int(free), int(total)

    def memset(self, addr: int, nbytes: int, value: int, stream: int) -> None:
        drv = self._drv()
        check("cuMemsetD8Async", drv.cuMemsetD8Async(drv.CUdeviceptr(addr), value, nbytes, drv.CUstream(stream)))

    def record_event(self, stream: int) -> Any:
        drv = self._drv()
        if self._free_events:
            ev = self._free_events.pop()
        else:
            flags = int(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING)
            ev = check("cuEventCreate", drv.cuEventCreate(flags))
        check("cuEventRecord", drv.cuEventRecord(ev, drv.CUstream(stream)))
        return ev

    def query_event(self, event: Any) -> bool:
        drv = self._drv()
        (err,) = drv.cuEventQuery(event)
        if int(err) == 600:  # CUDA_ERROR_NOT_READY
            return False
        check("cuEventQuery", (err,))
        return True

    def synchronize_event(self, event: Any) -> None:
        drv = self._drv()
        check("cuEventSynchronize", drv.cuEventSynchronize(event))

    def release_event(self, event: Any) -> None:
        self._free_events.append(event)


class FakeEvent:
    __slots__ = ("done", "stream")

    def __init__(self, stream: int) -> None:
        self.stream = stream
        self.done = False


class FakeRawAllocator:
    """A pretend device of `capacity` bytes for CPU tests.

    Addresses come from a bump pointer and are never reused, so a test can tell segments apart.
    `fail_next` makes the next n mallocs fail as if the device were full. Events stay pending until
    `complete()` is called, which is how tests model work still running on a stream.
    `memory=True` keeps a bytearray per segment so memset (debug poisoning) can be checked.
    """

    def __init__(self, capacity: int = 1 << 30, device: int = 0, memory: bool = False, base: int = 1 << 40) -> None:
        self.device = device
        self.capacity = capacity
        self.used = 0
        self.live: dict[int, int] = {}
        self.n_malloc = 0
        self.n_free = 0
        self.fail_next = 0
        self.events: list[FakeEvent] = []
        self._next = base
        self._memory: dict[int, bytearray] | None = {} if memory else None

    def malloc(self, nbytes: int) -> int | None:
        if self.fail_next > 0:
            self.fail_next -= 1
            return None
        if self.used + nbytes > self.capacity:
            return None
        addr = self._next
        self._next += (nbytes + (2 << 20) - 1) // (2 << 20) * (2 << 20) + (2 << 20)  # gap between segments
        self.live[addr] = nbytes
        self.used += nbytes
        self.n_malloc += 1
        if self._memory is not None:
            self._memory[addr] = bytearray(nbytes)
        return addr

    def free(self, addr: int, nbytes: int) -> None:
        size = self.live.pop(addr)  # KeyError = pool freed something it never got
        assert size == nbytes, (size, nbytes)
        self.used -= size
        self.n_free += 1
        if self._memory is not None:
            del self._memory[addr]

    def mem_info(self) -> tuple[int, int]:
        return self.capacity - self.used, self.capacity

    def memset(self, addr: int, nbytes: int, value: int, stream: int) -> None:
        if self._memory is None:
            return
        for base, buf in self._memory.items():
            if base <= addr and addr + nbytes <= base + len(buf):
                buf[addr - base : addr - base + nbytes] = bytes([value]) * nbytes
                return
        raise AssertionError(f"memset outside any segment: {addr:#x}+{nbytes}")

    def read(self, addr: int, nbytes: int) -> bytes:
        assert self._memory is not None
        for base, buf in self._memory.items():
            if base <= addr < base + len(buf):
                return bytes(buf[addr - base : addr - base + nbytes])
        raise AssertionError(f"read outside any segment: {addr:#x}")

    def write(self, addr: int, data: bytes) -> None:
        assert self._memory is not None
        for base, buf in self._memory.items():
            if base <= addr < base + len(buf):
                buf[addr - base : addr - base + len(data)] = data
                return
        raise AssertionError(f"write outside any segment: {addr:#x}")

    def record_event(self, stream: int) -> FakeEvent:
        ev = FakeEvent(stream)
        self.events.append(ev)
        return ev

    def query_event(self, event: FakeEvent) -> bool:
        return event.done

    def synchronize_event(self, event: FakeEvent) -> None:
        event.done = True  # "waiting" finishes the work

    def release_event(self, event: FakeEvent) -> None:
        pass

    def complete(self, stream: int | None = None) -> None:
        """Mark work recorded so far (on `stream`, or on all streams) as finished."""
        for ev in self.events:
            if stream is None or ev.stream == stream:
                ev.done = True
        self.events = [e for e in self.events if not e.done]
