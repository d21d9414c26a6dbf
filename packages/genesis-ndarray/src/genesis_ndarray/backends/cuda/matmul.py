"""matmul on CUDA: torch.matmul's broadcasting of 1-d and batched operands over one batched kernel."""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType
from ...precision import allow_tf32
from ...shape import broadcast_shapes
from .common import View, dtype_of, reg, resolver, stream_of
from .memory import contiguous, fill_
from .views import expand, reshape


def _shapes_error(a: View, b: View) -> RuntimeError:
    sa = "x".join(map(str, a.shape))
    sb = "x".join(map(str, b.shape))
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")


@reg("matmul")
def matmul(input: View, other: View) -> View:
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
    out = gs.empty((nb, m, n), input.dtype, input.device)
    if out.numel:
        if k == 0:
            fill_(out, 0)
        else:
            gk.matmul(a3, b3, out, allow_tf32=allow_tf32(), stream=stream_of(out))
    shape = batch + ((m,) if len(input.shape) > 1 else ()) + ((n,) if len(other.shape) > 1 else ())
    return out.as_strided(shape, gs.contiguous_strides(shape), out.offset)


@reg("linear")
def linear(input: View, weight: View, bias: View | None, activation: str) -> View:
    """``activation(input @ weight^T + bias)`` in one launch: weight (N, K) is read transposed in place.

    Shapes, dtypes and devices were checked by NDArray.linear.
    """
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


@resolver("matmul")
def resolve_matmul(op: str, dtype: DType, other: DType):
    """``(matmul, result dtype)``: one floating dtype gives that dtype; the rest read it back (or raise)."""
    return matmul, dtype if dtype is other and dtype.is_floating_point else None
