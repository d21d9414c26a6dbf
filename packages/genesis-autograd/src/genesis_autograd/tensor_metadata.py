"""A Tensor's metadata: shape, dtype, device, strides, sizes, and its conversions to Python scalars.

Split from tensor.py, which keeps identity, gradient bookkeeping, hooks and the in-place protocol;
every method here reads ``self.data`` (the NDArray) and records nothing.
"""

from __future__ import annotations

from typing import overload

from genesis_ndarray import Device, DType

from .memory_format import is_in_format
from .printing import tensor_repr
from .size import Size
from .tensor_base import TensorBase


class MetadataMixin(TensorBase):
    """Shape, dtype, device, strides and the scalar conversions of a Tensor."""

    __slots__ = ()

    @property
    def shape(self) -> Size:
        """The size of each dimension, as a ``genesis.Size`` (``size()`` without an argument)."""
        return Size(self.data.shape)

    @property
    def dtype(self) -> DType:
        """The element type (``genesis.float32``, ``genesis.int64``, ...)."""
        return self.data.dtype

    @property
    def device(self) -> Device:
        """The device the values live on (``device(type='cpu')``, ``device(type='cuda', index=0)``)."""
        return self.data.device

    @property
    def ndim(self) -> int:
        """The number of dimensions; same as ``dim()``."""
        return self.data.ndim

    @property
    def strides(self) -> tuple[int, ...]:
        """The step in elements between neighbours along each dimension; same as ``stride()``."""
        return self.data.strides

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA device."""
        return self.data.device.type == "cuda"

    def dim(self) -> int:
        """The number of dimensions."""
        return self.data.ndim

    @overload
    def size(self, dim: None = None) -> Size: ...
    @overload
    def size(self, dim: int) -> int: ...

    def size(self, dim: int | None = None) -> Size | int:
        """The shape as a ``genesis.Size``, or with ``dim`` the size of that dimension as an int."""
        return Size(self.data.shape) if dim is None else self.data.size(dim)

    def numel(self) -> int:
        """The number of elements (the product of the sizes)."""
        return self.data.numel()

    @overload
    def stride(self, dim: None = None) -> tuple[int, ...]: ...
    @overload
    def stride(self, dim: int) -> int: ...

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        """The strides (in elements) as a tuple, or with ``dim`` the stride of that dimension as an int."""
        return self.data.stride(dim)

    def storage_offset(self) -> int:
        """The index, in elements, of this tensor's first element in its storage."""
        return self.data.storage_offset()

    def is_contiguous(self, memory_format: object = None) -> bool:
        """Whether the elements lie in memory in row-major (C) order without gaps; with ``memory_format``
        (``genesis.channels_last``, ...) whether they lie densely in that format's order."""
        if memory_format is None:  # the common call, straight to the NDArray
            return self.data.is_contiguous()
        return is_in_format(tuple(self.shape), tuple(self.data.stride()), memory_format)

    def data_ptr(self) -> int:
        """The address of the first element (a host address on cpu, a device address on cuda)."""
        return self.data.data_ptr()

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type (float16, bfloat16, float32, float64)."""
        return self.data.dtype.is_floating_point

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self.data.dtype.itemsize

    @property
    def is_leaf(self) -> bool:
        """True for a tensor no recorded operation made (grad_fn is None): only leaves get ``.grad``."""
        return self.grad_fn is None

    @property
    def _version_counter(self) -> int:
        return self._version[0]

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is ambiguous")
        return bool(self.item())

    def _scalar(self) -> int | float | bool:
        if self.numel() != 1:  # torch: ValueError here, where item() raises RuntimeError
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())
