"""Math ops on CUDA: lerp / addcmul / addcdiv, cumsum / cumprod, tril / triu.

Result dtypes, broadcasting and errors as torch; the kernels compute half types in float32.
(Unary and binary math names go through elementwise.py's ``unary`` / ``binary``.)
"""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType, int64, promote_types
from ...shape import broadcast_shapes, normalize_dim
from .common import View, dtype_of, expand_to, reg, stream_of
from .elementwise import _device_of
from .memory import cast


def _shape_of(*operands) -> tuple[int, ...]:
    """The broadcast shape of views and Python scalars, after checking they share one device."""
    views = [x for x in operands if isinstance(x, View)]
    shape: tuple[int, ...] = ()
    for v in views:
        _device_of(views[0], v)
        shape = broadcast_shapes(shape, v.shape)
    return shape


def _result_type(*views: View) -> DType:
    """torch.result_type over tensors: zero-dim ones count only when of a higher category."""
    dim = zero = None
    for v in views:
        d = dtype_of(v)
        if len(v.shape):
            dim = d if dim is None else promote_types(dim, d)
        else:
            zero = d if zero is None else promote_types(zero, d)
    if dim is None:
        return zero
    if zero is None or zero.category <= dim.category:
        return dim
    return promote_types(dim, zero)


# ------------------------------------------------------------------ ternary
@reg("lerp")
def lerp(a: View, b: View, w) -> View:
    dtype = dtype_of(a)
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"lerp_kernel\" not implemented for '{dtype.name}'")
    for name, x in (("end", b), ("weight", w)):
        if isinstance(x, View) and dtype_of(x) is not dtype:
            raise RuntimeError(f"expected dtype {dtype.name} for `{name}` but got dtype {dtype_of(x).name}")
    shape = _shape_of(a, b, w)
    out = gs.empty(shape, dtype.name, a.device)
    if math.prod(shape):
        gk.lerp(expand_to(a, shape), expand_to(b, shape), expand_to(w, shape), out, stream=stream_of(out))
    return out


def _addc(op: str, x: View, t1: View, t2: View, value) -> View:
    if op == "addcdiv" and not dtype_of(t1).is_floating_point and not dtype_of(t2).is_floating_point:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2.")
    shape = _shape_of(x, t1, t2)
    dtype = _result_type(x, t1, t2)
    # As torch's TensorIterator: every operand is first rounded to the common dtype (a float64 0-d
    # factor next to float16 tensors counts as float16), then computed in float32.
    x, t1, t2 = (cast(v, dtype) if dtype_of(v) is not dtype else v for v in (x, t1, t2))
    out = gs.empty(shape, dtype.name, x.device)
    if math.prod(shape):
        getattr(gk, op)(expand_to(x, shape), expand_to(t1, shape), expand_to(t2, shape), out, value=value,
                        stream=stream_of(out))
    return out


reg("addcmul")(lambda x, t1, t2, value: _addc("addcmul", x, t1, t2, value))
reg("addcdiv")(lambda x, t1, t2, value: _addc("addcdiv", x, t1, t2, value))


# ------------------------------------------------------------------ scans
def _scan(op: str, v: View, dim: int, dtype: DType | None) -> View:
    """cumsum / cumprod: integers and bool give int64 unless ``dtype`` says otherwise, as torch."""
    dim = normalize_dim(dim, len(v.shape))
    if dtype is not None and dtype is not dtype_of(v):
        v = cast(v, dtype)
    out_dtype = dtype_of(v) if dtype is not None or dtype_of(v).is_floating_point else int64
    out = gs.empty(v.shape, out_dtype.name, v.device)
    if math.prod(v.shape):
        getattr(gk, op)(v, out, dim, stream=stream_of(v))
    return out


reg("cumsum")(lambda v, dim, dtype: _scan("cumsum", v, dim, dtype))
reg("cumprod")(lambda v, dim, dtype: _scan("cumprod", v, dim, dtype))


# ------------------------------------------------------------------ triangles
def _tri(mode: str, v: View, diagonal: int) -> View:
    if len(v.shape) < 2:
        raise RuntimeError(f"{mode}: input tensor must have at least 2 dimensions")
    out = gs.empty(v.shape, v.dtype, v.device)
    if math.prod(v.shape):
        getattr(gk, mode)(v, out, int(diagonal), stream=stream_of(v))
    return out


reg("tril")(lambda v, diagonal: _tri("tril", v, diagonal))
reg("triu")(lambda v, diagonal: _tri("triu", v, diagonal))
