"""matmul and (log-)softmax on CUDA."""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...shape import broadcast_shapes, contiguous_strides, normalize_dim
from .common import View, dtype_of, reg, stream_of
from .memory import fill_
from .views import expand, permute, reshape


def _shapes_error(a: View, b: View) -> RuntimeError:
    sa = "x".join(map(str, a.shape))
    sb = "x".join(map(str, b.shape))
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")


@reg("matmul")
def matmul(a: View, b: View) -> View:
    if a.device != b.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"cuda:{a.device} and cuda:{b.device}!"
        )
    if len(a.shape) == 0 or len(b.shape) == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {len(a.shape)}D "
                           f"and {len(b.shape)}D")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}")
    if not dtype_of(a).is_floating_point:
        raise RuntimeError(f"\"addmm_cuda\" not implemented for '{a.dtype}'")
    a2 = a if len(a.shape) > 1 else a.as_strided((1,) + a.shape, (0,) + a.strides, a.offset)
    b2 = b if len(b.shape) > 1 else b.as_strided(b.shape + (1,), b.strides + (0,), b.offset)
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        raise _shapes_error(a, b)
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    nb = math.prod(batch)
    if not batch:  # plain matrices (every Linear layer): one view each, no reshape logic
        a3 = a2.as_strided((1, m, k), (0, *a2.strides), a2.offset)
        b3 = b2.as_strided((1, k, n), (0, *b2.strides), b2.offset)
    else:
        a3 = reshape(expand(a2, batch + (m, k)), (nb, m, k))
        b3 = reshape(expand(b2, batch + (k, n)), (nb, k, n))
    out = gs.empty((nb, m, n), a.dtype, a.device)
    if out.numel:
        if k == 0:
            fill_(out, 0)
        else:
            gk.matmul(a3, b3, out, stream=stream_of(out))
    shape = batch + ((m,) if len(a.shape) > 1 else ()) + ((n,) if len(b.shape) > 1 else ())
    return out.as_strided(shape, contiguous_strides(shape), out.offset)


def _to_last(v: View, dim: int) -> tuple[View, list[int]]:
    """v with ``dim`` moved last (a view), and the order that does it."""
    order = [d for d in range(len(v.shape)) if d != dim] + [dim]
    return permute(v, order), order


@reg("softmax")
def softmax(v: View, dim: int, log: bool) -> View:
    if not dtype_of(v).is_floating_point:
        raise RuntimeError(f"\"softmax_cuda\" not implemented for '{v.dtype}'")
    src = v if len(v.shape) else v.as_strided((1,), (1,), v.offset)
    dim = normalize_dim(dim, len(src.shape))
    out = gs.empty(src.shape, v.dtype, v.device)
    if out.numel:
        x_last, _ = _to_last(src, dim)
        y_last, _ = _to_last(out, dim)
        gk.softmax(x_last, y_last, log=log, stream=stream_of(v))
    return out if len(v.shape) else out.as_strided((), (), out.offset)


@reg("softmax_backward")
def softmax_backward(y: View, dy: View, dim: int, log: bool) -> View:
    src_y = y if len(y.shape) else y.as_strided((1,), (1,), y.offset)
    src_dy = dy if len(dy.shape) else dy.as_strided((1,), (1,), dy.offset)
    dim = normalize_dim(dim, len(src_y.shape))
    dx = gs.empty(src_y.shape, y.dtype, y.device)
    if dx.numel:
        gk.softmax_backward(_to_last(src_y, dim)[0], _to_last(src_dy, dim)[0], _to_last(dx, dim)[0],
                            log=log, stream=stream_of(y))
    return dx if len(y.shape) else dx.as_strided((), (), dx.offset)
