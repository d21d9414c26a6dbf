"""Writes through indices: take, put, index_copy, index_fill, index_put (accumulating too), masked_scatter;
and IndexWriteMixin, their Tensor methods and in-place forms.

Each out-of-place form is a fresh copy with one ``x[index] = v`` write (SetItem: the gradient of the
overwritten slots is zero, the values get the gradient of their slots), or, for index_put with
``accumulate=True``, IndexPutAccumulate (repeated indices add up; each value gets its slot's gradient).
In-place forms write that result back through Tensor._math_inplace. Arguments are checked first with
torch's error classes and messages; bounds are checked on the host (one read of the index's min and max,
none where the host knows the index's range).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..tensor_base import Scalar, TensorBase
from ._util import Primitive, is_tensor, meta, reduce_to, tensor_arg
from .getitem import SetItem, _unwrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor

_TORCH_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
    "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
}  # fmt: skip


def torch_name(dtype: Any) -> str:
    """torch's scalar-type name of a dtype (``Float`` for float32), as its messages spell it."""
    return _TORCH_NAMES.get(dtype.name, dtype.name)


def _tensor(x: Any) -> Tensor:
    """A mixin's ``self`` as the Tensor it is (the mixins are only Tensor's bases), for the type checker."""
    return cast("Tensor", x)


def check_long_index(op: str, index: Any) -> None:
    """torch's refusal of a non-int64 index tensor."""
    if index.dtype.name != "int64":
        raise RuntimeError(f"{op}: Expected a long tensor for index, but got {torch_name(index.dtype)}")


def check_bounds(op: str, index: Any, size: int, dim: int, error: type[Exception] = IndexError) -> None:
    """Every index in [-size, size): else torch's error naming the first offending value. Bounds the host
    knows (an uploaded, arange, argmax or clamped index) decide without reading the device: no stream wait."""
    if index.numel() == 0:
        return
    known = index.data.known_range()
    if known is not None and (known[2] or (-size <= known[0] and known[1] < size)):
        low, high = known[0], known[1]  # inside: nothing to check; exact: the values the device would read
    else:
        low, high = int(index.data.min().item()), int(index.data.max().item())
    if high >= size or low < -size:
        bad = high if high >= size else low
        raise error(f"{op}index {bad} is out of bounds for dimension {dim} with size {size}")


def _along(dim: int, index: Any) -> tuple:
    return (slice(None),) * dim + (index,)


class IndexPutAccumulate(Primitive):
    """out = a with values added at the advanced index (repeated indices add up)."""

    @staticmethod
    def forward(ctx, a, index, values):
        index = _unwrap(index)
        if ctx.records:
            ctx.index = index
            ctx.value_meta = meta(values)
        out = a.data.clone()
        out.index_put_(index, values.data, accumulate=True)
        return out

    @staticmethod
    def backward(ctx, g):
        gv = reduce_to(g[ctx.index], ctx.value_meta) if ctx.needs_input_grad[2] else None
        return g, None, gv


class IndexWriteMixin(TensorBase):
    """Tensor's writes through indices: put, index_copy, index_fill, index_put, masked_scatter (and take)."""

    __slots__ = ()

    def take(self, index: Tensor) -> Tensor:
        """The elements of the flattened tensor at ``index`` (int64; negative counts from the end), in
        ``index``'s shape."""
        index = tensor_arg(self, index, "take", "index")
        check_long_index("take()", index)
        n = _tensor(self).numel()
        if index.numel():
            low, high = int(index.data.min().item()), int(index.data.max().item())
            if high >= n or low < -n:
                bad = high if high >= n else low
                raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
        return _tensor(self).reshape(-1)[index]

    def put(self, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
        """A copy of self with ``source``'s elements written (or with ``accumulate`` added) at the flat
        positions ``index`` of the flattened tensor."""
        index = tensor_arg(self, index, "put", "index")
        source = tensor_arg(self, source, "put", "source")
        check_long_index("put_()", index)
        if source.numel() != index.numel():
            raise IndexError(
                "put_(): Expected source and index to have the same number of elements, but got "
                f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
            )
        if source.dtype is not self.dtype:
            raise RuntimeError(
                "put_(): self and source expected to have the same dtype, but got "
                f"self.dtype = {torch_name(self.dtype)} and source.dtype = {torch_name(source.dtype)}"
            )
        n = _tensor(self).numel()
        if index.numel():
            low, high = int(index.data.min().item()), int(index.data.max().item())
            if high >= n or low < -n:
                bad = high if high >= n else low
                raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
        flat = _tensor(self).reshape(-1)
        out = flat.index_put((index.reshape(-1),), source.reshape(-1), accumulate)
        return out.reshape(tuple(self.shape))

    def put_(self, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
        """In-place version of :meth:`put`."""
        return self._math_inplace("put", index, source, accumulate)

    def index_copy(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """A copy of self with the slices of ``source`` along ``dim`` written at positions ``index`` (1-d int64)."""
        from genesis_ndarray.shape import normalize_dim

        index = tensor_arg(self, index, "index_copy", "index")
        source = tensor_arg(self, source, "index_copy", "source")
        check_long_index("index_copy_()", index)
        d = normalize_dim(dim, max(self.ndim, 1))
        if index.ndim > 1:
            raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
        if source.dtype is not self.dtype:
            raise RuntimeError(
                "index_copy_(): self and source expected to have the same dtype, but got "
                f"(self) {torch_name(self.dtype)} and (source) {torch_name(source.dtype)}"
            )
        if self.ndim == 0:
            return _tensor(source).reshape(()).clone() if index.numel() else _tensor(self).clone()
        want = list(self.shape)
        want[d] = index.numel()
        if list(source.shape) != want and not (source.ndim == 0 and want == [1]):
            for k, (s, w) in enumerate(zip(source.shape, self.shape)):
                if k != d and s != w:
                    raise RuntimeError(
                        "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                        f"shape: {w} at dimension {k} and source slice shape: {s} at dimension {k}."
                    )
            raise RuntimeError(
                f"index_copy_(): Number of indices ({index.numel()}) should be equal to source.size(dim) "
                f"({source.shape[d] if source.ndim > d else 1})"
            )
        check_bounds("index_copy_(): ", index, self.shape[d], d)
        return SetItem.apply(_tensor(self), _along(d, index.reshape(-1)), source.reshape(want))

    def index_copy_(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """In-place version of :meth:`index_copy`."""
        return self._math_inplace("index_copy", dim, index, source)

    def index_fill(self, dim: int, index: Tensor, value: Scalar | Tensor) -> Tensor:
        """A copy of self with ``value`` (a number or a 0-d tensor, which then gets a gradient) in the slices
        at positions ``index`` (1-d int64) along ``dim``."""
        from genesis_ndarray.shape import normalize_dim

        index = tensor_arg(self, index, "index_fill", "index")
        check_long_index("index_fill_()", index)
        if index.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
        if is_tensor(value) and value.ndim != 0:
            raise RuntimeError(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        d = normalize_dim(dim, max(self.ndim, 1))
        size = self.shape[d] if self.ndim else 1
        check_bounds("", index, size, d)
        if self.ndim == 0:
            return SetItem.apply(_tensor(self), (), value) if index.numel() else _tensor(self).clone()
        if is_tensor(value) and value.dtype is not self.dtype:
            value = value.to(self.dtype)
        return SetItem.apply(_tensor(self), _along(d, index.reshape(-1)), value)

    def index_fill_(self, dim: int, index: Tensor, value: Scalar | Tensor) -> Tensor:
        """In-place version of :meth:`index_fill`."""
        return self._math_inplace("index_fill", dim, index, value)

    def index_put(self, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
        """A copy of self with ``values`` (broadcast) written at ``self[indices]`` (a tuple of index
        tensors, as advanced indexing); with ``accumulate``, added there, repeated indices adding up."""
        if is_tensor(indices):
            raise TypeError("index_put(): argument 'indices' must be tuple of Tensors, not Tensor")
        values = tensor_arg(self, values, "index_put", "values")
        if values.dtype is not self.dtype:
            raise RuntimeError(
                "Index put requires the source and destination dtypes match, got "
                f"{torch_name(self.dtype)} for the destination and {torch_name(values.dtype)} for the source."
            )
        index = tuple(slice(None) if i is None else tensor_arg(self, i, "index_put", "indices") for i in indices)
        if accumulate:
            return IndexPutAccumulate.apply(_tensor(self), index, values)
        return SetItem.apply(_tensor(self), index, values)

    def index_put_(self, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
        """In-place version of :meth:`index_put`."""
        return self._math_inplace("index_put", indices, values, accumulate)

    def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor:
        """A copy of self (broadcast with ``mask``) with the first elements of ``source``, in order, written
        where ``mask`` (bool) is True."""
        mask = tensor_arg(self, mask, "masked_scatter", "mask")
        source = tensor_arg(self, source, "masked_scatter", "source")
        if mask.dtype.name != "bool":
            raise RuntimeError(
                f"masked_scatter_ only supports boolean masks, but got mask with dtype {torch_name(mask.dtype)}"
            )
        if source.dtype is not self.dtype:
            raise RuntimeError(
                "masked_scatter: expected self and source to have same dtypes but got"
                f"{torch_name(self.dtype)} and {torch_name(source.dtype)}"
            )
        from genesis_ndarray.shape import broadcast_shapes

        shape = broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        target = _tensor(self).expand(*shape) if tuple(self.shape) != shape else _tensor(self)
        full_mask = _tensor(mask).expand(*shape)
        count = int(full_mask.data.sum().item())
        if source.numel() < count:
            raise RuntimeError("Number of elements of source < number of ones in mask")
        return SetItem.apply(target, full_mask, _tensor(source).reshape(-1)[:count])

    def masked_scatter_(self, mask: Tensor, source: Tensor) -> Tensor:
        """In-place version of :meth:`masked_scatter` (``mask`` must broadcast to self's shape)."""
        mask = tensor_arg(self, mask, "masked_scatter_", "mask")
        if mask.ndim > self.ndim:
            raise RuntimeError(
                f"expand({list(mask.shape)}, size={list(self.shape)}): the number of sizes provided "
                f"({self.ndim}) must be greater or equal to the number of dimensions in the tensor ({mask.ndim})"
            )
        return self._math_inplace("masked_scatter", mask, source)
