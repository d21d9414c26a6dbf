"""CPU elementwise ops: unary and binary math by name, in-place binary, where, clamp, lerp, addcmul, addcdiv."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from ...dtypes import DType, binary_result_dtype, bool_
from .common import reg, resolver

_BINARY: dict[str, Callable[..., torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "floor_divide": torch.floor_divide,
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "atan2": torch.atan2,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift,
    "hypot": torch.hypot,
    "logaddexp": torch.logaddexp,
    "fmax": torch.fmax,
    "fmin": torch.fmin,
    "zeta": torch.special.zeta,
    "igamma": torch.igamma,
    "igammac": torch.igammac,
    "nextafter": torch.nextafter,
    "gcd": torch.gcd,
    "lcm": torch.lcm,
}
# These torch functions take no Python scalar; a 0-dim tensor promotes the same way.
_NEEDS_TENSOR = {"maximum", "minimum", "atan2", "logical_and", "logical_or", "logical_xor"}
_NEEDS_TENSOR |= {"hypot", "logaddexp", "fmax", "fmin"}
_NEEDS_TENSOR |= {"igamma", "igammac", "nextafter", "gcd", "lcm"}

# Unary names torch has under nn.functional only (or under another spelling); the rest are torch.<name>.
_UNARY: dict[str, Callable[..., torch.Tensor]] = {
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "silu": torch.nn.functional.silu,
    "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": functools.partial(torch.nn.functional.gelu, approximate="tanh"),
    # the special functions torch has under torch.special only
    "erfcx": torch.special.erfcx,
    "ndtri": torch.special.ndtri,
    "log_ndtr": torch.special.log_ndtr,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
    **{name: getattr(torch.special, name) for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1")},
    **{name: getattr(torch.special, name) for name in ("modified_bessel_k0", "modified_bessel_k1", "airy_ai")},
    **{name: getattr(torch.special, name) for name in ("scaled_modified_bessel_k0", "scaled_modified_bessel_k1")},
}


@reg("binary")
def binary(op: str, input, other):
    """``input op other``; either may be a Python scalar (reflected operators pass the scalar first)."""
    if not isinstance(input, torch.Tensor):
        # A float next to float64 data keeps its float64 value (torch.tensor alone would round it to float32);
        # elsewhere the 0-d wrapper's default dtype already matches the result's.
        wide = isinstance(input, float) and isinstance(other, torch.Tensor) and other.dtype == torch.float64
        input = torch.tensor(input, dtype=torch.float64 if wide else None)
    elif op in _NEEDS_TENSOR and not isinstance(other, torch.Tensor):
        other = torch.tensor(other)
    return _BINARY[op](input, other)


@reg("binary_")
def binary_(op: str, input: torch.Tensor, other) -> None:
    getattr(input, f"{op}_")(other)


@reg("unary")
def unary(op: str, input: torch.Tensor) -> torch.Tensor:
    fn = _UNARY.get(op) or getattr(torch, op)
    return fn(input)


# Resolved entries (registry.py): the torch function itself, and the result dtype where the operands' dtypes
# alone decide it (dtypes.binary_result_dtype); elsewhere it is read back from torch's result.
@resolver("binary")
def resolve_binary(op: str, dtype: DType, other: DType | type):
    """``(fn(input, other) -> result, result dtype or None)`` for ``input op other``, input of ``dtype`` and
    ``other`` an array of that dtype or a Python number of that type."""
    fn = _BINARY.get(op)
    if fn is None or (op in _NEEDS_TENSOR and not isinstance(other, DType)):
        return None
    return fn, binary_result_dtype(op, dtype, other)


@resolver("binary_")
def resolve_binary_(op: str, dtype: DType, other: DType | type):
    """``fn(input, other)``, writing ``input op other`` into input: torch's in-place method."""
    return getattr(torch.Tensor, f"{op}_", None)


_BOOL_RESULT_UNARY = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not", "signbit"})


@resolver("unary")
def resolve_unary(op: str, dtype: DType):
    """``(fn(input) -> result, result dtype or None)``: a floating input keeps its dtype (predicates: bool)."""
    fn = _UNARY.get(op) or getattr(torch, op, None)
    if fn is None:
        return None  # the general path raises the error
    if op in _BOOL_RESULT_UNARY:
        return fn, bool_
    return fn, dtype if dtype.is_floating_point else None


reg("where")(lambda condition, input, other: torch.where(condition, input, other))
reg("clamp")(lambda input, min, max: torch.clamp(input, min, max))
reg("lerp")(lambda input, end, weight: torch.lerp(input, end, weight))
reg("addcmul")(lambda input, tensor1, tensor2, value: torch.addcmul(input, tensor1, tensor2, value=value))
reg("addcdiv")(lambda input, tensor1, tensor2, value: torch.addcdiv(input, tensor1, tensor2, value=value))
