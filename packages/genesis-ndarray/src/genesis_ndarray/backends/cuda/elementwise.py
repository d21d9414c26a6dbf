"""Elementwise ops on CUDA: unary, binary (and in place), where, clamp, lerp, addcmul, addcdiv.

torch's broadcasting, type promotion and errors; the kernels compute half types in float32.
"""

from __future__ import annotations

import functools
import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType, binary_result_dtype, bool_, get_default_dtype, promote_types
from ...shape import broadcast_shapes
from .common import (
    View,
    current_stream_handle,
    dtype_of,
    expand_to,
    forget_range,
    reg,
    resolver,
    result_type,
    set_range,
    stream_of,
)
from .memory import cast

_PREDICATES = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})
_BITWISE = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor"})
# Ops whose integer inputs give a floating result, as in torch.
_FLOAT_RESULT_BINARY = frozenset({"div", "atan2"})
_FLOAT_RESULT_UNARY = frozenset(
    {
        "exp",
        "exp2",
        "expm1",
        "log",
        "log1p",
        "log2",
        "log10",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tan",
        "tanh",
        "sigmoid",
        "silu",
        "reciprocal",
        "gelu",
        "gelu_tanh",
        "erf",
        "erfc",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
    }
)
_BOOL_RESULT_UNARY = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not"})
# The special functions (genesis_kernels/special_math.py): floating results; signbit is a predicate.
_FLOAT_RESULT_UNARY |= {"lgamma", "erfinv", "erfcx", "ndtri", "log_ndtr", "digamma", "i0", "i0e", "i1", "i1e"}
_FLOAT_RESULT_UNARY |= set(gk.special_math.BESSEL_OPS)
_BOOL_RESULT_UNARY |= {"signbit"}
_FLOAT_RESULT_BINARY |= {"zeta", "igamma", "igammac"}
# Where genesis_kernels names an op differently from torch.
_KERNEL_OP = {"floor_divide": "floordiv", "bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift"}
# Ops torch defines for floating dtypes only, and the integer-only shifts (torch's kernel names, for its message).
_FLOAT_ONLY = {"hypot": "hypot", "logaddexp": "logaddexp", "frac": "frac"}
_INTEGER_ONLY = {"bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift"}
# torch's ScalarType names, as its "not implemented for" messages print a dtype.
_SCALAR_NAMES = {
    "float64": "Double",
    "float32": "Float",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}


def _refuse_dtype(op: str, dtype: DType) -> None:
    """torch's NotImplementedError for an op of a dtype its kernel does not take (hypot of integers, shifts of
    floats or bools)."""
    if (op in _FLOAT_ONLY and not dtype.is_floating_point) or (op in _INTEGER_ONLY and dtype.category != 1):
        kernel = _FLOAT_ONLY.get(op) or _INTEGER_ONLY[op]
        raise NotImplementedError(f"\"{kernel}_cuda\" not implemented for '{_SCALAR_NAMES[dtype.name]}'")


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
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. "
                "Use the `^` or `logical_xor()` operator instead."
            )
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    if op == "pow" and _is_bool(a) and isinstance(b, View) and b.dtype == "bool":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if op in ("floor_divide", "remainder") and _is_bool(a) and _is_bool(b):
        kernel = "div_floor" if op == "floor_divide" else "remainder"
        raise NotImplementedError(f"\"{kernel}_cuda\" not implemented for 'Bool'")


def _binary_types(op: str, a, b) -> tuple[DType, DType]:
    """(compute dtype, output dtype) of ``a op b``."""
    _check_bool_operands(op, a, b)
    compute = result_type(a, b)
    if op in _FLOAT_RESULT_BINARY and not compute.is_floating_point:
        compute = get_default_dtype()
    if op in _BITWISE and compute.is_floating_point:
        raise NotImplementedError(f"\"{op}_cuda\" not implemented for '{compute.name}'")
    _refuse_dtype(op, compute)
    out = bool_ if op in _PREDICATES else compute
    return compute, out


# Ops whose result has the operands' dtype when both share it (bool excluded: its rules differ).
_SAME_DTYPE_OPS = frozenset({"add", "sub", "mul", "maximum", "minimum"})


@reg("binary")
def binary(op: str, input, other) -> View:
    # The hot path: two arrays of one shape, dtype and device (no broadcasting, no promotion).
    if (
        input.__class__ is View
        and other.__class__ is View
        and op in _SAME_DTYPE_OPS
        and input.dtype == other.dtype
        and input.shape == other.shape
        and input.device == other.device
        and input.dtype != "bool"
    ):
        out = gs.empty(input.shape, input.dtype, input.device)
        if out.numel:
            gk.binary(op, input, other, out, compute_dtype=input.dtype, stream=current_stream_handle(input.device))
        return out
    device = _device_of(input, other)
    shape_a = input.shape if isinstance(input, View) else ()
    shape_b = other.shape if isinstance(other, View) else ()
    shape = broadcast_shapes(shape_a, shape_b)
    compute, out_dtype = _binary_types(op, input, other)
    out = gs.empty(shape, out_dtype.name, device)
    if math.prod(shape):
        input, other = _rounded_to(out_dtype, input), _rounded_to(out_dtype, other)
        gk.binary(
            _KERNEL_OP.get(op, op),
            expand_to(input, shape),
            expand_to(other, shape),
            out,
            compute_dtype=compute.name,
            stream=stream_of(out),
        )
    return out


# float -> float casts that lose nothing; any other cast of an operand to the result dtype rounds.
_EXACT_WIDENING = {
    ("float16", "float32"),
    ("bfloat16", "float32"),
    ("float16", "float64"),
    ("bfloat16", "float64"),
    ("float32", "float64"),
}
_EXACT_NARROWING = {(wide, narrow) for narrow, wide in _EXACT_WIDENING}  # the same pairs, wider first


def _rounded_to(dtype: DType, operand):
    """A floating operand rounded to the floating result dtype first, as torch's TensorIterator does: a 0-d
    float16 next to bfloat16 data computes with its bfloat16 value. Exact widenings need no launch."""
    if not isinstance(operand, View) or not dtype.is_floating_point:
        return operand
    own = dtype_of(operand)
    if own is dtype or not own.is_floating_point or (own.name, dtype.name) in _EXACT_WIDENING:
        return operand
    return cast(operand, dtype)


@reg("binary_")
def binary_(op: str, input: View, other) -> None:
    """In place: a = a op b, where b must broadcast to a's shape and its result type
    must cast back to a's dtype (torch refuses float results into int tensors)."""
    forget_range(input)
    shape_b = other.shape if isinstance(other, View) else ()
    if broadcast_shapes(input.shape, shape_b) != tuple(input.shape):
        raise RuntimeError(
            f"output with shape {list(input.shape)} doesn't match the broadcast shape "
            f"{list(broadcast_shapes(input.shape, shape_b))}"
        )
    compute, out_dtype = _binary_types(op, input, other)
    own = dtype_of(input)
    if out_dtype.category > own.category:
        raise RuntimeError(
            f"result type {out_dtype.name.capitalize()} can't be cast to the desired output "
            f"type {own.name.capitalize()}"
        )
    if math.prod(input.shape):
        other = _rounded_to(out_dtype, other)
        gk.binary(
            _KERNEL_OP.get(op, op),
            input,
            expand_to(other, input.shape),
            input,
            compute_dtype=compute.name,
            stream=stream_of(input),
        )


@reg("unary")
def unary(op: str, input: View) -> View:
    dtype = dtype_of(input)
    if op in _BOOL_RESULT_UNARY:
        out_dtype = bool_
    elif op in _FLOAT_RESULT_UNARY and not dtype.is_floating_point:
        out_dtype = get_default_dtype()
    else:
        if op == "neg" and dtype is bool_:
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        if op == "bitwise_not" and dtype.is_floating_point:
            raise NotImplementedError(f"\"bitwise_not_cuda\" not implemented for '{dtype.name}'")
        _refuse_dtype(op, dtype)
        out_dtype = dtype
    src = cast(input, out_dtype) if out_dtype is not dtype and out_dtype is not bool_ else input
    out = gs.empty(input.shape, out_dtype.name, input.device)
    if math.prod(input.shape):
        gk.unary(op, src, out, stream=stream_of(input))
    return out


# Resolved entries (registry.py): the general functions above with the op bound, and the result dtype where
# the operands' dtypes alone decide it (so that NDArray need not read it back).
@resolver("binary")
def resolve_binary(op: str, dtype: DType, other: DType | type):
    general = functools.partial(binary, op)
    if other is dtype and op in _SAME_DTYPE_OPS and dtype is not bool_:
        return _dense_binary(op, dtype, general), dtype
    if (
        op in _SAME_DTYPE_OPS
        and isinstance(other, DType)
        and dtype.is_floating_point
        and other.is_floating_point
        and (dtype.name, other.name) in _EXACT_WIDENING | _EXACT_NARROWING
    ):  # floats of two widths (autocast's bf16 residual into the float32 stream): the same dense path. The
        # result dtype is left to the result (None): a 0-d operand does not promote (result_type's rule).
        return _dense_binary(op, dtype, general, other), None
    return general, binary_result_dtype(op, dtype, other)


def _dense_binary(op: str, dtype: DType, general, other: DType | None = None):
    """``binary(op, a, b)`` for an array of ``dtype`` and one of ``other`` (default: the same dtype; else a
    float that widens exactly to the wider of the two, the result's dtype, as ``binary`` computes it):
    contiguous operands of one shape and device (the common case: no broadcasting, nothing to check)
    allocate the output and launch the kernel's dense plan; any other pair takes the general path."""
    if other is None:
        name = dtype.name
        launch = gk.binary_dense_plan(op, name, name)
    else:
        wide = promote_types(dtype, other)
        name = wide.name  # the output's dtype and the compute dtype, as binary's _binary_types gives them
        launch = gk.binary_dense_plan(op, dtype.name, name, other.name, name)
    empty = gs.empty

    def run(a, b):
        if (
            b.__class__ is View
            and a.__class__ is View
            and a.shape == b.shape
            and a.device == b.device
            and (a._contig or a.is_contiguous())
            and (b._contig or b.is_contiguous())
        ):
            out = empty(a.shape, name, a.device)
            n = out.numel
            if n:
                launch(a.ptr, b.ptr, out.ptr, n, current_stream_handle(a.device))
            return out
        return general(a, b)

    return run


@resolver("binary_")
def resolve_binary_(op: str, dtype: DType, other: DType | type):
    return functools.partial(binary_, op)


@resolver("unary")
def resolve_unary(op: str, dtype: DType):
    general = functools.partial(unary, op)
    if op in _BOOL_RESULT_UNARY:
        return general, bool_
    if dtype.is_floating_point and op != "bitwise_not":
        return _dense_unary(op, dtype, general), dtype
    return general, None


def _dense_unary(op: str, dtype: DType, general):
    """``unary(op, x)`` for a floating ``x`` (the result has its dtype): a contiguous array allocates the output
    and launches the kernel's dense plan; any other layout takes the general path."""
    name = dtype.name
    launch = gk.unary_dense_plan(op, name)
    empty = gs.empty

    def run(x):
        if x.__class__ is View and (x._contig or x.is_contiguous()):
            out = empty(x.shape, name, x.device)
            n = out.numel
            if n:
                launch(x.ptr, out.ptr, n, current_stream_handle(x.device))
            return out
        return general(x)

    return run


@reg("where")
def where(condition: View, input, other) -> View:
    if dtype_of(condition) is not bool_:
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype {dtype_of(condition).name}"
        )
    device = condition.device
    for x in (input, other):
        if isinstance(x, View) and x.device != device:
            _device_of(condition, x)
    shape = broadcast_shapes(condition.shape, input.shape if isinstance(input, View) else ())
    shape = broadcast_shapes(shape, other.shape if isinstance(other, View) else ())
    dtype = result_type(input, other)
    out = gs.empty(shape, dtype.name, device)
    if math.prod(shape):
        gk.where(
            expand_to(condition, shape), expand_to(input, shape), expand_to(other, shape), out, stream=stream_of(out)
        )
    return out


@reg("clamp")
def clamp(input: View, min, max) -> View:
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = dtype_of(input)
    shape = tuple(input.shape)
    for bound in (min, max):
        if bound is not None:
            dtype = promote_types(dtype, result_type(input, bound))
        if isinstance(bound, View):  # tensor bounds broadcast with v, as torch.clamp(Tensor, Tensor, Tensor)
            _device_of(input, bound)
            shape = broadcast_shapes(shape, bound.shape)
    src = input if dtype is dtype_of(input) else cast(input, dtype)
    out = gs.empty(shape, dtype.name, input.device)
    if math.prod(shape):
        gk.clamp(expand_to(src, shape), expand_to(min, shape), expand_to(max, shape), out, stream=stream_of(input))
        if isinstance(min, int) and isinstance(max, int) and not isinstance(min, bool | float) and min <= max:
            set_range(out, min, max, False)  # integer bounds: an index clamped into range needs no device check
    return out


# ------------------------------------------------------------------ ternary
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
        if zero is None:
            raise TypeError("result_type needs at least one array")
        return zero
    if zero is None or zero.category <= dim.category:
        return dim
    return promote_types(dim, zero)


@reg("lerp")
def lerp(input: View, end: View, weight) -> View:
    dtype = dtype_of(input)
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"lerp_kernel\" not implemented for '{dtype.name}'")
    for name, x in (("end", end), ("weight", weight)):
        if isinstance(x, View) and dtype_of(x) is not dtype:
            raise RuntimeError(f"expected dtype {dtype.name} for `{name}` but got dtype {dtype_of(x).name}")
    shape = _shape_of(input, end, weight)
    out = gs.empty(shape, dtype.name, input.device)
    if math.prod(shape):
        gk.lerp(expand_to(input, shape), expand_to(end, shape), expand_to(weight, shape), out, stream=stream_of(out))
    return out


def _addc(op: str, input: View, tensor1: View, tensor2: View, value) -> View:
    if op == "addcdiv" and not dtype_of(tensor1).is_floating_point and not dtype_of(tensor2).is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv "
            "will perform a true division of tensor1 and tensor2."
        )
    shape = _shape_of(input, tensor1, tensor2)
    dtype = _result_type(input, tensor1, tensor2)
    # As torch's TensorIterator: every operand is first rounded to the common dtype (a float64 0-d
    # factor next to float16 tensors counts as float16), then computed in float32.
    input, tensor1, tensor2 = (cast(v, dtype) if dtype_of(v) is not dtype else v for v in (input, tensor1, tensor2))
    out = gs.empty(shape, dtype.name, input.device)
    if math.prod(shape):
        getattr(gk, op)(
            expand_to(input, shape),
            expand_to(tensor1, shape),
            expand_to(tensor2, shape),
            out,
            value=value,
            stream=stream_of(out),
        )
    return out


reg("addcmul")(lambda input, tensor1, tensor2, value: _addc("addcmul", input, tensor1, tensor2, value))
reg("addcdiv")(lambda input, tensor1, tensor2, value: _addc("addcdiv", input, tensor1, tensor2, value))
