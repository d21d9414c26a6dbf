"""Index ops on CUDA: torch's checks and messages, genesis_kernels launchers.

gather, scatter_ / scatter_add_ / index_add_ / masked_fill_ (in place; NDArray composes the
out-of-place forms by cloning first), index_select, masked_select, nonzero, embedding and its
backward.

Every index is bounds-checked on the device by the kernel, which raises IndexError after the
launch (a stream synchronisation), unless the host knows bounds of the index's values
(``common.value_range``: uploaded from host data, an arange, ...): in range, nothing is waited for;
exactly known out of range, the same IndexError is raised before the launch. torch raises
RuntimeError for an out-of-range index of gather, scatter and index_add (and IndexError for
index_select), so those launches re-raise it as one, with the same message.
Shapes, dims and dtypes are checked here first, with torch's messages, so that both devices agree.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch

import genesis_kernels as gk
import genesis_storage as gs

from ...determinism import alert_not_deterministic
from ...dtypes import dtype_by_name, int32
from ...shape import broadcast_shapes, normalize_dim
from .common import View, expand_to, forget_range, reg, stream_of, value_range
from .memory import cast, copy_, fill_

_INDEX_DTYPES = ("int64", "int32")
# How torch's messages print a mask dtype (its C++ type name).
_CPP_NAMES = {
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
}


def _scalar_type(name: str) -> str:
    """torch's ScalarType name of a dtype ("Long", "Float", ...), as its messages print it."""
    return torch.empty(0, dtype=dtype_by_name[name].torch).type().removeprefix("torch.").removesuffix("Tensor")


@contextmanager
def _index_errors_as_runtime_error():
    try:
        yield
    except IndexError as e:
        raise RuntimeError(str(e)) from None


def _rank1(shape) -> tuple[int, ...]:
    """torch's gather/scatter treat a 0-d tensor as one element along dim 0."""
    return tuple(shape) if shape else (1,)


def _scalar_for(dtype: str, value):
    """A Python scalar as torch writes it into ``dtype``: truncated for integers, != 0 for bool."""
    if dtype == "bool":
        return bool(value)
    if not dtype_by_name[dtype].is_floating_point:
        return int(value)
    return value


def _accumulate(v: View, src: View, launch) -> None:
    """Run an accumulating launch into v; bool destinations (which the kernels refuse) add up in
    an int32 copy that is cast back (anything nonzero is True)."""
    if v.dtype != "bool":
        launch(v, src)
        return
    wide = cast(v, int32)
    launch(wide, cast(src, int32))
    copy_(v, wide)


# ------------------------------------------------------------------ gather / scatter
@reg("gather")
def gather(input: View, dim: int, index: View) -> View:
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    dim = normalize_dim(dim, len(input.shape))
    out = gs.empty(index.shape, input.dtype, input.device)
    if not math.prod(index.shape):  # torch checks nothing else for an empty index
        return out
    vs, ishape = _rank1(input.shape), _rank1(index.shape)
    if len(ishape) != len(vs):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d, (i, s) in enumerate(zip(ishape, vs)):
        if d != dim and i > s:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(index.shape)} to be no "
                f"larger than self {list(input.shape)} apart from dimension {dim}"
            )
    with _index_errors_as_runtime_error():
        gk.gather(input, dim, index, out, index_range=value_range(index), stream=stream_of(input))
    return out


def _check_scatter(v: View, dim: int, index: View, src) -> int:
    """torch's checks of scatter_ / scatter_add_; returns the wrapped dim."""
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    is_array = isinstance(src, View)
    if is_array and src.dtype != v.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    dim = normalize_dim(dim, len(v.shape))
    if not math.prod(index.shape):
        return dim
    vs, ishape = _rank1(v.shape), _rank1(index.shape)
    if len(ishape) != len(vs):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    too_big = any(d != dim and i > s for d, (i, s) in enumerate(zip(ishape, vs)))
    if is_array:
        ss = _rank1(src.shape)
        if len(ss) != len(ishape):
            normalize_dim(dim, len(src.shape))  # torch first fails to find dim in src (IndexError)
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        too_big = too_big or any(i > s for i, s in zip(ishape, ss))
    if too_big:
        extra = f" and to be no larger size than src {list(src.shape)}" if is_array else ""
        raise RuntimeError(
            f"Expected index {list(index.shape)} to be no larger than self {list(v.shape)} apart "
            f"from dimension {dim}{extra}"
        )
    return dim


@reg("scatter_")
def scatter_(input: View, dim: int, index: View, src) -> None:
    """v[..., index[i], ...] = src[i] (or a scalar) along dim; with repeated indices one write wins."""
    dim = _check_scatter(input, dim, index, src)
    forget_range(input)
    if not math.prod(index.shape):
        return
    if not isinstance(src, View):
        src = _scalar_for(input.dtype, src)
    with _index_errors_as_runtime_error():
        gk.scatter(input, dim, index, src, index_range=value_range(index), stream=stream_of(input))


@reg("scatter_add_")
def scatter_add_(input: View, dim: int, index: View, src: View) -> None:
    """v[..., index[i], ...] += src[i] along dim (atomic: repeated indices add up)."""
    dim = _check_scatter(input, dim, index, src)
    alert_not_deterministic("scatter_add_cuda_")  # atomics: the order of the additions varies
    forget_range(input)
    if not math.prod(index.shape):
        return
    known = value_range(index)
    with _index_errors_as_runtime_error():
        _accumulate(
            input, src, lambda dst, s: gk.scatter_add(dst, dim, index, s, index_range=known, stream=stream_of(input))
        )


# ------------------------------------------------------------------ index_select / index_add
@reg("index_select")
def index_select(input: View, dim: int, index: View) -> View:
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if len(index.shape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    dim = normalize_dim(dim, len(input.shape))
    n = math.prod(index.shape)
    if not input.shape:
        if n != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} value(s)")
        index = index.as_strided((), (), index.offset)  # the kernel gives a 0-d x the index's shape
        shape: tuple[int, ...] = ()
    else:
        shape = input.shape[:dim] + (n,) + input.shape[dim + 1 :]
    out = gs.empty(shape, input.dtype, input.device)
    if math.prod(shape):
        # out of range: IndexError, as torch
        gk.index_select(input, dim, index, out, index_range=value_range(index), stream=stream_of(input))
    return out


@reg("index_add_")
def index_add_(input: View, dim: int, index: View, source: View, alpha) -> None:
    """v[..., index[j], ...] += alpha * src[..., j, ...] along dim (atomic: repeated indices add up)."""
    alert_not_deterministic("index_add_cuda_")  # atomics: the order of the additions varies
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {_scalar_type(index.dtype)}")
    if len(index.shape) > 1:
        raise IndexError(
            f"index_add_(): Index is supposed to be a vector, but got dim: {len(index.shape)} with "
            f"type: {_scalar_type(index.dtype)} and size: {list(index.shape)}"
        )
    dim = normalize_dim(dim, len(input.shape))
    if source.dtype != input.dtype:
        raise RuntimeError(
            f"index_add_(): self ({_scalar_type(input.dtype)}) and source "
            f"({_scalar_type(source.dtype)}) must have the same scalar type"
        )
    if source.shape and dim >= len(source.shape):
        raise RuntimeError(
            f"index_add_(): Indexing dim {dim} is out of bounds of the source tensor with dim {len(source.shape)}"
        )
    n = math.prod(index.shape)
    size = source.shape[dim] if source.shape else 1
    if size != n:
        raise RuntimeError(
            f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): ({size}), for dim: {dim}"
        )
    if len(source.shape) != len(input.shape) or any(
        a != b for d, (a, b) in enumerate(zip(source.shape, input.shape)) if d != dim
    ):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. "
            f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}"
        )
    forget_range(input)
    if not math.prod(source.shape):
        return
    alpha = _scalar_for("int32" if input.dtype == "bool" else input.dtype, alpha)
    known = value_range(index)
    with _index_errors_as_runtime_error():
        _accumulate(
            input,
            source,
            lambda dst, s: gk.index_add(dst, dim, index, s, alpha=alpha, index_range=known, stream=stream_of(input)),
        )


# ------------------------------------------------------------------ masks
@reg("masked_fill_")
def masked_fill_(input: View, mask: View, value) -> None:
    if mask.dtype != "bool":
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {_CPP_NAMES[mask.dtype]}"
        )
    shape = broadcast_shapes(input.shape, mask.shape)
    if shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    forget_range(input)
    if math.prod(shape):
        gk.masked_fill(input, expand_to(mask, shape), _scalar_for(input.dtype, value), input, stream=stream_of(input))


@reg("masked_select")
def masked_select(input: View, mask: View) -> View:
    gk.capture.forbid_readback("masked_select", "the number of selected elements sizes the output")
    if mask.dtype != "bool":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(input.shape, mask.shape)
    x, m = expand_to(input, shape), expand_to(mask, shape)
    n = gk.nonzero_count(m, stream=stream_of(input), op="masked_select") if math.prod(shape) else 0
    out = gs.empty((n,), input.dtype, input.device)
    if n:
        gk.masked_select(x, m, out, stream=stream_of(input))
    return out


@reg("nonzero")
def nonzero(input: View) -> View:
    """(count, ndim) int64 coordinates of the nonzero elements, in row-major order."""
    gk.capture.forbid_readback("nonzero", "the number of nonzero elements sizes the output")
    flat = input if input.shape else input.as_strided((1,), (1,), input.offset)
    n = gk.nonzero_count(flat, stream=stream_of(input)) if math.prod(flat.shape) else 0
    out = gs.empty((n, len(input.shape)), "int64", input.device)
    if n and input.shape:  # a 0-d input has no coordinates to write
        gk.nonzero(input, out, stream=stream_of(input))
    return out


# ------------------------------------------------------------------ embedding
def _check_embedding_indices(indices: View) -> None:
    if indices.dtype not in _INDEX_DTYPES:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got torch.{_scalar_type(indices.dtype)}Tensor instead (while checking "
            "arguments for embedding)"
        )


@contextmanager
def _embedding_index_errors():
    """torch's CPU message for an index outside [0, num_weights) (its CUDA kernel asserts instead)."""
    try:
        yield
    except IndexError:
        raise IndexError("index out of range in self") from None


@reg("embedding")
def embedding(weight: View, indices: View) -> View:
    """Rows ``weight[indices]``: shape ``indices.shape + (D,)``."""
    _check_embedding_indices(indices)
    if len(weight.shape) != 2:
        raise RuntimeError("'weight' must be 2-D")
    out = gs.empty(tuple(indices.shape) + (weight.shape[1],), weight.dtype, weight.device)
    if math.prod(out.shape):
        with _embedding_index_errors():
            gk.embedding(weight, indices, out, index_range=value_range(indices), stream=stream_of(weight))
    return out


@reg("embedding_backward")
def embedding_backward(grad_output: View, indices: View, num_weights: int, padding_idx: int | None) -> View:
    """The (num_weights, D) gradient of the weight: grad_output's rows summed into their index's row
    (atomics; the order of the sum is not deterministic), the ``padding_idx`` row left at zero."""
    alert_not_deterministic("embedding_dense_backward_cuda")
    _check_embedding_indices(indices)
    grad_weight = gs.empty((num_weights, grad_output.shape[-1]), grad_output.dtype, grad_output.device)
    fill_(grad_weight, 0)
    if math.prod(grad_output.shape):
        with _embedding_index_errors():
            gk.embedding_backward(
                grad_output,
                indices,
                grad_weight,
                padding_idx=padding_idx,
                index_range=value_range(indices),
                stream=stream_of(grad_output),
            )
    return grad_weight


__all__ = [
    "embedding",
    "embedding_backward",
    "gather",
    "index_add_",
    "index_select",
    "masked_fill_",
    "masked_select",
    "nonzero",
    "scatter_",
    "scatter_add_",
]
