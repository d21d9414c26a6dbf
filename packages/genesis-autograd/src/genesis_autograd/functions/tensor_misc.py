"""Tensor's small methods torch has beside its ops: ``new_*`` factories, casts by name (``byte``, ``char``,
``type_as``), size and dtype queries (``nbytes``, ``itemsize``, ``is_signed``, ``dim_order``...), host-memory
state (``pin_memory``, ``share_memory_``, ``record_stream``), the cpu-only Python callbacks (``apply_``,
``map_``, ``map2_``), ``fill_diagonal_``, ``sum_to_size`` and ``as_subclass``.

None of them is a new differentiable op: each is a query, a factory, or a composition of ops that already
record their gradients.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import genesis_ndarray as nd
from genesis_ndarray import Device, DType, as_dtype, int8, resolve_device, uint8

from ..tensor_base import Scalar, TensorBase
from ._util import is_tensor, reduce_to
from ._util import wrap as _wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


class Layout:
    """How a tensor's elements are laid out in memory: genesis has one layout, ``strided`` (torch.strided)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"genesis.{self.name}"


strided = Layout("strided")


def sizes_of(args: tuple) -> tuple[int, ...]:
    """A shape given as several ints or as one sequence, refused as torch does where a size is negative."""
    if len(args) == 1 and not isinstance(args[0], int):
        args = tuple(args[0])
    sizes = tuple(int(a) for a in args)
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(sizes)}")
    return sizes


def _dim_order(shape: Sequence[int], strides: Sequence[int]) -> list[int]:
    """The dims from outermost to innermost in memory (torch's dim_order): larger strides first; a
    zero stride says nothing (the dim keeps its place), equal strides put the smaller dim inside."""
    ndim = len(shape)

    def compare(a: int, b: int) -> int:  # > 0: dim a lies inside dim b (moves toward the front of ``perm``)
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if shape[b] >= shape[a] else 1
        return -1 if sb > sa else 1

    perm = list(reversed(range(ndim)))  # innermost first while sorting
    for i in range(1, ndim):
        j = i
        for k in reversed(range(i)):
            c = compare(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    return list(reversed(perm))


class TensorMiscMixin(TensorBase):
    """Factories on a tensor's dtype and device, queries, and cpu-only callbacks."""

    __slots__ = ()

    # ------------------------------------------------------------- new_* factories
    def _new(self, make: Callable[[DType, Device], nd.NDArray], dtype: Any, device: Any, requires_grad: bool) -> Tensor:
        dt = self.dtype if dtype is None else as_dtype(dtype)
        dev = self.device if device is None else resolve_device(device)
        out = _wrap(self, make(dt, dev))
        if requires_grad:
            out.requires_grad_(True)
        return out

    def new_empty(
        self, *size: int | Sequence[int], dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        """An uninitialised tensor of ``size`` with this tensor's dtype and device (unless given)."""
        return self._new(lambda dt, dev: nd.empty(*sizes_of(size), dtype=dt, device=dev), dtype, device, requires_grad)

    def new_zeros(
        self, *size: int | Sequence[int], dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        """A tensor of zeros of ``size`` with this tensor's dtype and device (unless given)."""
        return self._new(lambda dt, dev: nd.zeros(*sizes_of(size), dtype=dt, device=dev), dtype, device, requires_grad)

    def new_ones(
        self, *size: int | Sequence[int], dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        """A tensor of ones of ``size`` with this tensor's dtype and device (unless given)."""
        return self._new(lambda dt, dev: nd.ones(*sizes_of(size), dtype=dt, device=dev), dtype, device, requires_grad)

    def new_full(
        self,
        size: Sequence[int],
        fill_value: Scalar,
        *,
        dtype: Any = None,
        device: Any = None,
        requires_grad: bool = False,
    ) -> Tensor:
        """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device (unless given)."""
        shape = sizes_of((size,))
        return self._new(lambda dt, dev: nd.full(shape, fill_value, dtype=dt, device=dev), dtype, device, requires_grad)

    def new_tensor(self, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
        """A new leaf holding a copy of ``data`` (numbers, lists, a numpy array or a Tensor), with this tensor's
        dtype and device unless given."""
        if is_tensor(data):
            data = data.data
        return self._new(lambda dt, dev: nd.array(data, dtype=dt, device=dev), dtype, device, requires_grad)

    def new_empty_strided(
        self,
        size: Sequence[int],
        stride: Sequence[int],
        *,
        dtype: Any = None,
        device: Any = None,
        requires_grad: bool = False,
    ) -> Tensor:
        """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements), this tensor's dtype and
        device unless given."""
        shape, steps = sizes_of((size,)), tuple(int(s) for s in stride)
        if len(shape) != len(steps):
            raise RuntimeError(
                f"mismatch in length of strides and shape: size has {len(shape)} dims, stride has {len(steps)}"
            )
        extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, steps))

        def make(dt: DType, dev: Device) -> nd.NDArray:
            return nd.empty(extent, dtype=dt, device=dev).as_strided(shape, steps, 0)

        return self._new(make, dtype, device, requires_grad)

    # ------------------------------------------------------------- casts by name
    def byte(self) -> Tensor:
        """``self.to(genesis.uint8)``."""
        return self.to(uint8)

    def char(self) -> Tensor:
        """``self.to(genesis.int8)``."""
        return self.to(int8)

    def type_as(self, other: Tensor) -> Tensor:
        """This tensor in ``other``'s dtype, and on its device when that is another device type (as torch's
        ``self.type(other.type())``); self when both already match."""
        if not is_tensor(other):
            raise TypeError(f"type_as(): argument 'other' must be Tensor, not {type(other).__name__}")
        if other.device.type != self.device.type:
            return self.to(other.device, other.dtype)
        return self.to(other.dtype)

    # ------------------------------------------------------------- queries
    @property
    def nbytes(self) -> int:
        """The bytes the elements take: ``numel() * itemsize`` (not counting any gap between them)."""
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes (``element_size()``)."""
        return self.dtype.itemsize

    def nelement(self) -> int:
        """The number of elements (``numel()``)."""
        return math.prod(self.shape)

    def ndimension(self) -> int:
        """The number of dimensions (``dim()``)."""
        return self.ndim

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor lives in host memory."""
        return self.device.type == "cpu"

    def get_device(self) -> int:
        """The CUDA device index of a cuda tensor; -1 for a cpu tensor."""
        if self.device.type == "cpu":
            return -1
        index = resolve_device(self.device).index
        return 0 if index is None else int(index)

    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (False for uint8 and bool)."""
        return self.dtype.is_signed

    def is_same_size(self, other: Tensor) -> bool:
        """Whether ``other`` has this tensor's shape."""
        if not is_tensor(other):
            raise TypeError(f"is_same_size(): argument 'other' must be Tensor, not {type(other).__name__}")
        return tuple(self.shape) == tuple(other.shape)

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor; torch's RuntimeError for none or several elements."""
        n = math.prod(self.shape)
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def is_inference(self) -> bool:
        """Whether this is an inference tensor. genesis tensors made in inference_mode are ordinary tensors
        that record no graph, so this is always False."""
        return False

    @property
    def layout(self) -> Layout:
        """The memory layout: always ``strided``."""
        return strided

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf)."""
        return self._output_nr

    def const_data_ptr(self) -> int:
        """The address of the first element (``data_ptr()``), for reading."""
        return self.data.data_ptr()

    def dim_order(self, *, ambiguity_check: bool | list = False) -> tuple[int, ...]:
        """The dims from outermost to innermost in memory: ``(0, 1, 2, 3)`` for a contiguous tensor,
        ``(0, 2, 3, 1)`` for channels-last. ``ambiguity_check`` raises where strides leave the order open."""
        shape, strides = tuple(self.shape), tuple(self.stride())
        if ambiguity_check and (len(set(strides)) < len(strides) or 1 in shape):
            raise RuntimeError("The tensor does not have unique dim order.")
        if self.is_contiguous():
            return tuple(range(len(shape)))
        return tuple(_dim_order(shape, strides))

    # ------------------------------------------------------------- host memory
    def is_pinned(self) -> bool:
        """Whether the tensor lives in page-locked host memory (a cuda tensor never does)."""
        return self.data.is_pinned()

    def pin_memory(self) -> Tensor:
        """A copy of this cpu tensor in page-locked host memory (self if it is pinned already)."""
        if self.is_pinned():
            return self  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases
        return _wrap(self, self.data.pin_memory())

    def is_shared(self) -> bool:
        """Whether the memory can be seen by other processes (shared host memory; cuda memory always can)."""
        return self.data.is_shared()

    def share_memory_(self) -> Tensor:
        """Move this cpu tensor's memory to shared memory, in place (a no-op on cuda); returns self."""
        self.data.share_memory()
        return self  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases

    def record_stream(self, stream: Any) -> None:
        """Mark this cuda tensor's memory as used by ``stream``: the allocator will not reuse it after it is
        freed until the work queued on ``stream`` so far has run."""
        self.data.record_stream(stream)

    # ------------------------------------------------------------- cpu callbacks
    def _callback_target(self, op: str) -> None:
        if self.device.type != "cpu":
            raise TypeError(f"{op} is only implemented on CPU tensors")
        if self.requires_grad:
            raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")

    def _write_values(self, values: list) -> Tensor:
        self.data.copy_(nd.array(values, dtype=self.dtype).reshape(*self.shape))
        self._version[0] += 1
        return self  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases

    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:
        """Replace each element ``x`` by ``callable(x)``, in place (cpu only; slow: one Python call each)."""
        self._callback_target("apply_")
        return self._write_values([callable(x) for x in self.data.reshape(-1).tolist()])

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
        """``self[i] = callable(self[i], tensor[i])`` for every element, ``tensor`` broadcast to self's shape,
        in place (cpu only)."""
        self._callback_target("map_")
        other = tensor.data.expand(*self.shape).reshape(-1).tolist()
        mine = self.data.reshape(-1).tolist()
        return self._write_values([callable(a, b) for a, b in zip(mine, other)])

    def map2_(self, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:
        """``self[i] = callable(self[i], x[i], y[i])``, ``x`` and ``y`` broadcast to self's shape, in place
        (cpu only)."""
        self._callback_target("map2_")
        xs = x.data.expand(*self.shape).reshape(-1).tolist()
        ys = y.data.expand(*self.shape).reshape(-1).tolist()
        mine = self.data.reshape(-1).tolist()
        return self._write_values([callable(a, b, c) for a, b, c in zip(mine, xs, ys)])

    # ------------------------------------------------------------- compositions
    def fill_diagonal_(self, fill_value: Scalar, wrap: bool = False) -> Tensor:
        """Write ``fill_value`` on the main diagonal, in place (every dim of equal size, or a 2-D matrix);
        with ``wrap``, a tall matrix's diagonal starts again every ``columns + 1`` rows, as torch."""
        shape = tuple(self.shape)
        if len(shape) < 2:
            raise RuntimeError("dimensions must larger than 1")
        if len(shape) > 2 and len(set(shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        numel = math.prod(shape)
        # flat (row-major) positions of the diagonal: one step moves by one along every dim
        step = sum(math.prod(shape[d + 1 :]) for d in range(len(shape)))
        end = min(shape) * step
        if len(shape) == 2 and wrap and shape[0] > shape[1] + 1:
            end = numel
        flat = nd.arange(0, min(end, numel), step, device=self.device)
        index = tuple(_wrap(self, i) for i in _unravel(flat, shape))
        self[index] = fill_value  # type: ignore[index]  # Tensor.__setitem__ (getitem.py)
        return self  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases

    def sum_to_size(self, *size: int | Sequence[int]) -> Tensor:
        """The sum of this tensor over the dims that broadcasting ``size`` to its shape would expand."""
        target = sizes_of(size)
        shape = tuple(self.shape)
        expandable = len(target) <= len(shape) and all(
            t == s or t == 1 for t, s in zip(reversed(target), reversed(shape))
        )
        if not expandable:
            raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(shape)}}}.")
        return reduce_to(self, (target, self.dtype))

    def as_subclass(self, cls: type) -> Any:
        """This tensor as an instance of ``cls`` (a Tensor subclass): the same memory, the same place in
        the graph, without calling ``cls.__init__``."""
        if not (isinstance(cls, type) and issubclass(cls, type(self)._result_type)):
            raise TypeError(f"as_subclass(): cls must be a subclass of Tensor, got {cls!r}")
        out = cls.__new__(cls)
        for slot in TensorBase.__slots__:
            if slot != "__weakref__":
                object.__setattr__(out, slot, getattr(self, slot))
        return out


def _unravel(flat: nd.NDArray, shape: tuple[int, ...]) -> list[nd.NDArray]:
    """Row-major flat indices as one index array per dim."""
    out = []
    for d in range(len(shape)):
        inner = math.prod(shape[d + 1 :])
        out.append((flat // inner) % shape[d])
    return out
