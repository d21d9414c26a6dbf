"""SharedStorage: host memory shared across processes by name (multiprocessing.shared_memory).

The creating process owns the segment: close() detaches, unlink() removes the name. Segments this
process created and did not unlink are unlinked at normal exit, so none leak.
"""

from __future__ import annotations

import atexit
import sys
import threading
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from .dtypes import NUMPY_DTYPES, itemsize
from .errors import StorageClosedError

_owned: dict[str, shared_memory.SharedMemory] = {}  # created here, not yet unlinked
_owned_lock = threading.Lock()


def _cleanup() -> None:
    with _owned_lock:
        items = list(_owned.items())
        _owned.clear()
    for _, shm in items:
        try:
            shm.close()
        except Exception:
            pass
        try:
            shm.unlink()
        except Exception:
            pass


atexit.register(_cleanup)


class SharedStorage:
    """nbytes of shared host memory. `SharedStorage(n)` creates; `SharedStorage.attach(name)` opens."""

    __slots__ = ("__weakref__", "_created", "_shm", "_unlinked", "name", "nbytes")

    def __init__(self, nbytes: int, name: str | None = None) -> None:
        if nbytes <= 0:
            raise ValueError(f"SharedStorage needs nbytes > 0, got {nbytes}")
        self._shm: shared_memory.SharedMemory | None = shared_memory.SharedMemory(name=name, create=True, size=nbytes)
        self.name = self._shm.name
        self.nbytes = nbytes
        self._created = True
        self._unlinked = False
        with _owned_lock:
            _owned[self.name] = self._shm

    @classmethod
    def attach(cls, name: str) -> SharedStorage:
        """Open a segment another process created. Closing it here never removes it."""
        s = cls.__new__(cls)
        if sys.version_info >= (3, 13):
            shm = shared_memory.SharedMemory(name=name, track=False)  # type: ignore[call-arg]
        else:
            shm = shared_memory.SharedMemory(name=name)
            # Before 3.13 attaching registers the segment with this process's resource tracker,
            # which would unlink it when we exit: the creator owns it, so unregister.
            try:
                resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
            except Exception:
                pass
        s._shm = shm
        s.name = name
        s.nbytes = shm.size
        s._created = False
        s._unlinked = False
        return s

    @property
    def closed(self) -> bool:
        return self._shm is None

    def _live(self) -> shared_memory.SharedMemory:
        if self._shm is None:
            raise StorageClosedError(f"SharedStorage {self.name!r} used after close()")
        return self._shm

    def numpy(self, dtype: str = "uint8", shape: tuple[int, ...] | None = None) -> np.ndarray:
        """A numpy view on the shared bytes (valid until close())."""
        buf = self._live().buf
        if buf is None:  # typeshed: None once the mapping is closed, which _live() has ruled out
            raise StorageClosedError(f"SharedStorage {self.name!r} used after close()")
        n = self.nbytes // itemsize(dtype)
        arr = np.frombuffer(buf, dtype=NUMPY_DTYPES[dtype], count=n)
        return arr.reshape(shape) if shape is not None else arr

    def close(self) -> None:
        """Detach this process. Numpy views must be dropped first (the mapping goes away)."""
        shm = self._live()
        self._shm = None
        shm.close()

    def unlink(self) -> None:
        """Remove the segment's name (the creator's job); attached processes keep their mapping."""
        if self._unlinked:
            raise StorageClosedError(f"SharedStorage {self.name!r} unlinked twice")
        self._unlinked = True
        with _owned_lock:
            _owned.pop(self.name, None)
        shared_memory.SharedMemory.unlink(self._shm) if self._shm is not None else _unlink_by_name(self.name)

    def __enter__(self) -> SharedStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._shm is not None:
            self.close()
        if self._created and not self._unlinked:
            self.unlink()

    def __repr__(self) -> str:
        return f"SharedStorage(name={self.name!r}, nbytes={self.nbytes}, closed={self.closed})"


def _unlink_by_name(name: str) -> None:
    shm = shared_memory.SharedMemory(name=name)
    shm.close()
    shm.unlink()
