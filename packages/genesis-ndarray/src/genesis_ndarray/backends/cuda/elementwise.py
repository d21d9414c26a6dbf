"""Elementwise ops on CUDA: torch's broadcasting and type promotion, Triton kernels."""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType, bool_, get_default_dtype, promote_types
from ...shape import broadcast_shapes
from .common import View, current_stream_handle, dtype_of, expand_to, reg, result_type, stream_of
from .memory import cast

_PREDICATES = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})
_BITWISE = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor"})
# Ops whose integer inputs give a floating result, as in torch.
_FLOAT_RESULT_BINARY = frozenset({"div", "atan2"})
_FLOAT_RESULT_UNARY = frozenset({
    "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "silu", "reciprocal", "gelu", "gelu_tanh", "erf", "erfc",
})
_BOOL_RESULT_UNARY = frozenset({"isnan", "isinf", "isfinite", "logical_not"})
# Where genesis_kernels names an op differently from torch.
_KERNEL_OP = {"floor_divide": "floordiv"}


def _device_of(a, b) -> int:
    if isinstance(a, View):
        if isinstance(b, View) and b.device != a.device:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"cuda:{a.device} and cuda:{b.device}!"
            )
        return a.device
    return b.device


def _is_bool(x) -> bool:
    return x.dtype == "bool" if isinstance(x, View) else isinstance(x, bool)


def _check_bool_operands(op: str, a, b) -> None:
    """torch refuses arithmetic that has no meaning on masks."""
    if op == "sub" and (_is_bool(a) or _is_bool(b)):
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                               "Use the `^` or `logical_xor()` operator instead.")
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    if op == "pow" and _is_bool(a) and isinstance(b, View) and b.dtype == "bool":
        raise NotImplementedError('"pow" not implemented for \'Bool\'')
    if op in ("floor_divide", "remainder") and _is_bool(a) and _is_bool(b):
        kernel = "div_floor" if op == "floor_divide" else "remainder"
        raise NotImplementedError(f'"{kernel}_cuda" not implemented for \'Bool\'')


def _binary_types(op: str, a, b) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of ``a op b``."""
    _check_bool_operands(op, a, b)
    compute = result_type(a, b)
    if op in _FLOAT_RESULT_BINARY and not compute.is_floating_point:
        compute = get_default_dtype()
    if op in _BITWISE and compute.is_floating_point:
        raise RuntimeError(f'"{op}_cuda" not implemented for \'{compute.name}\'')
    out = bool_ if op in _PREDICATES else compute
    return compute, out


# Ops whose result has the operands' dtype when both share it (bool excluded: its rules differ).
_SAME_DTYPE_OPS = frozenset({"add", "sub", "mul", "maximum", "minimum"})


@reg("binary")
def binary(op: str, a, b) -> View:
    # The hot path: two arrays of one shape, dtype and device (no broadcasting, no promotion).
    if (a.__class__ is View and b.__class__ is View and op in _SAME_DTYPE_OPS and a.dtype == b.dtype
            and a.shape == b.shape and a.device == b.device and a.dtype != "bool"):
        out = gs.empty(a.shape, a.dtype, a.device)
        if out.numel:
            gk.binary(op, a, b, out, compute_dtype=a.dtype, stream=current_stream_handle(a.device))
        return out
    device = _device_of(a, b)
    shape_a = a.shape if isinstance(a, View) else ()
    shape_b = b.shape if isinstance(b, View) else ()
    shape = broadcast_shapes(shape_a, shape_b)
    compute, out_dtype = _binary_types(op, a, b)
    out = gs.empty(shape, out_dtype.name, device)
    if math.prod(shape):
        gk.binary(_KERNEL_OP.get(op, op), expand_to(a, shape), expand_to(b, shape), out,
                  compute_dtype=compute.name, stream=stream_of(out))
    return out


@reg("binary_")
def binary_(op: str, a: View, b) -> None:
    """In place: a = a op b, where b must broadcast to a's shape and its result type
    must cast back to a's dtype (torch refuses float results into int tensors)."""
    shape_b = b.shape if isinstance(b, View) else ()
    if broadcast_shapes(a.shape, shape_b) != tuple(a.shape):
        raise RuntimeError(
            f"output with shape {list(a.shape)} doesn't match the broadcast shape "
            f"{list(broadcast_shapes(a.shape, shape_b))}"
        )
    compute, out_dtype = _binary_types(op, a, b)
    own = dtype_of(a)
    if out_dtype.category > own.category:
        raise RuntimeError(f"result type {out_dtype.name.capitalize()} can't be cast to the desired output "
                           f"type {own.name.capitalize()}")
    if math.prod(a.shape):
        gk.binary(_KERNEL_OP.get(op, op), a, expand_to(b, a.shape), a, compute_dtype=compute.name,
                  stream=stream_of(a))


@reg("unary")
def unary(op: str, v: View) -> View:
    dtype = dtype_of(v)
    if op in _BOOL_RESULT_UNARY:
        out_dtype = bool_
    elif op in _FLOAT_RESULT_UNARY and not dtype.is_floating_point:
        out_dtype = get_default_dtype()
    else:
        if op == "neg" and dtype is bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        if op == "bitwise_not" and dtype.is_floating_point:
            raise RuntimeError(f"\"bitwise_not_cuda\" not implemented for '{dtype.name}'")
        out_dtype = dtype
    src = cast(v, out_dtype) if out_dtype is not dtype and out_dtype is not bool_ else v
    out = gs.empty(v.shape, out_dtype.name, v.device)
    if math.prod(v.shape):
        gk.unary(op, src, out, stream=stream_of(v))
    return out


@reg("where")
def where(cond: View, a, b) -> View:
    if dtype_of(cond) is not bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{dtype_of(cond).name}")
    device = cond.device
    for x in (a, b):
        if isinstance(x, View) and x.device != device:
            _device_of(cond, x)
    shape = broadcast_shapes(cond.shape, a.shape if isinstance(a, View) else ())
    shape = broadcast_shapes(shape, b.shape if isinstance(b, View) else ())
    dtype = result_type(a, b)
    out = gs.empty(shape, dtype.name, device)
    if math.prod(shape):
        gk.where(expand_to(cond, shape), expand_to(a, shape), expand_to(b, shape), out,
                 stream=stream_of(out))
    return out


@reg("clamp")
def clamp(v: View, lo, hi) -> View:
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = dtype_of(v)
    shape = tuple(v.shape)
    for bound in (lo, hi):
        if bound is not None:
            dtype = promote_types(dtype, result_type(v, bound))
        if isinstance(bound, View):  # tensor bounds broadcast with v, as torch.clamp(Tensor, Tensor, Tensor)
            _device_of(v, bound)
            shape = broadcast_shapes(shape, bound.shape)
    src = v if dtype is dtype_of(v) else cast(v, dtype)
    out = gs.empty(shape, dtype.name, v.device)
    if math.prod(shape):
        gk.clamp(expand_to(src, shape), expand_to(lo, shape), expand_to(hi, shape), out, stream=stream_of(v))
    return out
