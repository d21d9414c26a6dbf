"""NDArray: an n-dimensional array on one device, dispatching every op by device.

NDArray knows nothing of torch or of CUDA. It holds its backend's native array
(``_data``: a torch CPU tensor, or a genesis_storage StridedView), its Device and
its DType, and forwards each op to the implementation registered for its device
type in ``registry``. Backend ops follow torch's semantics and names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Number
from typing import TYPE_CHECKING

from . import chunk_cat as _chunk_cat
from . import registry
from .device import Device, resolve_device
from .dtypes import DType, as_dtype, float32, get_default_dtype, promote_types
from .shape import broadcast_shapes, movedim_order, normalize_dim, unflatten_shape

_UNARY_OPS = (
    "neg",
    "abs",
    "exp",
    "exp2",
    "log",
    "log1p",
    "log2",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "silu",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "reciprocal",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
    "bitwise_not",
)
_ACTIVATION_KINDS = ("gelu", "gelu_tanh", "silu", "sigmoid")
_RNN_MODES = ("lstm", "gru", "rnn_tanh", "rnn_relu")


# Python number types that key a resolved entry themselves (numpy scalars and the like take the general path).
_PLAIN_SCALARS = frozenset({int, float, bool})


def _shape_args(shape) -> tuple[int, ...]:
    # Plain ints (every factory call gives them) pass through; anything else (numpy ints, a Size, a list)
    # is converted. The class tests come first: the Sequence ABC's isinstance is slow.
    if len(shape) == 1 and shape[0].__class__ is not int and isinstance(shape[0], Sequence):
        shape = shape[0]
    for s in shape:
        if s.__class__ is not int:
            return tuple(int(s) for s in shape)
    return tuple(shape)


def _operator(op: str, name: str) -> Callable[[NDArray, object], NDArray]:
    """The operator method ``name`` for ``op`` (``__add__ = _operator("add", "__add__")``): NDArray._binary with its
    resolved-entry path inline for an operand of the same device, or a plain Python number; the rest,
    and every refusal, go to _binary. One call fewer for the most frequent ops of all."""

    def method(self: NDArray, other: object) -> NDArray:
        cls = other.__class__
        if cls is NDArray:
            if other.device is self.device:  # type: ignore[attr-defined]  # an NDArray, as cls says
                ops = self._ops
                entry = ops.resolved[("binary", op, self.dtype, other.dtype)]  # type: ignore[attr-defined]
                if entry is not None:
                    out = entry[0](self._data, other._data)  # type: ignore[attr-defined]
                    dtype = entry[1]
                    return NDArray(out, self.device, ops["dtype_of"](out) if dtype is None else dtype, ops)
        elif cls in _PLAIN_SCALARS:
            ops = self._ops
            entry = ops.resolved[("binary", op, self.dtype, cls)]
            if entry is not None:
                out = entry[0](self._data, other)
                dtype = entry[1]
                return NDArray(out, self.device, ops["dtype_of"](out) if dtype is None else dtype, ops)
        return self._binary(op, other)

    method.__name__ = name
    method.__qualname__ = f"NDArray.{name}"
    return method


class NDArray:
    """An array on one device. Construct through the factories, not directly."""

    __slots__ = ("__weakref__", "_data", "_ops", "device", "dtype", "ndim", "shape")

    def __init__(self, data, device: Device, dtype: DType, ops: registry.OpTable | None = None):
        self._data = data
        # An NDArray never changes its data's shape: read once here, the shape and rank are plain
        # attributes, not properties (they are the most read metadata of every op's host path).
        self.shape: tuple[int, ...] = tuple(data.shape)
        self.ndim: int = len(self.shape)
        self.device = device
        self.dtype = dtype
        # Results made by an op pass their input's table on: no registry lookup per result.
        self._ops = registry.table(device.type) if ops is None else ops

    if TYPE_CHECKING:
        # Made at import by the loop over _UNARY_OPS at the end of this module; declared for type checkers.
        def neg(self) -> NDArray: ...
        def abs(self) -> NDArray: ...
        def exp(self) -> NDArray: ...
        def exp2(self) -> NDArray: ...
        def log(self) -> NDArray: ...
        def log1p(self) -> NDArray: ...
        def log2(self) -> NDArray: ...
        def sqrt(self) -> NDArray: ...
        def rsqrt(self) -> NDArray: ...
        def sin(self) -> NDArray: ...
        def cos(self) -> NDArray: ...
        def tan(self) -> NDArray: ...
        def tanh(self) -> NDArray: ...
        def sigmoid(self) -> NDArray: ...
        def relu(self) -> NDArray: ...
        def silu(self) -> NDArray: ...
        def sign(self) -> NDArray: ...
        def floor(self) -> NDArray: ...
        def ceil(self) -> NDArray: ...
        def round(self) -> NDArray: ...
        def trunc(self) -> NDArray: ...
        def reciprocal(self) -> NDArray: ...
        def isnan(self) -> NDArray: ...
        def isinf(self) -> NDArray: ...
        def isfinite(self) -> NDArray: ...
        def logical_not(self) -> NDArray: ...
        def bitwise_not(self) -> NDArray: ...

    def _wrap(self, data) -> NDArray:
        """A result on the same device; its dtype read back from the backend."""
        return NDArray(data, self.device, self._ops["dtype_of"](data), self._ops)

    def _like(self, data) -> NDArray:
        """A result on the same device with self's dtype (views and copies): nothing to read back."""
        return NDArray(data, self.device, self.dtype, self._ops)

    def _result(self, data, dtype: DType | None) -> NDArray:
        """A resolved entry's result: its dtype as the entry resolved it, read back where it did not."""
        ops = self._ops
        return NDArray(data, self.device, ops["dtype_of"](data) if dtype is None else dtype, ops)

    # ----------------------------------------------------------------- metadata
    def dim(self) -> int:
        return self.ndim

    def size(self, dim: int | None = None):
        shape = self.shape
        return shape if dim is None else shape[dim]

    def numel(self) -> int:
        return math.prod(self.shape)

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

    def exclusive(self) -> bool:
        """Whether this array's memory is dense and seen through this array only (no other array or
        view shares it), as far as the backend can tell; False when it cannot. Autograd keeps such a
        gradient as a leaf's ``.grad`` instead of copying it (torch's AccumulateGrad does the same)."""
        return self._ops["exclusive"](self._data)

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
            device = resolve_device(device)  # "cuda": the current device, as torch's to()
            if device is not out.device and device != out.device:
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

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (version 3, zero-copy) of a GPU array. An AttributeError on a
        device without one, so that ``hasattr(array, "__cuda_array_interface__")`` answers False there."""
        return self._ops["cuda_array_interface"](self._data)

    def known_range(self) -> tuple[int, int, bool] | None:
        """Bounds (lowest, highest, exact: both held) of an integer array's values that the host knows without
        reading the device (uploads, arange, randint, argmax, integer clamps, ...), else None."""
        return self._ops["value_range"](self._data)

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._ops["item"](self._data)

    def tolist(self):
        return self._ops["tolist"](self._data)

    # --------------------------------------------------------------- elementwise
    def _same_device(self, other: NDArray) -> None:
        if other.device is not self.device and other.device != self.device:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"{self.device} and {other.device}!"
            )

    def _binary(self, op: str, other, reverse: bool = False) -> NDArray:
        # The hot path: the entry resolved for (op, dtypes) on this device (see registry.py). The
        # signature is the other operand's dtype, or its Python type for a plain int / float / bool.
        cls = other.__class__
        if cls is NDArray:
            if other.device is not self.device and other.device != self.device:
                self._same_device(other)
            signature = other.dtype
            other = other._data
        elif cls in _PLAIN_SCALARS:
            signature = cls
        elif isinstance(other, Number):
            signature = None
        else:
            return NotImplemented
        if not reverse and signature is not None:
            ops = self._ops
            entry = ops.resolved[("binary", op, self.dtype, signature)]
            if entry is not None:  # (what _result does, inline: this is the most frequent op of all)
                out = entry[0](self._data, other)
                dtype = entry[1]
                return NDArray(out, self.device, ops["dtype_of"](out) if dtype is None else dtype, ops)
        a, b = (other, self._data) if reverse else (self._data, other)
        return self._wrap(self._ops["binary"](op, a, b))

    def _inplace_binary(self, op: str, other) -> NDArray:
        cls = other.__class__
        if cls is NDArray:
            self._same_device(other)
            signature = other.dtype
            other = other._data
        else:
            signature = cls if cls in _PLAIN_SCALARS else None
        if signature is not None:
            entry = self._ops.resolved[("binary_", op, self.dtype, signature)]
            if entry is not None:
                entry(self._data, other)
                return self
        self._ops["binary_"](op, self._data, other)
        return self

    def unary(self, op: str) -> NDArray:
        ops = self._ops
        entry = ops.resolved[("unary", op, self.dtype)]
        if entry is not None:
            out = entry[0](self._data)
            dtype = entry[1]
            return NDArray(out, self.device, ops["dtype_of"](out) if dtype is None else dtype, ops)
        return self._wrap(ops["unary"](op, self._data))

    __add__ = _operator("add", "__add__")

    def __radd__(self, other):
        return self._binary("add", other, True)

    __sub__ = _operator("sub", "__sub__")

    def __rsub__(self, other):
        return self._binary("sub", other, True)

    __mul__ = _operator("mul", "__mul__")

    def __rmul__(self, other):
        return self._binary("mul", other, True)

    __truediv__ = _operator("div", "__truediv__")

    def __rtruediv__(self, other):
        return self._binary("div", other, True)

    def __floordiv__(self, other):
        return self._binary("floor_divide", other)

    def __rfloordiv__(self, other):
        return self._binary("floor_divide", other, True)

    def __mod__(self, other):
        return self._binary("remainder", other)

    def __rmod__(self, other):
        return self._binary("remainder", other, True)

    def __pow__(self, other):
        return self._binary("pow", other)

    def __rpow__(self, other):
        return self._binary("pow", other, True)

    # Elementwise, as torch: the result is an array, not object's bool.
    def __eq__(self, other: object) -> NDArray:  # type: ignore[override]
        return self._binary("eq", other)

    def __ne__(self, other: object) -> NDArray:  # type: ignore[override]
        return self._binary("ne", other)

    __lt__ = _operator("lt", "__lt__")

    __le__ = _operator("le", "__le__")

    __gt__ = _operator("gt", "__gt__")

    __ge__ = _operator("ge", "__ge__")

    def __and__(self, other):
        return self._binary("bitwise_and", other)

    def __or__(self, other):
        return self._binary("bitwise_or", other)

    def __xor__(self, other):
        return self._binary("bitwise_xor", other)

    def __neg__(self):
        return self.unary("neg")

    def __abs__(self):
        return self.unary("abs")

    def __invert__(self):
        return self.unary("bitwise_not")

    def __matmul__(self, other):
        return self.matmul(other)

    __hash__ = object.__hash__

    def binary(self, op: str, other) -> NDArray:
        return self._binary(op, other)

    def add_(self, other):
        return self._inplace_binary("add", other)

    def sub_(self, other):
        return self._inplace_binary("sub", other)

    def mul_(self, other):
        return self._inplace_binary("mul", other)

    def div_(self, other):
        return self._inplace_binary("div", other)

    def maximum(self, other):
        return self._binary("maximum", other)

    def minimum(self, other):
        return self._binary("minimum", other)

    def where(self, condition: NDArray, other) -> NDArray:
        """torch.where(condition, self, other)."""
        self._same_device(condition)
        if isinstance(other, NDArray):
            self._same_device(other)
            other = other._data
        return self._wrap(self._ops["where"](condition._data, self._data, other))

    def clamp(self, min=None, max=None) -> NDArray:
        """Scalar bounds, or NDArray bounds that broadcast with self (as torch)."""
        return self._wrap(self._ops["clamp"](self._data, *self._natives(min, max)))

    # ---------------------------------------------------------------- reductions
    def _reduce(self, op: str, dim, keepdim: bool, dtype=None) -> NDArray:
        if dtype is None:
            entry = self._ops.resolved[("reduce", op, self.dtype)]
            if entry is not None:
                return self._result(entry[0](self._data, dim, keepdim), entry[1])
        else:
            dtype = as_dtype(dtype)
        return self._wrap(self._ops["reduce"](op, self._data, dim, keepdim, dtype))

    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        return self._reduce("sum", dim, keepdim, dtype)

    def mean(self, dim=None, keepdim: bool = False, dtype=None):
        return self._reduce("mean", dim, keepdim, dtype)

    def prod(self, dim=None, keepdim: bool = False, dtype=None):
        return self._reduce("prod", dim, keepdim, dtype)

    def amax(self, dim=None, keepdim: bool = False):
        return self._reduce("amax", dim, keepdim)

    def amin(self, dim=None, keepdim: bool = False):
        return self._reduce("amin", dim, keepdim)

    def all(self, dim=None, keepdim: bool = False):
        return self._reduce("all", dim, keepdim)

    def any(self, dim=None, keepdim: bool = False):
        return self._reduce("any", dim, keepdim)

    def logsumexp(self, dim, keepdim: bool = False):
        return self._reduce("logsumexp", dim, keepdim)

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
    def vector_norm(self, ord: float = 2.0, dim=None, keepdim: bool = False, dtype=None) -> NDArray:
        """torch.linalg.vector_norm: ``sum(|x|^ord)^(1/ord)`` over ``dim`` (all dims when None)."""
        src = self if dtype is None else self.astype(dtype)
        return src._wrap(self._ops["vector_norm"](src._data, float(ord), dim, keepdim))

    def matmul(self, other: NDArray) -> NDArray:
        if other.device is not self.device:
            self._same_device(other)
        entry = self._ops.resolved[("matmul", "matmul", self.dtype, other.dtype)]
        if entry is not None:
            return self._result(entry[0](self._data, other._data), entry[1])
        return self._wrap(self._ops["matmul"](self._data, other._data))

    def linear(self, weight: NDArray, bias: NDArray | None = None, activation: str = "none") -> NDArray:
        """``activation(self @ weight^T + bias)``: torch.nn.functional.linear, with an optional fused
        activation ("none", "relu", "gelu", "gelu_tanh", "silu"); one kernel launch on cuda.

        A float16 / bfloat16 product may take a float32 bias (autocast's "linear" policy keeps the master
        bias): it is added to the float32 accumulator, before the result's one rounding."""
        self._same_device(weight)
        if bias is not None:
            self._same_device(bias)
        if weight.ndim != 2 or self.ndim == 0 or self.shape[-1] != weight.shape[1]:
            rows = math.prod(self.shape[:-1]) if self.ndim else 1
            k = self.shape[-1] if self.ndim else 1
            w = "x".join(map(str, reversed(weight.shape)))
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {w})")
        for other in (weight, bias):
            if other is not None and other.dtype != self.dtype and not (other is bias and _wide_bias(self, bias)):
                names = _TORCH_SCALAR_NAMES[self.dtype.name], _TORCH_SCALAR_NAMES[other.dtype.name]
                raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {names[0]} and {names[1]}")
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f"\"addmm\" not implemented for '{_TORCH_SCALAR_NAMES[self.dtype.name]}'")
        if bias is not None and tuple(bias.shape) != (weight.shape[0],):
            raise RuntimeError(f"linear: bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
        if activation not in ("none", "relu", "gelu", "gelu_tanh", "silu"):
            raise ValueError(f"linear: unknown activation {activation!r}")
        native_bias = bias._data if bias is not None else None
        return self._wrap(self._ops["linear"](self._data, weight._data, native_bias, activation))

    def linear_backward(
        self,
        input: NDArray | None,
        weight: NDArray | None,
        need_input: bool,
        need_weight: bool,
        bias_dtype: DType | None,
        input_dtype: DType | None = None,
        weight_dtype: DType | None = None,
    ) -> tuple[NDArray | None, NDArray | None, NDArray | None]:
        """(d input, d weight, d bias) of :meth:`linear` (activation "none"), this array being the gradient
        of its output: ``self @ weight``, ``self^T @ input`` over all rows, and the column sums of ``self`` in
        ``bias_dtype`` (None: no bias gradient). Each part only where asked for (None otherwise); ``weight``
        is needed for the first, ``input`` for the second.

        ``input_dtype`` / ``weight_dtype``: the dtypes of the first two gradients, this array's by default.
        A 16-bit product may be written in float32 (autocast's float32 master weight, or a float32 input
        cast down for the product): the float32 accumulator is rounded once, to the wider type, instead of
        to 16 bits and then widened by a separate cast."""
        if (need_input and weight is None) or (need_weight and input is None):
            raise ValueError("linear_backward: d input needs the weight, d weight needs the input")
        own = self.dtype
        input_dtype = own if input_dtype is None else input_dtype
        weight_dtype = own if weight_dtype is None else weight_dtype
        for name, wanted in (("input", input_dtype), ("weight", weight_dtype)):
            if wanted is not own and not (wanted is float32 and own.is_floating_point and own.itemsize == 2):
                raise TypeError(
                    f"linear_backward: the {name} gradient of a {own.name} product can be {own.name} or, for a "
                    f"16-bit product, float32; got {wanted.name}"
                )
        g, x, w = self._natives(self, input, weight)
        grads = self._ops["linear_backward"](g, x, w, need_input, need_weight, bias_dtype, input_dtype, weight_dtype)
        return tuple([None if g is None else self._wrap(g) for g in grads])  # type: ignore[return-value]

    def softmax(self, dim: int) -> NDArray:
        return self._wrap(self._ops["softmax"](self._data, dim, False))

    def log_softmax(self, dim: int) -> NDArray:
        return self._wrap(self._ops["softmax"](self._data, dim, True))

    def softmax_backward(self, grad_output: NDArray, dim: int, log: bool) -> NDArray:
        """Gradient of (log_)softmax over ``dim``, given this array as its output."""
        self._same_device(grad_output)
        return self._wrap(self._ops["softmax_backward"](self._data, grad_output._data, dim, log))

    # ------------------------------------------------- fused activations (backends/*/activation.py)
    # kind: "gelu", "gelu_tanh", "silu" or "sigmoid" (the gate of torch's GLU).
    def _check_activation(self, kind: str, *others: NDArray) -> None:
        if kind not in _ACTIVATION_KINDS:
            raise ValueError(f"unknown activation {kind!r}; expected one of {_ACTIVATION_KINDS}")
        for other in others:
            self._same_device(other)
            if other.shape != self.shape or other.dtype != self.dtype:
                raise RuntimeError(
                    f"{kind}: operands must match in shape and dtype, got {list(self.shape)} "
                    f"{self.dtype.name} and {list(other.shape)} {other.dtype.name}"
                )
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f"\"{kind}\" not implemented for '{_TORCH_SCALAR_NAMES[self.dtype.name]}'")

    def activation_backward(self, grad_output: NDArray, kind: str) -> NDArray:
        """``grad_output * act'(self)`` in one pass (this array is the activation's input)."""
        self._check_activation(kind, grad_output)
        return self._wrap(self._ops["activation_backward"](grad_output._data, self._data, kind))

    def activation_backward_and_forward(self, grad_output: NDArray, kind: str) -> tuple[NDArray, NDArray]:
        """(``grad_output * act'(self)``, ``act(self)``) in one pass: the gradient, and the activation with the
        forward's values (``self.unary(kind)``'s), for a backward that recomputes it instead of keeping it."""
        self._check_activation(kind, grad_output)
        dx, y = self._ops["activation_backward_forward"](grad_output._data, self._data, kind)
        return self._wrap(dx), self._wrap(y)

    def gated_forward(self, up: NDArray, kind: str) -> NDArray:
        """``act(self) * up`` in one pass (self is the gate): SwiGLU for silu, GeGLU for gelu, GLU for sigmoid."""
        self._check_activation(kind, up)
        return self._wrap(self._ops["gated_forward"](self._data, up._data, kind))

    def gated_backward(self, grad_output: NDArray, up: NDArray, kind: str) -> tuple[NDArray, NDArray]:
        """(d gate, d up) of ``act(self) * up`` in one pass: ``g * up * act'(self)`` and ``g * act(self)``."""
        self._check_activation(kind, grad_output, up)
        dgate, dup = self._ops["gated_backward"](grad_output._data, self._data, up._data, kind)
        return self._wrap(dgate), self._wrap(dup)

    def fused_pointwise(
        self, program, *others: NDArray, scalars=(), rng: tuple[int, int, int] | None = None, out_dtypes=None
    ) -> tuple[tuple[NDArray, ...], tuple[int, int, int] | None]:
        """Run a genesis_kernels.codegen Program over (self, *others), broadcast together: one generated
        kernel on cuda, the same program in torch ops on cpu (backends/*/fused_pointwise.py).

        Each output's dtype is the program's, else ``out_dtypes[j]``, else the inputs' promoted float
        dtype. ``rng``: the (seed, offset, rng_ptr) of the dropout masks (None: drawn from the device's
        generator). Returns (outputs, the rng used, None for a program without dropout)."""
        inputs = (self, *others)
        if len(inputs) != program.n_inputs:
            raise ValueError(f"fused_pointwise: the program takes {program.n_inputs} input(s), got {len(inputs)}")
        shape: tuple[int, ...] = self.shape
        promoted = self.dtype
        for other in others:
            self._same_device(other)
            shape = broadcast_shapes(shape, other.shape)
            promoted = promote_types(promoted, other.dtype)
        if not promoted.is_floating_point:
            promoted = get_default_dtype()
        dtypes = [
            as_dtype(dt) if dt is not None else (as_dtype(out_dtypes[j]) if out_dtypes is not None else promoted)
            for j, (_, dt) in enumerate(program.outputs)
        ]
        natives = [x._data for x in inputs]
        outs, used = self._ops["fused_pointwise"](program, natives, tuple(shape), list(scalars), dtypes, rng)
        return tuple(self._wrap(o) for o in outs), used

    def rope(
        self, cos: NDArray, sin: NDArray, positions: NDArray, seq_dim: int, interleaved: bool, inverse: bool
    ) -> NDArray:
        """Rotary position embeddings of this (batch, seq, heads, head_dim) array (``seq_dim`` 1) or
        (batch, heads, seq, head_dim) one (``seq_dim`` 2): the first ``2 * cos.shape[1]`` features of each
        head rotated pairwise by the angles of the token's position (``positions``, integer (batch, seq),
        read on the device), half-split pairs (i, i + d/2) or ``interleaved`` ones (2i, 2i+1); ``inverse``
        rotates by minus the angles (the gradient). ``cos`` / ``sin``: float tables (max_pos, d/2)."""
        self._check_rope(cos, sin, positions, seq_dim)
        out = self._ops["rope"](self._data, cos._data, sin._data, positions._data, seq_dim, interleaved, inverse)
        return self._like(out)

    def rope_pair(
        self,
        k: NDArray,
        cos: NDArray,
        sin: NDArray,
        positions: NDArray,
        seq_dim: int,
        interleaved: bool,
        inverse: bool,
    ) -> tuple[NDArray, NDArray]:
        """``(self.rope(...), k.rope(...))`` with the same tables and positions, in one launch on cuda: ``k``
        (the keys, any number of heads) agrees with this array (the queries) in batch, seq and head_dim."""
        self._check_rope(cos, sin, positions, seq_dim)
        k._check_rope(cos, sin, positions, seq_dim)
        if k.shape[0] != self.shape[0] or k.shape[seq_dim] != self.shape[seq_dim] or k.shape[3] != self.shape[3]:
            raise RuntimeError(f"rope: q {list(self.shape)} and k {list(k.shape)} must agree in batch, seq and "
                               "head_dim")  # fmt: skip
        qo, ko = self._ops["rope_pair"](
            self._data, k._data, cos._data, sin._data, positions._data, seq_dim, interleaved, inverse
        )
        return self._like(qo), k._like(ko)

    def _check_rope(self, cos: NDArray, sin: NDArray, positions: NDArray, seq_dim: int) -> None:
        """torch-style RuntimeErrors for rotary operands that do not fit this array."""
        for other in (cos, sin, positions):
            if other.device is not self.device:
                self._same_device(other)
        shape = self.shape
        if len(shape) != 4 or seq_dim not in (1, 2) or not self.dtype.is_floating_point:
            raise RuntimeError(f"rope: expected a 4-D float array and seq_dim 1 or 2, got {list(shape)} "
                               f"{self.dtype.name}, seq_dim {seq_dim}")  # fmt: skip
        table = cos.shape
        if len(table) != 2 or table != sin.shape or cos.dtype is not sin.dtype or not cos.dtype.is_floating_point:
            raise RuntimeError(
                "rope: cos and sin must be float tables of one shape (max_pos, rotary_dim / 2), got "
                f"{list(table)} {cos.dtype.name} and {list(sin.shape)} {sin.dtype.name}"
            )
        if 2 * table[1] > shape[3]:
            raise RuntimeError(f"rope: rotary_dim {2 * table[1]} exceeds head_dim {shape[3]}")
        if positions.dtype.name not in ("int32", "int64") or positions.shape != (shape[0], shape[seq_dim]):
            raise RuntimeError(f"rope: positions must be int32 / int64 {[shape[0], shape[seq_dim]]}, got "
                               f"{list(positions.shape)} {positions.dtype.name}")  # fmt: skip

    def chunk_cat_(self, arrays: Sequence[NDArray], num_chunks: int) -> NDArray:
        """Write ``arrays`` into this array in FSDP's chunked row layout (torch's ``_chunk_cat`` along dim 0),
        cast to this dtype, padding zero; one launch on cuda (genesis_ndarray.chunk_cat). Returns self."""
        return _chunk_cat.chunk_cat(self, arrays, num_chunks)

    def chunk_split(self, num_chunks: int, out: Sequence[NDArray]) -> None:
        """The inverse of ``chunk_cat_``: each array of ``out`` gets its rows back from this array."""
        _chunk_cat.chunk_split(self, num_chunks, out)

    def kv_cache_write_(self, values: NDArray, k_new: NDArray, v_new: NDArray, positions: NDArray) -> NDArray:
        """This keys cache and the ``values`` one (contiguous (batch, heads, max_len, head_dim), one dtype) get
        ``k_new`` / ``v_new`` (batch, heads, T, head_dim, any strides, cast to the caches' dtype) at slots
        ``clamp(positions[b] + t, 0, max_len - 1)``, in place; ``positions``: int32 / int64 (batch,), read on the
        device (cuda: one genesis_kernels.kv_cache_write launch, no host sync). Where the clamp sends several
        tokens to one slot, the last of them is written. Returns self."""
        for other in (values, k_new, v_new, positions):
            if other.device is not self.device:
                self._same_device(other)
        cache, new = self.shape, k_new.shape
        if (
            len(cache) != 4 or values.shape != cache or values.dtype is not self.dtype or len(new) != 4
            or v_new.shape != new or new[:2] != cache[:2] or new[3] != cache[3] or cache[2] == 0
        ):  # fmt: skip
            raise RuntimeError(
                f"kv_cache_write_: expected caches of one shape (batch, heads, max_len > 0, head_dim) and dtype and "
                f"new keys and values (batch, heads, T, head_dim), got caches {list(cache)} {self.dtype.name} and "
                f"{list(values.shape)} {values.dtype.name}, new {list(new)} and {list(v_new.shape)}"
            )
        if positions.dtype.name not in ("int32", "int64") or positions.shape != cache[:1]:
            raise RuntimeError(f"kv_cache_write_: positions must be int32 / int64 [{cache[0]}], got "
                               f"{list(positions.shape)} {positions.dtype.name}")  # fmt: skip
        if not (self.dtype.is_floating_point and k_new.dtype.is_floating_point and v_new.dtype.is_floating_point):
            raise RuntimeError(f"kv_cache_write_: expected float caches and new values, got {self.dtype.name}, "
                               f"{k_new.dtype.name} and {v_new.dtype.name}")  # fmt: skip
        self._ops["kv_cache_write_"](self._data, values._data, k_new._data, v_new._data, positions._data)
        return self

    def multinomial_rows(self, row_messages: bool = False) -> NDArray:
        """The rows of these 1-d / 2-d float probabilities as a fresh contiguous float64 (rows, k) array,
        validated as torch's multinomial does: cpu raises its RuntimeError now; cuda never waits, it marks
        invalid rows on the device (raised at the next host read-back or graph replay, genesis_kernels
        .sampling_check) and makes them uniform, so a draw from the result stays in [0, k). Messages: torch's
        up-front check's, or with ``row_messages`` its with-replacement kernel's (first invalid row)."""
        if self.ndim not in (1, 2) or not self.dtype.is_floating_point:
            raise RuntimeError(f"multinomial_rows: expected 1-d or 2-d float probabilities, got "
                               f"{list(self.shape)} {self.dtype.name}")  # fmt: skip
        rows = self if self.ndim == 2 else self.reshape(1, self.shape[0])
        return self._result(self._ops["multinomial_rows"](rows._data, bool(row_messages)), as_dtype("float64"))

    def cross_entropy(
        self, target: NDArray, weight: NDArray | None, ignore_index: int, label_smoothing: float
    ) -> tuple[NDArray, NDArray, NDArray]:
        """Fused cross-entropy of these logits (classes in the last dim) against class indices ``target``
        (this array's shape without the last dim): per row (loss, logsumexp, the target's weight, 0 where
        ignored), in float32 (float64 for float64 logits), label smoothing as torch's."""
        self._same_device(target)
        if weight is not None:
            self._same_device(weight)
        w = None if weight is None else weight._data
        loss, lse, row_weight = self._ops["cross_entropy"](
            self._data, target._data, w, int(ignore_index), float(label_smoothing)
        )
        return self._wrap(loss), self._wrap(lse), self._wrap(row_weight)

    def linear_cross_entropy(
        self,
        weight: NDArray,
        bias: NDArray | None,
        target: NDArray,
        class_weight: NDArray | None,
        ignore_index: int,
        label_smoothing: float,
        chunk: int,
        grad: NDArray | None = None,
        total: NDArray | None = None,
        need: tuple[bool, bool, bool] = (True, True, True),
    ) -> tuple[NDArray, NDArray, NDArray | None, NDArray | None, NDArray | None]:
        """Cross-entropy of ``self @ weight^T + bias`` (this array (N, D) the inputs, ``weight`` (C, D)) against
        class indices ``target`` (N,), ``chunk`` rows at a time: the (N, C) logits never exist whole.

        Returns (per-row loss, per-row target weight, d input, d weight, d bias). The losses and weights are
        :meth:`cross_entropy`'s (float32, float64 for float64). With ``grad`` (one value, or one per row; ``total``
        divides it, as :meth:`cross_entropy_backward`'s) the gradients of ``sum(grad * loss)`` with respect to the
        input, weight and bias come with them, each where ``need`` asks (None otherwise), in float32 (float64 for
        float64): each chunk's gradient is found while its logits are at hand, so nothing is recomputed. The
        logits and their gradient are rounded to this array's dtype, as a 16-bit linear layer writes them.
        """
        self._same_device(weight)
        if self.ndim != 2 or weight.ndim != 2 or self.shape[1] != weight.shape[1]:
            raise RuntimeError(
                f"linear_cross_entropy: expected input (N, in_features) and weight (C, in_features), got "
                f"{list(self.shape)} and {list(weight.shape)}"
            )
        if weight.dtype is not self.dtype or not self.dtype.is_floating_point:
            raise RuntimeError(
                f"linear_cross_entropy: expected floating input and weight of one dtype, got {self.dtype.name} "
                f"and {weight.dtype.name}"
            )
        classes = weight.shape[0]
        if bias is not None and (bias.shape != (classes,) or not bias.dtype.is_floating_point):
            raise RuntimeError(f"linear_cross_entropy: expected a floating bias of shape [{classes}], got {bias!r}")
        if target.shape != (self.shape[0],) or target.dtype.is_floating_point or target.dtype.name == "bool":
            raise RuntimeError(
                f"linear_cross_entropy: expected an integer target of shape [{self.shape[0]}], got "
                f"{list(target.shape)} {target.dtype.name}"
            )
        if class_weight is not None and class_weight.shape != (classes,):
            raise RuntimeError(
                f"weight tensor should be defined either for all {classes} classes or no classes but got weight "
                f"tensor of shape: {list(class_weight.shape)}"
            )
        if int(chunk) < 1:
            raise ValueError(f"linear_cross_entropy: chunk must be a positive number of rows, got {chunk}")
        natives = self._natives(weight, bias, target, class_weight, grad, total)
        loss, row_weight, *grads = self._ops["linear_cross_entropy"](
            self._data, *natives[:4], int(ignore_index), float(label_smoothing), int(chunk), *natives[4:], tuple(need)
        )
        return (
            self._wrap(loss),
            self._wrap(row_weight),
            *[None if g is None else self._wrap(g) for g in grads],
        )  # type: ignore[return-value]

    def cross_entropy_backward(
        self,
        target: NDArray,
        weight: NDArray | None,
        lse: NDArray,
        grad: NDArray,
        total: NDArray | None,
        ignore_index: int,
        label_smoothing: float,
        out: NDArray | None = None,
    ) -> NDArray:
        """Gradient of :meth:`cross_entropy`'s per-row losses with respect to these logits, in their dtype.

        ``grad``: one value per row, or a single value for a summed loss; ``total`` (the summed row
        weights) divides it for a mean. Written into ``out`` when given (these logits themselves, for
        a gradient in place of logits nothing else needs).
        """
        natives = self._natives(target, weight, lse, grad, total, out)
        return self._wrap(
            self._ops["cross_entropy_backward"](
                self._data, *natives[:5], int(ignore_index), float(label_smoothing), natives[5]
            )
        )

    def layer_norm(self, weight: NDArray | None, bias: NDArray | None, eps: float) -> tuple[NDArray, NDArray, NDArray]:
        """LayerNorm over the last dim: (out, mean, rstd), one mean / rstd per row in float32
        (float64 for a float64 array); ``weight`` / ``bias`` of shape (N,), or None."""
        out, mean, rstd = self._ops["layer_norm"](*self._natives(self, weight, bias), float(eps))
        return self._wrap(out), self._wrap(mean), self._wrap(rstd)

    def rms_norm(self, weight: NDArray | None, eps: float) -> tuple[NDArray, NDArray]:
        """RMSNorm over the last dim: (out, rstd), rstd = 1 / sqrt(mean(x^2) + eps) per row."""
        out, rstd = self._ops["rms_norm"](*self._natives(self, weight), float(eps))
        return self._wrap(out), self._wrap(rstd)

    def layer_norm_backward(
        self,
        grad_output: NDArray,
        weight: NDArray | None,
        bias: NDArray | None,
        mean: NDArray,
        rstd: NDArray,
        grad_weight: bool = True,
        grad_bias: bool = True,
    ) -> tuple[NDArray, NDArray | None, NDArray | None]:
        """(dx, dweight, dbias) of LayerNorm, given this array as its input and the saved mean / rstd;
        dweight / dbias are None when not asked for or when there is no weight / bias."""
        dx, dw, db = self._ops["layer_norm_backward"](
            *self._natives(grad_output, self, weight, bias, mean, rstd), bool(grad_weight), bool(grad_bias)
        )
        return self._wrap(dx), None if dw is None else self._wrap(dw), None if db is None else self._wrap(db)

    def rms_norm_backward(
        self, grad_output: NDArray, weight: NDArray | None, rstd: NDArray, grad_weight: bool = True
    ) -> tuple[NDArray, NDArray | None]:
        """(dx, dweight) of RMSNorm, given this array as its input and the saved rstd."""
        dx, dw = self._ops["rms_norm_backward"](*self._natives(grad_output, self, weight, rstd), bool(grad_weight))
        return self._wrap(dx), None if dw is None else self._wrap(dw)

    def add_norm(
        self,
        residual: NDArray,
        weight: NDArray | None,
        bias: NDArray | None,
        eps: float,
        rms: bool,
        out_dtype: DType | None = None,
        keep_stats: bool = True,
    ) -> tuple[NDArray, NDArray, NDArray | None, NDArray | None]:
        """Residual add + LayerNorm / RMSNorm over the last dim, fused: (y, s, mean or None, rstd) with
        ``s = residual + self`` (promoted dtype) and ``y = norm(s)`` in ``out_dtype`` (default: s's).
        Without ``keep_stats`` (nothing will run the backward) mean and rstd are not kept: None."""
        for other in (residual, weight, bias):  # (no _natives: the op runs twice per transformer block)
            if other is not None and other.device is not self.device:
                self._same_device(other)
        w = None if weight is None else weight._data
        b = None if bias is None else bias._data
        y, s, mean, rstd = self._ops["add_norm"](self._data, residual._data, w, b, eps, rms, out_dtype, keep_stats)
        wrap = self._wrap
        return wrap(y), wrap(s), None if mean is None else wrap(mean), None if rstd is None else wrap(rstd)

    def add_norm_backward(
        self,
        grad_y: NDArray,
        grad_s: NDArray | None,
        weight: NDArray | None,
        bias: NDArray | None,
        mean: NDArray | None,
        rstd: NDArray,
        rms: bool,
        grad_weight: bool = True,
        grad_bias: bool = True,
        low_dtype: DType | None = None,
    ) -> tuple[NDArray, NDArray | None, NDArray | None, NDArray | None]:
        """(gradient of s, dweight, dbias, the gradient of s in ``low_dtype`` or None) of :meth:`add_norm`, this
        array being its saved ``s``: the norm's input gradient from ``grad_y`` plus ``grad_s`` (None: s had no
        other use), written once; with ``low_dtype`` (narrower than s's) written a second time in it, rounded
        once (the gradient of a 16-bit addend of a float32 ``s``), in the same pass on cuda."""
        natives = self._natives(grad_y, grad_s, self, weight, bias, mean, rstd)
        ds, dw, db, low = self._ops["add_norm_backward"](
            *natives, bool(rms), bool(grad_weight), bool(grad_bias), low_dtype
        )
        wrap = self._wrap
        return (
            wrap(ds),
            None if dw is None else wrap(dw),
            None if db is None else wrap(db),
            None if low is None else wrap(low),
        )

    # ------------------------------------------------- recurrent nets (backends/*/rnn.py)
    def _rnn_check(self, op: str, *others: NDArray | None) -> None:
        for other in others:
            if other is not None:
                self._same_device(other)
                if other.dtype != self.dtype:
                    raise RuntimeError(f"{op}: expected every operand in {self.dtype.name}, got {other.dtype.name}")
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f"\"{op}\" not implemented for '{_TORCH_SCALAR_NAMES[self.dtype.name]}'")

    def lstm_cell(
        self, hidden_gates: NDArray, cx: NDArray, input_bias: NDArray | None = None, hidden_bias: NDArray | None = None
    ) -> tuple[NDArray, NDArray, NDArray]:
        """torch's fused LSTM cell with this array as x @ W_ih^T (n, 4H): (hy, cy, workspace = the activated
        gates i, f, g, o), from h @ W_hh^T, the previous cell state cx (n, H) and the optional biases."""
        self._rnn_check("lstm_cell", hidden_gates, cx, input_bias, hidden_bias)
        hy, cy, ws = self._ops["lstm_cell"](*self._natives(self, hidden_gates, cx, input_bias, hidden_bias))
        return self._like(hy), self._like(cy), self._like(ws)

    def lstm_cell_backward(
        self, grad_hy: NDArray | None, grad_cy: NDArray | None, cx: NDArray, cy: NDArray
    ) -> tuple[NDArray, NDArray]:
        """(gradient of the gate pre-activations, gradient of cx) of :meth:`lstm_cell`, this array its workspace."""
        self._rnn_check("lstm_cell_backward", grad_hy, grad_cy, cx, cy)
        dgates, dcx = self._ops["lstm_cell_backward"](*self._natives(grad_hy, grad_cy, cx, cy, self))
        return self._like(dgates), self._like(dcx)

    def gru_cell(
        self, hidden_gates: NDArray, hx: NDArray, input_bias: NDArray | None = None, hidden_bias: NDArray | None = None
    ) -> tuple[NDArray, NDArray]:
        """torch's fused GRU cell with this array as x @ W_ih^T (n, 3H): (hy, workspace = r, z, n, h_n)."""
        self._rnn_check("gru_cell", hidden_gates, hx, input_bias, hidden_bias)
        hy, ws = self._ops["gru_cell"](*self._natives(self, hidden_gates, hx, input_bias, hidden_bias))
        return self._like(hy), self._like(ws)

    def gru_cell_backward(self, grad_hy: NDArray, hx: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        """Gradients of :meth:`gru_cell`'s two gate products and the direct part of hx's (dh * z); this array
        is its workspace."""
        self._rnn_check("gru_cell_backward", grad_hy, hx)
        dxg, dhg, dhx = self._ops["gru_cell_backward"](*self._natives(grad_hy, hx, self))
        return self._like(dxg), self._like(dhg), self._like(dhx)

    def rnn_sequence(
        self,
        mode: str,
        batch_sizes: Sequence[int],
        h0: NDArray,
        c0: NDArray | None,
        w_hh: NDArray,
        b_hh: NDArray | None,
        w_hr: NDArray | None,
        reverse: bool,
    ) -> tuple[NDArray, NDArray | None, NDArray | None, NDArray | None]:
        """One recurrent layer over a sequence, this array its input projection x @ W_ih^T + b_ih with rows
        packed by time step (``batch_sizes``); ``mode`` "lstm", "gru", "rnn_tanh" or "rnn_relu". Returns
        (hidden-state slots (T + 1, B, P), cell-state slots or None, per-row workspace or None, the
        unprojected hidden states (N, H) with ``w_hr`` or None): the layout of backends/cuda/rnn.py."""
        self._rnn_check("rnn_sequence", h0, c0, w_hh, b_hh, w_hr)
        if mode not in _RNN_MODES:
            raise ValueError(f"unknown recurrent mode {mode!r}; expected one of {_RNN_MODES}")
        args = self._natives(self, h0, c0, w_hh, b_hh, w_hr)
        hs, cs, ws, hraw = self._ops["rnn_sequence"](mode, args[0], tuple(batch_sizes), *args[1:], bool(reverse))
        return tuple(None if a is None else self._like(a) for a in (hs, cs, ws, hraw))  # type: ignore[return-value]

    def rnn_sequence_backward(
        self,
        mode: str,
        grad_out: NDArray | None,
        grad_hn: NDArray | None,
        grad_cn: NDArray | None,
        cs: NDArray | None,
        ws: NDArray | None,
        hraw: NDArray | None,
        w_hh: NDArray,
        w_hr: NDArray | None,
        batch_sizes: Sequence[int],
        reverse: bool,
    ) -> tuple[NDArray, NDArray, NDArray, NDArray | None, NDArray | None]:
        """The backward of :meth:`rnn_sequence`, this array its hidden-state slots: (gradient of the input
        projection (N, G*H), of the recurrent product (the same array but for a GRU), of h0, of c0 or None,
        of the projected outputs (N, P) with ``w_hr`` or None)."""
        self._rnn_check("rnn_sequence_backward", grad_out, grad_hn, grad_cn, cs, ws, hraw, w_hh, w_hr)
        args = self._natives(grad_out, grad_hn, grad_cn, self, cs, ws, hraw, w_hh, w_hr)
        out = self._ops["rnn_sequence_backward"](mode, *args, tuple(batch_sizes), bool(reverse))
        return tuple(None if a is None else self._like(a) for a in out)  # type: ignore[return-value]

    def attention_supported(self) -> bool:
        """Whether :meth:`attention` takes this array as its query on this device (dtype, head dim)."""
        return bool(self._ops["attention_supported"](self.dtype.name, self.shape[-1]))

    def attention(
        self, key: NDArray, value: NDArray, mask: NDArray | None, dropout_p: float, is_causal: bool, scale: float
    ) -> tuple[NDArray, NDArray | None, object]:
        """Fused scaled dot-product attention with this array as the (B, Hq, Lq, D) query; key / value
        (B, Hkv, Lk, D) with Hkv dividing Hq; ``mask`` bool (True = may attend) or additive, broadcastable
        to (B, Hq, Lq, Lk). Returns (output, the per-row logsumexp (cuda; None on cpu), the dropout
        stream's state for :meth:`attention_backward`)."""
        q, k, v, m = self._natives(self, key, value, mask)
        out, lse, rng = self._ops["attention"](q, k, v, m, float(dropout_p), bool(is_causal), float(scale))
        return self._wrap(out), None if lse is None else self._wrap(lse), rng

    def attention_backward(
        self, query, key, value, output, lse, mask, dropout_p: float, is_causal: bool, scale: float, rng
    ) -> tuple[NDArray, NDArray, NDArray]:
        """(dq, dk, dv) of :meth:`attention`, given this array as the gradient of its output."""
        g, q, k, v, o, lse_, m = self._natives(self, query, key, value, output, lse, mask)
        grads = self._ops["attention_backward"](
            g, q, k, v, o, lse_, m, float(dropout_p), bool(is_causal), float(scale), rng
        )
        dq, dk, dv = (self._wrap(x) for x in grads)
        return dq, dk, dv

    # ------------------------------------------------------------------ math
    # More elementwise math and the ternary ops (backends/*/elementwise.py: unary and binary
    # names go through the backends' "unary" / "binary"), scans (scan.py), triangles (creation.py).
    def _natives(self, *operands) -> list:
        """Operands for a backend op: NDArrays (on this device) as native arrays; scalars and None as they are."""
        out = []
        for x in operands:
            if isinstance(x, NDArray):
                self._same_device(x)
                x = x._data
            out.append(x)
        return out

    def expm1(self) -> NDArray:
        return self.unary("expm1")

    def log10(self) -> NDArray:
        return self.unary("log10")

    def erf(self) -> NDArray:
        return self.unary("erf")

    def square(self) -> NDArray:
        return self.unary("square")

    def gelu(self, approximate: str = "none") -> NDArray:
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        return self.unary("gelu" if approximate == "none" else "gelu_tanh")

    def atan2(self, other: NDArray) -> NDArray:
        return self._binary("atan2", other)

    def floor_divide(self, other) -> NDArray:
        return self._binary("floor_divide", other)

    def remainder(self, other) -> NDArray:
        return self._binary("remainder", other)

    def fmod(self, other) -> NDArray:
        return self._binary("fmod", other)

    def lerp(self, end: NDArray, weight) -> NDArray:
        """self + weight * (end - self); weight a scalar or an NDArray, all broadcasting."""
        return self._wrap(self._ops["lerp"](*self._natives(self, end, weight)))

    def addcmul(self, tensor1: NDArray, tensor2: NDArray, value=1) -> NDArray:
        """self + value * tensor1 * tensor2, with torch's type promotion over the three arrays."""
        return self._wrap(self._ops["addcmul"](*self._natives(self, tensor1, tensor2), value))

    def addcdiv(self, tensor1: NDArray, tensor2: NDArray, value=1) -> NDArray:
        """self + value * tensor1 / tensor2 (tensor1 and tensor2 may not both be integers)."""
        return self._wrap(self._ops["addcdiv"](*self._natives(self, tensor1, tensor2), value))

    def searchsorted(self, values: NDArray, right: bool = False, out_int32: bool = False) -> NDArray:
        """Insertion indices of ``values`` (R x M) in the sorted rows of self (R x N); backends/*/search.py."""
        return self._wrap(self._ops["searchsorted"](*self._natives(self, values), right, out_int32))

    def cumsum(self, dim: int, dtype=None) -> NDArray:
        return self._wrap(self._ops["cumsum"](self._data, dim, None if dtype is None else as_dtype(dtype)))

    def cumprod(self, dim: int, dtype=None) -> NDArray:
        return self._wrap(self._ops["cumprod"](self._data, dim, None if dtype is None else as_dtype(dtype)))

    def tril(self, diagonal: int = 0) -> NDArray:
        return self._wrap(self._ops["tril"](self._data, diagonal))

    def triu(self, diagonal: int = 0) -> NDArray:
        return self._wrap(self._ops["triu"](self._data, diagonal))

    # ----------------------------------------------------------------- views
    def reshape(self, *shape) -> NDArray:
        return self._like(self._ops["reshape"](self._data, _shape_args(shape)))

    def view(self, *shape) -> NDArray:
        return self._like(self._ops["view"](self._data, _shape_args(shape)))

    def permute(self, *dims) -> NDArray:
        return self._like(self._ops["permute"](self._data, _shape_args(dims)))

    def transpose(self, dim0: int, dim1: int) -> NDArray:
        return self._like(self._ops["transpose"](self._data, dim0, dim1))

    @property
    def T(self) -> NDArray:
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> NDArray:
        if self.ndim < 2:
            if self.ndim == 0:
                return self  # torch: deprecated, the identity
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    def expand(self, *shape) -> NDArray:
        return self._like(self._ops["expand"](self._data, _shape_args(shape)))

    def broadcast_to(self, shape) -> NDArray:
        return self.expand(*shape)

    def squeeze(self, dim=None) -> NDArray:
        return self._like(self._ops["squeeze"](self._data, dim))

    def unsqueeze(self, dim: int) -> NDArray:
        return self._like(self._ops["unsqueeze"](self._data, dim))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> NDArray:
        return self._like(self._ops["flatten"](self._data, start_dim, end_dim))

    def narrow(self, dim: int, start: int, length: int) -> NDArray:
        return self._like(self._ops["narrow"](self._data, dim, start, length))

    def as_strided(self, size, stride, storage_offset: int | None = None) -> NDArray:
        return self._like(self._ops["as_strided"](self._data, tuple(size), tuple(stride), storage_offset))

    def contiguous(self) -> NDArray:
        return self._like(self._ops["contiguous"](self._data))

    def __getitem__(self, index) -> NDArray:
        return self._like(self._ops["getitem"](self._data, _unwrap_index(index, self)))

    def __setitem__(self, index, value) -> None:
        if isinstance(value, NDArray):
            self._same_device(value)
            value = value._data
        self._ops["setitem"](self._data, _unwrap_index(index, self), value)

    def index_put_(self, indices, values, accumulate: bool = False) -> NDArray:
        """self[indices] = values, or += with ``accumulate`` (repeated indices then add up)."""
        if isinstance(values, NDArray):
            self._same_device(values)
            values = values._data
        self._ops["index_put_"](self._data, _unwrap_index(indices, self), values, accumulate)
        return self

    # ------------------------------------------- indexing, selection, sorting (torch semantics)
    # gather / scatter / scatter_add / index_select / index_add / masked_fill / masked_select /
    # nonzero / take_along_dim / embedding / sort / argsort / topk. Backends register the in-place forms
    # (scatter_, scatter_add_, index_add_, masked_fill_); the out-of-place ones clone first.
    # Index and mask arrays must be on this array's device (torch raises there too).
    def _operand(self, x: NDArray):
        self._same_device(x)
        return x._data

    def gather(self, dim: int, index: NDArray) -> NDArray:
        return self._wrap(self._ops["gather"](self._data, dim, self._operand(index)))

    def scatter_(self, dim: int, index: NDArray, src) -> NDArray:
        """self[..., index[i], ...] = src[i] along dim; ``src`` an array or a scalar."""
        src = self._operand(src) if isinstance(src, NDArray) else src
        self._ops["scatter_"](self._data, dim, self._operand(index), src)
        return self

    def scatter(self, dim: int, index: NDArray, src) -> NDArray:
        return self.clone().scatter_(dim, index, src)

    def scatter_add_(self, dim: int, index: NDArray, src: NDArray) -> NDArray:
        """self[..., index[i], ...] += src[i] along dim (repeated indices add up)."""
        self._ops["scatter_add_"](self._data, dim, self._operand(index), self._operand(src))
        return self

    def scatter_add(self, dim: int, index: NDArray, src: NDArray) -> NDArray:
        return self.clone().scatter_add_(dim, index, src)

    def index_select(self, dim: int, index: NDArray) -> NDArray:
        return self._wrap(self._ops["index_select"](self._data, dim, self._operand(index)))

    def index_add_(self, dim: int, index: NDArray, source: NDArray, alpha=1) -> NDArray:
        """self[..., index[j], ...] += alpha * source[..., j, ...] (repeated indices add up)."""
        self._ops["index_add_"](self._data, dim, self._operand(index), self._operand(source), alpha)
        return self

    def index_add(self, dim: int, index: NDArray, source: NDArray, alpha=1) -> NDArray:
        return self.clone().index_add_(dim, index, source, alpha)

    def masked_fill_(self, mask: NDArray, value) -> NDArray:
        """``value`` where ``mask`` (bool, broadcast to self's shape); a scalar or a 0-d array."""
        self._ops["masked_fill_"](self._data, self._operand(mask), _fill_value(value))
        return self

    def masked_fill(self, mask: NDArray, value) -> NDArray:
        """Out of place, self and mask broadcast together first (as torch)."""
        shape = broadcast_shapes(self.shape, mask.shape)
        base = self if shape == self.shape else self.expand(*shape)
        return base.clone().masked_fill_(mask, value)

    def masked_select(self, mask: NDArray) -> NDArray:
        """The 1-d array of the elements where ``mask`` holds (both broadcast), in row-major order."""
        return self._wrap(self._ops["masked_select"](self._data, self._operand(mask)))

    def nonzero(self, as_tuple: bool = False):
        """int64 (count, ndim) coordinates of the nonzero elements; ``as_tuple``: one 1-d array per dim."""
        if as_tuple:
            if self.ndim == 0:  # torch: a 0-d input counts as 1-d here
                return self.reshape(1).nonzero(as_tuple=True)
            coords = self.nonzero()
            return tuple(coords[:, d] for d in range(self.ndim))
        return self._wrap(self._ops["nonzero"](self._data))

    def take_along_dim(self, indices: NDArray, dim: int | None = None) -> NDArray:
        """gather with indices broadcast against self over every dim but ``dim``; without
        ``dim``, over the flattened array. Out-of-range indices raise, as gather does."""
        if indices.dtype.name != "int64":
            raise RuntimeError(
                "torch.take_along_dim(): dtype of indices should be Long but got "
                f"{_TORCH_SCALAR_NAMES[indices.dtype.name]}"
            )
        if dim is None:
            return self.reshape(-1).gather(0, indices.reshape(-1))
        if self.ndim != indices.ndim:
            raise RuntimeError(
                "torch.take_along_dim(): input and indices should have the same number of "
                f"dimensions, but got {self.ndim} dimensions for input, and {indices.ndim} "
                "dimensions for indices"
            )
        dim = normalize_dim(dim, self.ndim)
        if self.ndim == 0:
            return self.gather(0, indices)
        rest = broadcast_shapes(
            self.shape[:dim] + (1,) + self.shape[dim + 1 :], indices.shape[:dim] + (1,) + indices.shape[dim + 1 :]
        )
        return self.expand(*rest[:dim], self.shape[dim], *rest[dim + 1 :]).gather(
            dim, indices.expand(*rest[:dim], indices.shape[dim], *rest[dim + 1 :])
        )

    def embedding(self, indices: NDArray) -> NDArray:
        """torch.embedding(self, indices): the rows of this (num_weights, D) array that ``indices`` (int64 or
        int32, any shape) pick, shape ``indices.shape + (D,)``; IndexError outside [0, num_weights)."""
        return self._wrap(self._ops["embedding"](self._data, self._operand(indices)))

    def embedding_backward(self, indices: NDArray, num_weights: int, padding_idx: int | None = None) -> NDArray:
        """The gradient of embedding's weight, given this array as the gradient of its output (its rows are
        taken as indices.numel() rows of D, as torch views them): each row summed into row ``indices[i]`` of a
        zero (num_weights, D) array, row ``padding_idx`` (negative: from the end) left at zero. torch's
        embedding_dense_backward without scale_grad_by_freq."""
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_weights
        grad = self.reshape(*indices.shape, self.shape[-1])
        return self._wrap(
            self._ops["embedding_backward"](grad._data, self._operand(indices), int(num_weights), padding_idx)
        )

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> tuple[NDArray, NDArray]:
        """(sorted values, int64 indices) along dim; NaN sorts as the largest value."""
        values, indices = self._ops["sort"](self._data, dim, descending, stable)
        return self._wrap(values), self._wrap(indices)

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> NDArray:
        return self.sort(dim, descending, stable)[1]

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[NDArray, NDArray]:
        """(values, int64 indices) of the k largest (or smallest) along dim."""
        values, indices = self._ops["topk"](self._data, int(k), dim, largest, sorted)
        return self._wrap(values), self._wrap(indices)

    # ---------------------------------------------------------------- copies
    def astype(self, dtype) -> NDArray:
        if dtype.__class__ is not DType:
            dtype = as_dtype(dtype)
        if dtype is self.dtype:
            return self
        return NDArray(self._ops["cast"](self._data, dtype), self.device, dtype)

    def clone(self) -> NDArray:
        return self._like(self._ops["clone"](self._data))

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

    # Host-memory state (torch's pin_memory / share_memory_ / record_stream): each device answers for its own.
    def is_pinned(self) -> bool:
        return bool(self._ops["is_pinned"](self._data))

    def pin_memory(self) -> NDArray:
        return self._like(self._ops["pin_memory"](self._data))

    def is_shared(self) -> bool:
        return bool(self._ops["is_shared"](self._data))

    def share_memory(self) -> NDArray:
        """Move the memory to shared memory where the device has such a thing (the values do not change)."""
        self._ops["share_memory"](self._data)
        return self

    def record_stream(self, stream) -> None:
        self._ops["record_stream"](self._data, stream)

    # ------------------------------------------- more views; in-place random fills, dropout
    # diagonal and unfold are strided views of the same memory (each device registers
    # its geometry); unflatten, movedim and swapaxes reduce to view / permute / transpose.
    # The random fills and dropout draw from the device's generator; arguments are
    # checked here, with torch's messages, so that both devices refuse the same input.
    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> NDArray:
        return self._like(self._ops["diagonal"](self._data, offset, dim1, dim2))

    def unfold(self, dimension: int, size: int, step: int) -> NDArray:
        return self._like(self._ops["unfold"](self._data, dimension, size, step))

    def unflatten(self, dim: int, sizes) -> NDArray:
        return self.view(*unflatten_shape(self.shape, dim, sizes))

    def movedim(self, source, destination) -> NDArray:
        return self.permute(*movedim_order(self.ndim, source, destination))

    moveaxis = movedim

    def swapaxes(self, axis0: int, axis1: int) -> NDArray:
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def _floating_only(self, op: str) -> None:
        if not self.dtype.is_floating_point:
            raise NotImplementedError(f"\"{op}\" not implemented for '{self.dtype.name}'")

    def uniform_(self, low: float = 0.0, high: float = 1.0) -> NDArray:
        self._floating_only("uniform_")
        if low > high:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
        self._ops["uniform_"](self._data, float(low), float(high))
        return self

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> NDArray:
        self._floating_only("normal_")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        self._ops["normal_"](self._data, float(mean), float(std))
        return self

    def exponential_(self, lambd: float = 1.0) -> NDArray:
        self._floating_only("exponential_")
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        self._ops["exponential_"](self._data, float(lambd))
        return self

    def bernoulli_(self, p=0.5) -> NDArray:
        """Each element 1 with probability ``p`` (a number, or an array broadcast to this shape), else 0."""
        if isinstance(p, NDArray):
            self._same_device(p)
            if p.numel() and ((p < 0) | (p > 1)).any().item():
                raise RuntimeError("bernoulli_ expects all elements of p to be in [0, 1]")
            p = p.expand(*self.shape)._data
        elif not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        self._ops["bernoulli_"](self._data, p)
        return self

    def bernoulli(self, p=None) -> NDArray:
        """torch.bernoulli: a new array of 0 / 1 drawn with this array's probabilities (or ``p``)."""
        self._floating_only("bernoulli")
        out = self._wrap(self._ops["empty"](self.shape, self.dtype, self.device))
        return out.bernoulli_(self if p is None else p)

    def dropout(self, p: float = 0.5, train: bool = True) -> tuple[NDArray, NDArray]:
        """torch.native_dropout: ``(self * mask / (1 - p), mask)``, each element kept (``mask`` True, bool)
        with probability 1 - p, drawn from the device's generator; p = 1 keeps none (``self * 0``: a NaN
        stays NaN, as torch). ``train=False``: a copy and an all-True mask."""
        if train:
            if not 0 <= p <= 1:
                raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
            if not self.dtype.is_floating_point:
                raise RuntimeError(
                    f"result type Float can't be cast to the desired output type {_TORCH_SCALAR_NAMES[self.dtype.name]}"
                )
        output, mask = self._ops["dropout"](self._data, float(p), bool(train))
        return self._wrap(output), self._wrap(mask)

    def dropout_backward(self, mask: NDArray, scale: float) -> NDArray:
        """torch.native_dropout_backward, given this array as the gradient of dropout's output:
        ``self * mask * scale`` (scale: 1 / (1 - p), 0 for p = 1, 1 when not training)."""
        return self._wrap(self._ops["dropout_backward"](self._data, self._operand(mask), float(scale)))

    def random_(self, low: int | None = None, high: int | None = None) -> NDArray:
        """Integers uniform in [low, high); random_(high) is [0, high); random_() spans the dtype."""
        if low is not None and high is None:
            low, high = 0, low
        if low is not None and high is not None and low >= high:  # (high is set when low is)
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        self._ops["random_"](self._data, low, high)
        return self


def _unwrap_index(index, owner: NDArray):
    """Replace NDArrays inside an index by their native arrays. An index on the cpu moves to the
    owner's device, as torch accepts cpu indices for cuda tensors; any other device must match."""
    if isinstance(index, NDArray):
        if index.device != owner.device:
            if index.device.type != "cpu":
                raise RuntimeError(
                    f"indices should be either on cpu or on the same device as the indexed tensor ({owner.device})"
                )
            index = index.to(owner.device)
        return index._data
    if isinstance(index, tuple):
        return tuple(_unwrap_index(i, owner) for i in index)
    return index


# torch's ScalarType names, as its messages print a dtype.
_TORCH_SCALAR_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}


def _wide_bias(input: NDArray, bias: NDArray) -> bool:
    """A float32 bias of a float16 / bfloat16 product (NDArray.linear adds it before rounding)."""
    return bias.dtype.name == "float32" and input.dtype.name in ("float16", "bfloat16")


def _fill_value(value):
    """A fill value as a Python scalar: a 0-d array is read back (torch takes both)."""
    if isinstance(value, NDArray):
        if value.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        return value.item()
    return value


def _unary_method(op: str) -> Callable[[NDArray], NDArray]:
    """NDArray.<op>(): NDArray.unary(op), with its resolved-entry path inline (one call fewer)."""

    def method(self: NDArray) -> NDArray:
        ops = self._ops
        entry = ops.resolved[("unary", op, self.dtype)]
        if entry is not None:
            out = entry[0](self._data)
            dtype = entry[1]
            return NDArray(out, self.device, ops["dtype_of"](out) if dtype is None else dtype, ops)
        return self._wrap(ops["unary"](op, self._data))

    method.__name__ = op
    method.__qualname__ = f"NDArray.{op}"
    method.__doc__ = f"Elementwise {op}."
    return method


for _op in _UNARY_OPS:
    setattr(NDArray, _op, _unary_method(_op))
del _op
