"""NDArray: an n-dimensional array on one device, dispatching every op by device.

NDArray knows nothing of torch or of CUDA. It holds its backend's native array
(``_data``: a torch CPU tensor, or a genesis_storage StridedView), its Device and
its DType, and forwards each op to the implementation registered for its device
type in ``registry``. Backend ops follow torch's semantics and names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Number

from . import registry
from .device import Device, as_device
from .dtypes import DType, as_dtype

_UNARY_OPS = (
    "neg", "abs", "exp", "exp2", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "relu", "silu", "sign", "floor", "ceil", "round", "trunc", "reciprocal",
    "isnan", "isinf", "isfinite", "logical_not", "bitwise_not",
)


def _shape_args(shape) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    return tuple(int(s) for s in shape)


class NDArray:
    """An array on one device. Construct through the factories, not directly."""

    __slots__ = ("__weakref__", "_data", "_ops", "device", "dtype")

    def __init__(self, data, device: Device, dtype: DType):
        self._data = data
        self.device = device
        self.dtype = dtype
        self._ops = registry.table(device.type)

    def _wrap(self, data) -> NDArray:
        """A result on the same device; its dtype read back from the backend."""
        return NDArray(data, self.device, self._ops["dtype_of"](data))

    # ----------------------------------------------------------------- metadata
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    def dim(self) -> int:
        return self.ndim

    def size(self, dim: int | None = None):
        shape = self.shape
        return shape if dim is None else shape[dim]

    def numel(self) -> int:
        return math.prod(self._data.shape)

    def stride(self, dim: int | None = None):
        strides = self._ops["strides"](self._data)
        return strides if dim is None else strides[dim]

    @property
    def strides(self) -> tuple[int, ...]:
        return self._ops["strides"](self._data)

    def storage_offset(self) -> int:
        return self._ops["storage_offset"](self._data)

    def is_contiguous(self) -> bool:
        return self._ops["is_contiguous"](self._data)

    def data_ptr(self) -> int:
        return self._ops["data_ptr"](self._data)

    @property
    def native(self):
        """The backend's own array (a torch tensor on cpu, a StridedView on cuda)."""
        return self._data

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __repr__(self) -> str:
        return f"NDArray({self.numpy_or_list()!r}, device='{self.device}', dtype={self.dtype.name})"

    def numpy_or_list(self):
        try:
            return self.numpy()
        except TypeError:
            return self.tolist()

    # ---------------------------------------------------------------- transfers
    def to(self, device=None, dtype=None, non_blocking: bool = False) -> NDArray:
        out = self
        if dtype is not None and as_dtype(dtype) is not self.dtype:
            out = out.astype(dtype)
        if device is not None:
            device = as_device(device)
            if device != out.device:
                host = out._ops["to_cpu"](out._data, non_blocking)
                target = registry.table(device.type)
                out = NDArray(target["from_cpu"](host, device, non_blocking), device, out.dtype)
        return out

    def cpu(self) -> NDArray:
        return self.to("cpu")

    def numpy(self):
        """A numpy array: zero-copy on cpu, a copy from the GPU. TypeError for bfloat16."""
        if self.dtype.numpy is None:
            raise TypeError(f"Got unsupported ScalarType {self.dtype.name}: numpy has no such type")
        return self._ops["to_numpy"](self._data)

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array (zero-copy), for torch.from_dlpack and friends."""
        return self._ops["to_dlpack"](self._data, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._ops["dlpack_device"](self._data)

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._ops["item"](self._data)

    def tolist(self):
        return self._ops["tolist"](self._data)

    # --------------------------------------------------------------- elementwise
    def _same_device(self, other: NDArray) -> None:
        if other.device != self.device:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"{self.device} and {other.device}!"
            )

    def _binary(self, op: str, other, reverse: bool = False) -> NDArray:
        if isinstance(other, NDArray):
            if other.device is not self.device and other.device != self.device:
                self._same_device(other)
            other = other._data
        elif not isinstance(other, Number):
            return NotImplemented
        a, b = (other, self._data) if reverse else (self._data, other)
        return self._wrap(self._ops["binary"](op, a, b))

    def _inplace_binary(self, op: str, other) -> NDArray:
        if isinstance(other, NDArray):
            self._same_device(other)
            other = other._data
        self._ops["binary_"](op, self._data, other)
        return self

    def unary(self, op: str) -> NDArray:
        return self._wrap(self._ops["unary"](op, self._data))

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, True)
    def __sub__(self, o): return self._binary("sub", o)
    def __rsub__(self, o): return self._binary("sub", o, True)
    def __mul__(self, o): return self._binary("mul", o)
    def __rmul__(self, o): return self._binary("mul", o, True)
    def __truediv__(self, o): return self._binary("div", o)
    def __rtruediv__(self, o): return self._binary("div", o, True)
    def __floordiv__(self, o): return self._binary("floor_divide", o)
    def __rfloordiv__(self, o): return self._binary("floor_divide", o, True)
    def __mod__(self, o): return self._binary("remainder", o)
    def __rmod__(self, o): return self._binary("remainder", o, True)
    def __pow__(self, o): return self._binary("pow", o)
    def __rpow__(self, o): return self._binary("pow", o, True)
    def __eq__(self, o): return self._binary("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._binary("ne", o)  # type: ignore[override]
    def __lt__(self, o): return self._binary("lt", o)
    def __le__(self, o): return self._binary("le", o)
    def __gt__(self, o): return self._binary("gt", o)
    def __ge__(self, o): return self._binary("ge", o)
    def __and__(self, o): return self._binary("bitwise_and", o)
    def __or__(self, o): return self._binary("bitwise_or", o)
    def __xor__(self, o): return self._binary("bitwise_xor", o)
    def __neg__(self): return self.unary("neg")
    def __abs__(self): return self.unary("abs")
    def __invert__(self): return self.unary("bitwise_not")
    def __matmul__(self, o): return self.matmul(o)

    __hash__ = object.__hash__

    def binary(self, op: str, other) -> NDArray:
        return self._binary(op, other)

    def add_(self, o): return self._inplace_binary("add", o)
    def sub_(self, o): return self._inplace_binary("sub", o)
    def mul_(self, o): return self._inplace_binary("mul", o)
    def div_(self, o): return self._inplace_binary("div", o)

    def maximum(self, o): return self._binary("maximum", o)
    def minimum(self, o): return self._binary("minimum", o)

    def where(self, condition: NDArray, other) -> NDArray:
        """torch.where(condition, self, other)."""
        self._same_device(condition)
        if isinstance(other, NDArray):
            self._same_device(other)
            other = other._data
        return self._wrap(self._ops["where"](condition._data, self._data, other))

    def clamp(self, min=None, max=None) -> NDArray:
        return self._wrap(self._ops["clamp"](self._data, min, max))

    # ---------------------------------------------------------------- reductions
    def _reduce(self, op: str, dim, keepdim: bool, dtype=None) -> NDArray:
        dtype = None if dtype is None else as_dtype(dtype)
        return self._wrap(self._ops["reduce"](op, self._data, dim, keepdim, dtype))

    def sum(self, dim=None, keepdim: bool = False, dtype=None): return self._reduce("sum", dim, keepdim, dtype)
    def mean(self, dim=None, keepdim: bool = False, dtype=None): return self._reduce("mean", dim, keepdim, dtype)
    def prod(self, dim=None, keepdim: bool = False, dtype=None): return self._reduce("prod", dim, keepdim, dtype)
    def amax(self, dim=None, keepdim: bool = False): return self._reduce("amax", dim, keepdim)
    def amin(self, dim=None, keepdim: bool = False): return self._reduce("amin", dim, keepdim)
    def all(self, dim=None, keepdim: bool = False): return self._reduce("all", dim, keepdim)
    def any(self, dim=None, keepdim: bool = False): return self._reduce("any", dim, keepdim)
    def logsumexp(self, dim, keepdim: bool = False): return self._reduce("logsumexp", dim, keepdim)

    def max(self, dim: int | None = None, keepdim: bool = False):
        """Without dim: the largest element. With dim: (values, indices), as torch."""
        if dim is None:
            return self._reduce("amax", None, False)
        values, indices = self._ops["max_dim"](self._data, dim, keepdim)
        return self._wrap(values), self._wrap(indices)

    def min(self, dim: int | None = None, keepdim: bool = False):
        if dim is None:
            return self._reduce("amin", None, False)
        values, indices = self._ops["min_dim"](self._data, dim, keepdim)
        return self._wrap(values), self._wrap(indices)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> NDArray:
        return self._wrap(self._ops["argmax"](self._data, dim, keepdim))

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> NDArray:
        return self._wrap(self._ops["argmin"](self._data, dim, keepdim))

    def var(self, dim=None, correction: int = 1, keepdim: bool = False) -> NDArray:
        return self._wrap(self._ops["var"](self._data, dim, correction, keepdim))

    # -------------------------------------------------------------- linear algebra
    def matmul(self, other: NDArray) -> NDArray:
        self._same_device(other)
        return self._wrap(self._ops["matmul"](self._data, other._data))

    def softmax(self, dim: int) -> NDArray:
        return self._wrap(self._ops["softmax"](self._data, dim, False))

    def log_softmax(self, dim: int) -> NDArray:
        return self._wrap(self._ops["softmax"](self._data, dim, True))

    def softmax_backward(self, grad: NDArray, dim: int, log: bool) -> NDArray:
        """Gradient of (log_)softmax over ``dim``, given this array as its output."""
        self._same_device(grad)
        return self._wrap(self._ops["softmax_backward"](self._data, grad._data, dim, log))

    # ----------------------------------------------------------------- views
    def reshape(self, *shape) -> NDArray:
        return self._wrap(self._ops["reshape"](self._data, _shape_args(shape)))

    def view(self, *shape) -> NDArray:
        return self._wrap(self._ops["view"](self._data, _shape_args(shape)))

    def permute(self, *dims) -> NDArray:
        return self._wrap(self._ops["permute"](self._data, _shape_args(dims)))

    def transpose(self, dim0: int, dim1: int) -> NDArray:
        return self._wrap(self._ops["transpose"](self._data, dim0, dim1))

    @property
    def T(self) -> NDArray:
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> NDArray:
        return self.transpose(-2, -1)

    def expand(self, *shape) -> NDArray:
        return self._wrap(self._ops["expand"](self._data, _shape_args(shape)))

    def broadcast_to(self, shape) -> NDArray:
        return self.expand(*shape)

    def squeeze(self, dim=None) -> NDArray:
        return self._wrap(self._ops["squeeze"](self._data, dim))

    def unsqueeze(self, dim: int) -> NDArray:
        return self._wrap(self._ops["unsqueeze"](self._data, dim))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> NDArray:
        return self._wrap(self._ops["flatten"](self._data, start_dim, end_dim))

    def narrow(self, dim: int, start: int, length: int) -> NDArray:
        return self._wrap(self._ops["narrow"](self._data, dim, start, length))

    def as_strided(self, shape, strides, offset: int | None = None) -> NDArray:
        return self._wrap(self._ops["as_strided"](self._data, tuple(shape), tuple(strides), offset))

    def contiguous(self) -> NDArray:
        return self._wrap(self._ops["contiguous"](self._data))

    def __getitem__(self, index) -> NDArray:
        return self._wrap(self._ops["getitem"](self._data, _unwrap_index(index, self)))

    def __setitem__(self, index, value) -> None:
        if isinstance(value, NDArray):
            self._same_device(value)
            value = value._data
        self._ops["setitem"](self._data, _unwrap_index(index, self), value)

    def index_put_(self, index, values, accumulate: bool = False) -> NDArray:
        """self[index] = values, or += with ``accumulate`` (repeated indices then add up)."""
        if isinstance(values, NDArray):
            self._same_device(values)
            values = values._data
        self._ops["index_put_"](self._data, _unwrap_index(index, self), values, accumulate)
        return self

    # ---------------------------------------------------------------- copies
    def astype(self, dtype) -> NDArray:
        dtype = as_dtype(dtype)
        if dtype is self.dtype:
            return self
        return NDArray(self._ops["cast"](self._data, dtype), self.device, dtype)

    def clone(self) -> NDArray:
        return self._wrap(self._ops["clone"](self._data))

    def copy_(self, src: NDArray) -> NDArray:
        if src.device != self.device:
            src = src.to(self.device)
        self._ops["copy_"](self._data, src._data)
        return self

    def fill_(self, value) -> NDArray:
        self._ops["fill_"](self._data, value)
        return self

    def zero_(self) -> NDArray:
        return self.fill_(0)


def _unwrap_index(index, owner: NDArray):
    """Replace NDArrays inside an index by their native arrays (same device only)."""
    if isinstance(index, NDArray):
        owner._same_device(index)
        return index._data
    if isinstance(index, tuple):
        return tuple(_unwrap_index(i, owner) for i in index)
    return index


for _op in _UNARY_OPS:
    def _method(self, _op=_op):
        return self._wrap(self._ops["unary"](_op, self._data))
    _method.__name__ = _op
    _method.__doc__ = f"Elementwise {_op}."
    setattr(NDArray, _op, _method)
del _op, _method
