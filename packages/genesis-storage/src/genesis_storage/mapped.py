"""MappedStorage: host storage backed by a memory-mapped file (numpy.memmap).

Modes: "r" (read only, enforced: the numpy views are not writeable), "r+" (read/write an existing
file), "w+" (create or overwrite). flush() writes dirty pages to the file.
"""

from __future__ import annotations

import os
from typing import Literal

import numpy as np

from .dtypes import NUMPY_DTYPES, itemsize
from .errors import StorageClosedError

MapMode = Literal["r", "r+", "w+"]
_MODES: tuple[MapMode, ...] = ("r", "r+", "w+")


class MappedStorage:
    __slots__ = ("__weakref__", "_map", "mode", "nbytes", "path")

    def __init__(self, path: str | os.PathLike[str], mode: MapMode = "r", nbytes: int | None = None) -> None:
        if mode not in _MODES:
            raise ValueError(f"MappedStorage mode must be one of {_MODES}, got {mode!r}")
        self.path = os.fspath(path)
        self.mode = mode
        if mode == "w+":
            if not nbytes or nbytes <= 0:
                raise ValueError(f"mode 'w+' needs nbytes > 0, got {nbytes}")
        else:
            size = os.path.getsize(self.path)
            if nbytes is None:
                nbytes = size
            elif nbytes > size:
                raise ValueError(f"{self.path} has {size} bytes, fewer than the {nbytes} requested")
        self.nbytes = int(nbytes)
        self._map: np.memmap | None = np.memmap(self.path, dtype=np.uint8, mode=mode, shape=(self.nbytes,))

    @property
    def readonly(self) -> bool:
        return self.mode == "r"

    def _live(self) -> np.memmap:
        if self._map is None:
            raise StorageClosedError(f"MappedStorage {self.path!r} used after close()")
        return self._map

    def numpy(self, dtype: str = "uint8", shape: tuple[int, ...] | None = None) -> np.ndarray:
        """A view on the mapped bytes; read-only in mode 'r'."""
        m = self._live()
        n = self.nbytes // itemsize(dtype)
        arr = m[: n * itemsize(dtype)].view(NUMPY_DTYPES[dtype])
        return arr.reshape(shape) if shape is not None else arr

    def write(self, offset: int, data: bytes | np.ndarray) -> None:
        """Copy bytes into the file at offset (PermissionError in mode 'r')."""
        if self.readonly:
            raise PermissionError(f"MappedStorage {self.path!r} is open read-only (mode 'r')")
        raw = np.frombuffer(
            bytes(data) if not isinstance(data, np.ndarray) else np.ascontiguousarray(data).tobytes(), dtype=np.uint8
        )
        if offset < 0 or offset + raw.size > self.nbytes:
            raise IndexError(f"write of {raw.size} bytes at offset {offset} exceeds {self.nbytes} bytes")
        self._live()[offset : offset + raw.size] = raw

    def flush(self) -> None:
        if self.readonly:
            return
        self._live().flush()

    def close(self) -> None:
        m = self._live()
        if not self.readonly:
            m.flush()
        self._map = None

    def __enter__(self) -> MappedStorage:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._map is not None:
            self.close()

    def __repr__(self) -> str:
        return f"MappedStorage({self.path!r}, mode={self.mode!r}, nbytes={self.nbytes})"
