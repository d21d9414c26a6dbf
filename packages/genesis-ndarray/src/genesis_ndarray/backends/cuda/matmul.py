"""matmul on CUDA: torch.matmul's broadcasting of 1-d and batched operands over one batched kernel.

The common calls (a product of two matrices, a Linear layer) take a plan (registry.PlanCache) made on
the first call of their layout class: the output's shape and the kernel launch resolved by
genesis_kernels.matmul_plan, keyed by dtypes, shapes, strides and 16-byte pointer alignment (the
matmul precision clears the plans when it changes). A call then checks devices, allocates the
output and launches; anything unusual (batches, vectors, a copy needed) takes the general path.
"""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType
from ...precision import allow_tf32
from ...registry import PlanCache
from ...shape import broadcast_shapes
from .common import View, current_stream_handle, dtype_of, reg, resolver, stream_of
from .memory import contiguous, fill_
from .reduce import reduce
from .views import expand, reshape


def _shapes_error(a: View, b: View) -> RuntimeError:
    sa = "x".join(map(str, a.shape))
    sb = "x".join(map(str, b.shape))
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")


# (dtype, shapes, strides, alignments) -> (output shape, kernel plan)
_MATRIX_PLANS = PlanCache()
# (dtypes, shapes, strides, alignments, bias layout, activation) -> (output shape, kernel plan)
_LINEAR_PLANS = PlanCache()


def _kernel_buffer(v: View, shape: tuple[int, ...], strides: tuple[int, ...]) -> gk.Buffer:
    """v's memory seen with another shape (a plan is made from layouts: no view, no bounds check)."""
    return gk.Buffer(v.ptr, shape, strides, v.dtype)


def _matrix_plan(key: tuple, input: View, other: View, out_dtype: str):
    """The plan of ``input (M, K) @ other (K, N)`` (both float, one dtype, one device) into ``out_dtype``, or
    None to take the general path (which raises where the call is wrong)."""
    (m, k), (k2, n) = input.shape, other.shape
    if k != k2 or input.dtype != other.dtype or not dtype_of(input).is_floating_point:
        return None
    out = gs.empty((m, n), out_dtype, input.device)  # a template: fresh blocks are 512-byte aligned
    plan = gk.matmul_plan(
        _kernel_buffer(input, (1, m, k), (0, *input.strides)),
        _kernel_buffer(other, (1, k, n), (0, *other.strides)),
        _kernel_buffer(out, (1, m, n), (0, n, 1)),
        allow_tf32=allow_tf32(),
    )
    if plan is None:  # K == 0: zeros, made by the general path
        return None
    return _MATRIX_PLANS.put(key, ((m, n), plan))


@reg("matmul")
def matmul(input: View, other: View) -> View:
    return _product(input, other, input.dtype)


def _product(input: View, other: View, out_dtype: str) -> View:
    """``input @ other`` written in ``out_dtype`` (the inputs' dtype, or float32 for a 16-bit product: the
    float32 accumulator rounded once, to the wider type)."""
    if len(input.shape) == 2 and len(other.shape) == 2 and input.device == other.device:
        key = (
            input.dtype,
            other.dtype,
            out_dtype,
            input.shape,
            input.strides,
            other.shape,
            other.strides,
            input.ptr & 15,
            other.ptr & 15,
        )
        entry = _MATRIX_PLANS.get(key)
        if entry is None:
            entry = _matrix_plan(key, input, other, out_dtype)
        if entry is not None:
            out = gs.empty(entry[0], out_dtype, input.device)
            if not out.ptr & 15:
                entry[1](input.ptr, other.ptr, out.ptr, out.ptr, current_stream_handle(out.device))
                return out
    return _matmul(input, other, out_dtype)


def _matmul(input: View, other: View, out_dtype: str) -> View:
    """The general path: 1-d operands, batches broadcast, torch's errors."""
    if input.device != other.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"cuda:{input.device} and cuda:{other.device}!"
        )
    if len(input.shape) == 0 or len(other.shape) == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {len(input.shape)}D and {len(other.shape)}D"
        )
    if input.dtype != other.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {input.dtype} != {other.dtype}")
    if not dtype_of(input).is_floating_point:
        raise NotImplementedError(f"\"addmm_cuda\" not implemented for '{input.dtype}'")
    a2 = input if len(input.shape) > 1 else input.as_strided((1,) + input.shape, (0,) + input.strides, input.offset)
    b2 = other if len(other.shape) > 1 else other.as_strided(other.shape + (1,), other.strides + (0,), other.offset)
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        raise _shapes_error(input, other)
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    nb = math.prod(batch)
    if not batch:  # plain matrices (every Linear layer): one view each, no reshape logic
        a3 = a2.as_strided((1, m, k), (0, *a2.strides), a2.offset)
        b3 = b2.as_strided((1, k, n), (0, *b2.strides), b2.offset)
    else:
        a3 = reshape(expand(a2, batch + (m, k)), (nb, m, k))
        b3 = reshape(expand(b2, batch + (k, n)), (nb, k, n))
    out = gs.empty((nb, m, n), out_dtype, input.device)
    if out.numel:
        if k == 0:
            fill_(out, 0)
        else:
            gk.matmul(a3, b3, out, allow_tf32=allow_tf32(), stream=stream_of(out))
    shape = batch + ((m,) if len(input.shape) > 1 else ()) + ((n,) if len(other.shape) > 1 else ())
    return out.as_strided(shape, gs.contiguous_strides(shape), out.offset)


def _linear_plan(key: tuple, input: View, weight: View, bias: View | None, activation: str):
    """The plan of a Linear layer whose input's rows are a view (no copy), or None (the general path)."""
    n, k = weight.shape
    rows = math.prod(input.shape[:-1])
    x2 = reshape(input, (rows, k))
    if x2.ptr != input.ptr or (x2.strides[-1] != 1 and rows > 1 and k > 1):  # a copy: not a layout class
        return None
    shape = input.shape[:-1] + (n,)
    out = gs.empty(shape, input.dtype, input.device)
    plan = gk.matmul_plan(
        _kernel_buffer(x2, (1, rows, k), (0, *x2.strides)),
        _kernel_buffer(weight, (1, k, n), (0, weight.strides[1], weight.strides[0])),
        _kernel_buffer(out, (1, rows, n), (0, n, 1)),
        bias=bias,
        activation=activation,
        allow_tf32=allow_tf32(),
    )
    if plan is None:
        return None
    return _LINEAR_PLANS.put(key, (shape, plan))


@reg("linear")
def linear(input: View, weight: View, bias: View | None, activation: str) -> View:
    """``activation(input @ weight^T + bias)`` in one launch: weight (N, K) is read transposed in place.

    Shapes, dtypes and devices were checked by NDArray.linear.
    """
    key = (
        input.dtype,
        input.shape,
        input.strides,
        weight.shape,
        weight.strides,
        input.ptr & 15,
        weight.ptr & 15,
        None if bias is None else (bias.dtype, bias.shape, bias.strides),
        activation,
    )
    entry = _LINEAR_PLANS.get(key)
    if entry is None:
        entry = _linear_plan(key, input, weight, bias, activation)
    if entry is not None:
        out = gs.empty(entry[0], input.dtype, input.device)
        if not out.ptr & 15:
            entry[1](
                input.ptr, weight.ptr, out.ptr, out.ptr if bias is None else bias.ptr, current_stream_handle(out.device)
            )
            return out
    return _linear(input, weight, bias, activation)


def _linear(input: View, weight: View, bias: View | None, activation: str) -> View:
    """The general path of linear (an input whose rows need a copy first)."""
    n, k = weight.shape
    rows = math.prod(input.shape[:-1])
    x2 = reshape(input, (rows, k))
    if x2.strides[-1] != 1 and rows > 1 and k > 1:
        x2 = contiguous(x2)
    out = gs.empty((1, rows, n), input.dtype, input.device)
    if out.numel:
        a3 = x2.as_strided((1, rows, k), (0, *x2.strides), x2.offset)
        w3 = weight.as_strided((1, k, n), (0, weight.strides[1], weight.strides[0]), weight.offset)
        gk.matmul(a3, w3, out, bias=bias, activation=activation, allow_tf32=allow_tf32(), stream=stream_of(out))
    shape = input.shape[:-1] + (n,)
    return out.as_strided(shape, gs.contiguous_strides(shape), out.offset)


@reg("linear_backward")
def linear_backward(
    grad: View,
    input: View | None,
    weight: View | None,
    need_input: bool,
    need_weight: bool,
    bias_dtype: DType | None,
    input_dtype: DType,
    weight_dtype: DType,
) -> tuple[View | None, View | None, View | None]:
    """(d input, d weight, d bias) of ``linear``: ``grad @ weight`` in ``input_dtype``, ``grad^T @ input``
    in ``weight_dtype``, over the rows of every batch dim at once (views: no per-batch products summed
    afterwards), and ``grad``'s column sums in ``bias_dtype`` (None: no bias gradient). The products take
    matmul's cached 2-D plans."""
    rows = grad if len(grad.shape) == 2 else reshape(grad, (-1, grad.shape[-1]))
    dx = dw = db = None  # (NDArray.linear_backward checked that what each part needs is given)
    if need_input and weight is not None:
        dx = _product(rows, weight, input_dtype.name)
        if len(grad.shape) != 2:
            shape = grad.shape[:-1] + dx.shape[1:]
            dx = dx.reshaped(shape, gs.contiguous_strides(shape))  # (a fresh contiguous product)
    if need_weight and input is not None:
        x2 = input if len(input.shape) == 2 else reshape(input, (-1, input.shape[-1]))
        dw = _product(rows.permuted((1, 0)), x2, weight_dtype.name)
    if bias_dtype is not None:
        db = reduce("sum", rows, 0, False, bias_dtype)
    return dx, dw, db


@resolver("matmul")
def resolve_matmul(op: str, dtype: DType, other: DType):
    """``(matmul, result dtype)``: one floating dtype gives that dtype; the rest read it back (or raise)."""
    return matmul, dtype if dtype is other and dtype.is_floating_point else None
