"""Exception types. Every failure names what was asked and what was found."""

from __future__ import annotations


class CUDAError(RuntimeError):
    """A CUDA driver call returned something other than CUDA_SUCCESS."""

    def __init__(self, call: str, result: int, name: str = "") -> None:
        self.call = call
        self.result = int(result)
        self.result_name = name or f"CUresult {int(result)}"
        super().__init__(f"{call} failed: {self.result_name} ({int(result)})")


class CUDAUnavailableError(RuntimeError):
    """No CUDA driver or no CUDA device in this process."""


class OutOfMemoryError(RuntimeError, MemoryError):
    """The caching allocator could not satisfy a request even after releasing its cache. A RuntimeError, as
    torch.cuda.OutOfMemoryError is (``except RuntimeError`` catches it), and a MemoryError."""


class StorageClosedError(RuntimeError):
    """A storage was used after free(), or freed twice."""


class DoubleFreeError(StorageClosedError):
    """A block or storage was freed twice."""


class DeviceMismatchError(ValueError):
    """An operation mixed buffers of different devices where it cannot."""
