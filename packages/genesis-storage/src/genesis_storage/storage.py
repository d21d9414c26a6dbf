"""CUDAStorage: nbytes of device memory from the caching allocator, ordered on the current stream."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._driver import check
from .allocator import allocators, get_allocator
from .allocator.block import Block
from .allocator.caching import CachingAllocator
from .device import _tls, ensure_context, primary_context
from .errors import DeviceMismatchError, DoubleFreeError, StorageClosedError
from .graphs import capturing_graph, stage_host_copy
from .host import HostStorage, pinned_pool
from .stream import Stream, current_stream, current_stream_handle


def _check_host_array(arr: Any, nbytes: int, what: str, writable: bool) -> np.ndarray:
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{what} needs a numpy.ndarray, got {type(arr).__name__}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{what} needs a C-contiguous array (use numpy.ascontiguousarray)")
    if arr.nbytes != nbytes:
        raise ValueError(f"{what}: host array has {arr.nbytes} bytes, storage has {nbytes} bytes")
    if writable and not arr.flags.writeable:
        raise ValueError(f"{what}: destination array is read-only")
    return arr


class CUDAStorage:
    """A device buffer. Freed (back to the cache) when the last reference goes, or by free()."""

    # _streams: Stream objects this memory was recorded on; held so that none of them is destroyed
    # before the free below records its event on it (a destroyed stream's handle is invalid).
    __slots__ = ("__weakref__", "_alloc", "_block", "_owner", "_ptr", "_streams", "device", "nbytes", "value_range")
    _streams: list[Stream]  # set on the first record_stream()
    # What the host knows of the values held, at no device cost: (dtype, lowest, highest, exact) for
    # every element read as dtype, ``exact`` when both bounds are attained; unset (read it with
    # getattr(storage, "value_range", None)) or None when unknown. Set by whoever wrote the values
    # from known data (genesis_ndarray: uploads, arange, integer casts); every write this class makes,
    # and every export of a view (DLPack, the CUDA Array Interface: someone else may write), drops it.
    # Index ops read it to skip a bounds check's stream synchronisation.
    value_range: tuple[str, int, int, bool] | None

    def __init__(self, nbytes: int, device: int | None = None) -> None:
        # Hot path (every op's output): thread-local reads with class defaults, one allocator call.
        if device is None:
            device = _tls.device
        if nbytes > 0:
            a = allocators.get(device)
            if a is None:
                a = get_allocator(device)
            handles = _tls.handles
            block = a.malloc(nbytes, 0 if handles is None else handles.get(device, 0))
            self._ptr: int | None = block.addr
            self._block: Block | None = block
        elif nbytes == 0:
            a = allocators.get(device)
            if a is None:
                a = get_allocator(device)
            self._ptr = 0
            self._block = None
        else:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        self.nbytes = nbytes
        self.device = device
        self._alloc: CachingAllocator | None = a
        self._owner: Any = None

    @classmethod
    def from_pointer(cls, ptr: int, nbytes: int, device: int, owner: Any = None) -> CUDAStorage:
        """Wrap memory owned elsewhere (zero copy). `owner` is kept alive as long as the storage."""
        s = cls.__new__(cls)
        s._ptr = int(ptr)
        s.nbytes = int(nbytes)
        s.device = int(device)
        s._block = None
        s._alloc = None
        s._owner = owner
        return s

    # ------------------------------------------------------------------ lifetime
    @property
    def ptr(self) -> int:
        p = self._ptr
        if p is None:
            raise StorageClosedError(f"use of a freed CUDAStorage ({self.nbytes} bytes, device {self.device})")
        return p

    data_ptr = ptr

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def free(self) -> None:
        """Give the memory back now. A second free() raises DoubleFreeError."""
        if self._ptr is None:
            raise DoubleFreeError(f"CUDAStorage of {self.nbytes} bytes on device {self.device} freed twice")
        block, self._block = self._block, None
        self._ptr = None
        self._owner = None
        if block is not None and self._alloc is not None:
            self._alloc.free(block)

    close = free

    def __del__(self) -> None:
        try:
            block = self._block
        except AttributeError:  # __init__ failed before allocating
            return
        if block is not None:
            try:
                self._alloc.free(block)  # type: ignore[union-attr]
            except Exception:
                pass  # interpreter shutdown, or already freed through the allocator

    def record_stream(self, stream: Stream) -> None:
        """Mark the memory as used on `stream`, so its reuse after free waits for that work."""
        if stream.device != self.device:
            raise DeviceMismatchError(f"stream of device {stream.device} for storage on device {self.device}")
        if self._block is not None and self._alloc is not None:
            self._alloc.record_stream(self._block, stream.handle)
            try:
                self._streams.append(stream)
            except AttributeError:
                self._streams = [stream]

    def __repr__(self) -> str:
        state = "freed" if self._ptr is None else f"ptr={self._ptr:#x}"
        return f"CUDAStorage(nbytes={self.nbytes}, device={self.device}, {state})"

    # ------------------------------------------------------------------ copies
    def _drv_stream(self) -> tuple[Any, Any]:
        drv = ensure_context(self.device)
        return drv, drv.CUstream(current_stream_handle(self.device))

    def copy_from_host(self, src: np.ndarray) -> None:
        """Host -> device. `src` may be reused as soon as this returns."""
        ptr = self.ptr
        _check_host_array(src, self.nbytes, "copy_from_host", writable=False)
        self.value_range = None
        if not self.nbytes:
            return
        drv, stream = self._drv_stream()
        host = src.ctypes.data
        g = capturing_graph(current_stream_handle(self.device))
        if g is not None:
            # A graph captures this stream: the copy becomes a node that reads its source at every
            # replay, and the driver refuses pageable sources then. Stage the bytes in pinned memory
            # the graph owns; nothing to wait for (the copy runs at replay).
            host = stage_host_copy(g, host, self.nbytes)
            check("cuMemcpyHtoDAsync", drv.cuMemcpyHtoDAsync(drv.CUdeviceptr(ptr), host, self.nbytes, stream))
            return
        check("cuMemcpyHtoDAsync", drv.cuMemcpyHtoDAsync(drv.CUdeviceptr(ptr), host, self.nbytes, stream))
        # Pageable sources are staged by the driver before the call returns; pinned ones are read
        # later by DMA, so wait to keep the promise that src is free to change.
        if pinned_pool.contains(host):
            check("cuStreamSynchronize", drv.cuStreamSynchronize(stream))

    def copy_to_host(self, dst: np.ndarray) -> None:
        """Device -> host; the data is in dst when this returns (waits for the current stream)."""
        ptr = self.ptr
        _check_host_array(dst, self.nbytes, "copy_to_host", writable=True)
        if not self.nbytes:
            return
        drv, stream = self._drv_stream()
        check("cuMemcpyDtoHAsync", drv.cuMemcpyDtoHAsync(dst.ctypes.data, drv.CUdeviceptr(ptr), self.nbytes, stream))
        check("cuStreamSynchronize", drv.cuStreamSynchronize(stream))

    def copy_(self, other: CUDAStorage) -> CUDAStorage:
        """Device -> device (also across devices) on the current stream of self's device."""
        if not isinstance(other, CUDAStorage):
            raise TypeError(f"copy_ needs a CUDAStorage, got {type(other).__name__}")
        if other.nbytes != self.nbytes:
            raise ValueError(f"copy_: source has {other.nbytes} bytes, destination has {self.nbytes} bytes")
        dst, src = self.ptr, other.ptr
        self.value_range = getattr(other, "value_range", None)  # the same bytes
        if not self.nbytes:
            return self
        if other.device == self.device:
            drv, stream = self._drv_stream()
            check(
                "cuMemcpyDtoDAsync",
                drv.cuMemcpyDtoDAsync(drv.CUdeviceptr(dst), drv.CUdeviceptr(src), self.nbytes, stream),
            )
            return self
        # Across devices: the copy runs on the destination's stream after the source's pending work,
        # and the source's stream then waits for the copy so the source block is not reused early.
        s_src, s_dst = current_stream(other.device), current_stream(self.device)
        s_dst.wait_stream(s_src)
        drv = ensure_context(self.device)
        check(
            "cuMemcpyPeerAsync",
            drv.cuMemcpyPeerAsync(
                drv.CUdeviceptr(dst),
                primary_context(self.device),
                drv.CUdeviceptr(src),
                primary_context(other.device),
                self.nbytes,
                s_dst._cu_stream(),
            ),
        )
        s_src.wait_stream(s_dst)
        return self

    def fill_(self, byte: int) -> CUDAStorage:
        """Set every byte to `byte` (0..255)."""
        if not 0 <= int(byte) <= 255:
            raise ValueError(f"fill_ takes a byte value 0..255, got {byte}")
        ptr = self.ptr
        self.value_range = None
        if self.nbytes:
            drv, stream = self._drv_stream()
            check("cuMemsetD8Async", drv.cuMemsetD8Async(drv.CUdeviceptr(ptr), int(byte), self.nbytes, stream))
        return self

    def clone(self) -> CUDAStorage:
        return CUDAStorage(self.nbytes, self.device).copy_(self)

    def to(self, device: int) -> CUDAStorage:
        """This storage if already on `device`, else a copy there."""
        if device == self.device:
            return self
        return CUDAStorage(self.nbytes, device).copy_(self)

    # ------------------------------------------------------------------ pinned async copies
    def copy_from_host_async(self, src: HostStorage, stream: Stream | None = None) -> None:
        """Host -> device without waiting. A pinned src stays reserved until the copy has run."""
        self._async_copy(src, stream, to_device=True)

    def copy_to_host_async(self, dst: HostStorage, stream: Stream | None = None) -> None:
        """Device -> host without waiting (for pinned dst); synchronise `stream` before reading dst."""
        self._async_copy(dst, stream, to_device=False)

    def _async_copy(self, host: HostStorage, stream: Stream | None, to_device: bool) -> None:
        if host.nbytes != self.nbytes:
            raise ValueError(f"async copy: host buffer has {host.nbytes} bytes, storage has {self.nbytes} bytes")
        ptr, hptr = self.ptr, host.ptr
        s = stream if stream is not None else current_stream(self.device)
        if s.device != self.device:
            raise DeviceMismatchError(f"stream of device {s.device} for storage on device {self.device}")
        drv = ensure_context(self.device)
        cs = s._cu_stream()
        if to_device:
            self.value_range = None
            check("cuMemcpyHtoDAsync", drv.cuMemcpyHtoDAsync(drv.CUdeviceptr(ptr), hptr, self.nbytes, cs))
        else:
            check("cuMemcpyDtoHAsync", drv.cuMemcpyDtoHAsync(hptr, drv.CUdeviceptr(ptr), self.nbytes, cs))
        g = capturing_graph(s.handle)
        if g is not None:  # captured: the copy runs at each replay; the graph holds the buffer meanwhile
            g.keep_alive(host)
        else:
            host._record(s)
        if self._block is not None and s.handle != self._block.stream:
            self.record_stream(s)


def memcpy_dtoh(dst: np.ndarray, ptr: int, nbytes: int, device: int) -> None:
    """Copy nbytes at device address ptr into the C-contiguous host array dst, waiting for it."""
    drv = ensure_context(device)
    stream = drv.CUstream(current_stream_handle(device))
    check("cuMemcpyDtoHAsync", drv.cuMemcpyDtoHAsync(dst.ctypes.data, drv.CUdeviceptr(ptr), nbytes, stream))
    check("cuStreamSynchronize", drv.cuStreamSynchronize(stream))
