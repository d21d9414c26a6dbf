"""The elementwise family's per-element math: casts with torch's rounding, the unary / binary / ternary ops
by name (``unary_op(x, "exp")``), and the integer and rounding helpers they use.

These are ``@triton.jit`` device functions, not kernels: elementwise.py's kernels and tiled.py's
transposed-tile kernels both call them, and so do other families that need torch's casts
(``cast_to``) or correctly rounded division (``div_rn``).
"""

from __future__ import annotations

import triton
import triton.language as tl

from . import special_math
from .mathlib import lib
from .runtime import INTERPRET

# ----------------------------------------------------------------------------------------------
# Device helpers
# ----------------------------------------------------------------------------------------------


# The interpreter truncates float32 -> bfloat16; the GPU rounds to nearest even. Emulate
# the GPU under the interpreter so CPU tests see the same numbers.
_EMULATE_BF16_ROUNDING = tl.constexpr(INTERPRET)


@triton.jit
def _bf16_round(v):
    u = v.to(tl.uint32, bitcast=True)
    rounded = u + 0x7FFF + ((u >> 16) & 1)
    u = tl.where(v != v, u | 0x400000, rounded)  # keep NaN a (quiet) NaN
    return (u >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def cast_to(v, DT: tl.constexpr):
    """Cast as torch does: to bool means ``!= 0``, float -> int truncates.

    Conversions from or to the 16-bit floats go through float32 (exact on the way up;
    the same double rounding as torch on the way down from float64).
    """
    if DT == tl.int1:
        return v != 0
    elif v.dtype == DT:
        return v
    elif DT == tl.bfloat16 and _EMULATE_BF16_ROUNDING:
        return _bf16_round(v.to(tl.float32))
    elif (v.dtype == tl.float16 or v.dtype == tl.bfloat16) and DT != tl.float32:
        return v.to(tl.float32).to(DT)
    elif (DT == tl.float16 or DT == tl.bfloat16) and v.dtype != tl.float32:
        return v.to(tl.float32).to(DT)
    else:
        return v.to(DT)


@triton.jit
def div_rn(a, b):
    """IEEE division: Triton's ``/`` on float32 is the 2-ulp approximate instruction."""
    if b.dtype == tl.float32:
        return tl.div_rn(a, b)
    else:
        return a / b


@triton.jit
def _floor_divide(a, b, CDT: tl.constexpr):
    if CDT.is_floating():
        # torch's div_floor_floating: exact for representable quotients, sign-correct zeros.
        mod = lib.fmod(a, b)
        div = div_rn(a - mod, b)
        div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
        fl = lib.floor(div)
        fl = tl.where(div - fl > 0.5, fl + 1, fl)
        q = div_rn(a, b)
        zero_sign = tl.where(q < 0, -0.0, 0.0).to(CDT)
        res = tl.where(div == 0, zero_sign, fl)
        return tl.where(b == 0, q, res)
    else:
        q = a // b
        r = a % b
        return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)


@triton.jit
def _remainder(a, b, CDT: tl.constexpr):
    if CDT.is_floating():
        r = lib.fmod(a, b)
    else:
        r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _int_pow(a, b):
    # Square-and-multiply over the 63 exponent bits; negative exponents give 0 except for |a| == 1.
    # Both operands may be scalars or blocks: start from blocks of the common shape so the
    # loop-carried values keep one type.
    result = a * 0 + b * 0 + 1
    base = a + b * 0
    e = b + a * 0
    for _ in range(63):
        result = tl.where((e & 1) != 0, result * base, result)
        base = base * base
        e = e >> 1
    neg = b < 0
    special = tl.where(a == 1, 1, tl.where(a == -1, tl.where((b & 1) != 0, -1, 1), 0))
    return tl.where(neg, special.to(result.dtype), result)


@triton.jit
def unary_op(x, OP: tl.constexpr):
    """``x`` is already in the compute dtype."""
    if OP == "identity":
        return x
    elif OP == "neg":
        return -x
    elif OP == "abs":
        return tl.abs(x)
    elif OP == "square":
        return x * x
    elif OP == "exp":
        return lib.exp(x)
    elif OP == "exp2":
        return lib.exp2(x)
    elif OP == "expm1":
        return lib.expm1(x)
    elif OP == "log":
        return lib.log(x)
    elif OP == "log2":
        return lib.log2(x)
    elif OP == "log10":
        return lib.log10(x)
    elif OP == "log1p":
        return lib.log1p(x)
    elif OP == "sqrt":
        return lib.sqrt(x)
    elif OP == "rsqrt":
        return lib.rsqrt(x)
    elif OP == "sin":
        return lib.sin(x)
    elif OP == "cos":
        return lib.cos(x)
    elif OP == "tan":
        return lib.tan(x)
    elif OP == "tanh":
        return lib.tanh(x)
    elif OP == "asin":
        return lib.asin(x)
    elif OP == "acos":
        return lib.acos(x)
    elif OP == "atan":
        return lib.atan(x)
    elif OP == "sinh":
        return lib.sinh(x)
    elif OP == "cosh":
        return lib.cosh(x)
    elif OP == "asinh":
        return lib.asinh(x)
    elif OP == "acosh":
        return lib.acosh(x)
    elif OP == "atanh":
        return lib.atanh(x)
    elif OP == "erf":
        return lib.erf(x)
    elif OP == "erfc":
        return lib.erfc(x)
    elif OP == "lgamma":
        return lib.lgamma(x)
    elif OP == "sigmoid":
        return div_rn(1.0, 1.0 + lib.exp(-x))
    elif OP == "logsigmoid":
        return tl.minimum(x, 0.0) - lib.log1p(lib.exp(-tl.abs(x)))
    elif OP == "softplus":
        return tl.where(x > 20.0, x, lib.log1p(lib.exp(x)))
    elif OP == "relu":
        return tl.where(x < 0, 0, x)
    elif OP == "gelu":
        return 0.5 * x * (1.0 + lib.erf(x * 0.7071067811865476))
    elif OP == "gelu_tanh":
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + lib.tanh(inner))
    elif OP == "silu":
        return div_rn(x, 1.0 + lib.exp(-x))
    elif OP == "mish":
        return x * lib.tanh(tl.where(x > 20.0, x, lib.log1p(lib.exp(x))))
    elif OP == "sign":
        return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)
    elif OP == "floor":
        return lib.floor(x)
    elif OP == "ceil":
        return lib.ceil(x)
    elif OP == "round":
        return lib.rint(x)  # half to even, as torch.round
    elif OP == "trunc":
        return lib.trunc(x)
    elif OP == "frac":
        return x - lib.trunc(x)
    elif OP == "reciprocal":
        return div_rn(1.0, x)
    elif OP == "isnan":
        return x != x
    elif OP == "isinf":
        return tl.abs(x) == float("inf")
    elif OP == "isfinite":
        return (x == x) & (tl.abs(x) != float("inf"))
    elif OP == "isposinf":
        return x == float("inf")
    elif OP == "isneginf":
        return x == float("-inf")
    elif OP == "logical_not":
        return x == 0
    elif OP == "bitwise_not":
        if x.dtype == tl.uint8:
            return x ^ 255  # (the interpreter's ``~`` overflows on unsigned types)
        else:
            return ~x
    else:
        return special_math.special_unary(x, OP)  # erfinv, digamma, i0, ... (special_math.py)


@triton.jit
def binary_op(a, b, OP: tl.constexpr, CDT: tl.constexpr):
    """``a`` and ``b`` are already in the compute dtype (one may be a scalar)."""
    if OP == "add":
        return a + b
    elif OP == "sub":
        return a - b
    elif OP == "mul":
        return a * b
    elif OP == "div":
        return div_rn(a, b)
    elif OP == "floordiv":
        return _floor_divide(a, b, CDT)
    elif OP == "remainder":
        return _remainder(a, b, CDT)
    elif OP == "fmod":
        if CDT.is_floating():
            return lib.fmod(a, b)
        else:
            return a % b
    elif OP == "pow":
        if CDT.is_floating():
            return lib.pow(a, b)
        else:
            return _int_pow(a, b)
    elif OP == "maximum":
        if CDT.is_floating():
            return tl.where((a > b) | (a != a), a, b)  # NaN propagates, as torch.maximum
        else:
            return tl.maximum(a, b)
    elif OP == "minimum":
        if CDT.is_floating():
            return tl.where((a < b) | (a != a), a, b)
        else:
            return tl.minimum(a, b)
    elif OP == "atan2":
        return lib.atan2(a, b)
    elif OP == "hypot":
        return lib.hypot(a, b)
    elif OP == "logaddexp":
        # log(e^a + e^b) = max + log1p(e^-|a - b|); two equal infinities give themselves (inf - inf is NaN)
        top = tl.where(a > b, a, b)
        return tl.where((a == b) & (tl.abs(a) == float("inf")), a, top + lib.log1p(lib.exp(-tl.abs(a - b))))
    elif OP == "fmax":
        if CDT.is_floating():
            return tl.where((a >= b) | (b != b), a, b)  # NaN only where both are, as torch.fmax
        else:
            return tl.maximum(a, b)
    elif OP == "fmin":
        if CDT.is_floating():
            return tl.where((a <= b) | (b != b), a, b)
        else:
            return tl.minimum(a, b)
    elif OP == "eq":
        return a == b
    elif OP == "ne":
        return a != b
    elif OP == "lt":
        return a < b
    elif OP == "le":
        return a <= b
    elif OP == "gt":
        return a > b
    elif OP == "ge":
        return a >= b
    elif OP == "logical_and":
        return (a != 0) & (b != 0)
    elif OP == "logical_or":
        return (a != 0) | (b != 0)
    elif OP == "logical_xor":
        return (a != 0) ^ (b != 0)
    elif OP == "bitwise_and":
        return a & b
    elif OP == "bitwise_or":
        return a | b
    elif OP == "bitwise_xor":
        return a ^ b
    elif OP == "lshift":
        # torch's shifts are defined for every count: past the width (or negative) everything is shifted out
        out_of_range = (b < 0) | (b >= CDT.primitive_bitwidth)
        return tl.where(out_of_range, 0, a << tl.where(out_of_range, 0, b))
    elif OP == "rshift":
        out_of_range = (b < 0) | (b >= CDT.primitive_bitwidth)
        return tl.where(out_of_range, tl.where(a < 0, -1, 0), a >> tl.where(out_of_range, 0, b))
    else:
        return special_math.special_binary(a, b, OP)  # zeta, igamma, nextafter, gcd, ... (special_math.py)


@triton.jit
def ternary_op(a, b, c, value, OP: tl.constexpr, CDT: tl.constexpr):
    if OP == "where":
        return tl.where(a != 0, b, c)
    elif OP == "clamp":
        r = tl.where(a < b, b, a)  # a NaN in ``a`` stays NaN, as torch.clamp
        return tl.where(r > c, c, r)
    elif OP == "clamp_min":
        return tl.where(a < b, b, a)
    elif OP == "clamp_max":
        return tl.where(a > c, c, a)
    elif OP == "lerp":
        d = b - a
        return tl.where(tl.abs(c) < 0.5, a + c * d, b - d * (1.0 - c))
    elif OP == "addcmul":
        return a + value * b * c
    elif OP == "addcdiv":
        return a + value * div_rn(b, c)
    else:
        tl.static_assert(False, "unknown ternary op")
