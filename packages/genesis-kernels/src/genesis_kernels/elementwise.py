"""Elementwise kernels: unary, binary and ternary ops over any strides, with casts.

One kernel per arity. Every operand is read in place through its own strides (no
hidden ``.contiguous()``): the launcher collapses the iteration space and, when
every operand is contiguous after that, takes the vectorised path (``CONTIG``),
where whole blocks load without a mask and only the ragged tail is masked, so the
compiler emits 16-byte accesses. Values are converted to the compute dtype
(``CDT``; float32 for float16/bfloat16), the op runs, and the result is cast to
the output's dtype (``!= 0`` for bool, truncation for float -> int, as torch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl

from genesis_storage import contiguous_strides

from . import special_math, tiled
from .buffer import INT32_LIMIT, BufferLike, accumulate_dtype, check_same_shape, dtype_info, numel
from .elementwise_ops import binary_op, cast_to, div_rn, ternary_op, unary_op  # noqa: F401  (div_rn: re-exported)
from .runtime import Kernel, cdiv, ptr_type
from .strided import layout, offset_of, size_types, stride_types


@triton.jit
def _load(p, off, mask, SCALAR: tl.constexpr, CDT: tl.constexpr):
    if SCALAR:
        return cast_to(p, CDT)
    else:
        return cast_to(tl.load(p + off, mask=mask), CDT)


@triton.jit
def _flat_index(n, BLOCK: tl.constexpr, INT64: tl.constexpr):
    pid = tl.program_id(0)
    if INT64:
        start = pid.to(tl.int64) * BLOCK
    else:
        start = pid * BLOCK
    return start, start + tl.arange(0, BLOCK)


# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------


@triton.jit
def _unary_body(x, out, ix, io, mask, OP: tl.constexpr, CDT: tl.constexpr, X_SCALAR: tl.constexpr, BLOCK: tl.constexpr):
    if X_SCALAR:
        v = tl.full([BLOCK], cast_to(x, CDT), CDT)
    else:
        v = cast_to(tl.load(x + ix, mask=mask), CDT)
    r = unary_op(v, OP)
    tl.store(out + io, cast_to(r, out.dtype.element_ty), mask=mask)


@triton.jit
def _unary_kernel(
    x,
    out,
    n,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    x0,
    x1,
    x2,
    x3,
    x4,
    x5,
    x6,
    x7,
    o0,
    o1,
    o2,
    o3,
    o4,
    o5,
    o6,
    o7,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    X_SCALAR: tl.constexpr,
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    _, i = _flat_index(n, BLOCK, INT64)
    ix = offset_of(i, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)
    io = offset_of(i, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, RANK)
    _unary_body(x, out, ix, io, i < n, OP, CDT, X_SCALAR, BLOCK)


@triton.jit
def _unary_dense_kernel(
    x, out, n, OP: tl.constexpr, CDT: tl.constexpr, X_SCALAR: tl.constexpr, INT64: tl.constexpr, BLOCK: tl.constexpr
):
    # Operands laid out alike in one dense block: a flat index, and few arguments to launch.
    start, i = _flat_index(n, BLOCK, INT64)
    if start + BLOCK <= n:
        _unary_body(x, out, i, i, None, OP, CDT, X_SCALAR, BLOCK)
    else:
        _unary_body(x, out, i, i, i < n, OP, CDT, X_SCALAR, BLOCK)


@triton.jit
def _binary_body(
    a,
    b,
    out,
    ia,
    ib,
    io,
    mask,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    A_SCALAR: tl.constexpr,
    B_SCALAR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    av = _load(a, ia, mask, A_SCALAR, CDT)
    bv = _load(b, ib, mask, B_SCALAR, CDT)
    r = binary_op(av, bv, OP, CDT)
    if A_SCALAR and B_SCALAR:
        r = tl.full([BLOCK], r, r.dtype)
    tl.store(out + io, cast_to(r, out.dtype.element_ty), mask=mask)


@triton.jit
def _binary_kernel(
    a,
    b,
    out,
    n,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    a0,
    a1,
    a2,
    a3,
    a4,
    a5,
    a6,
    a7,
    b0,
    b1,
    b2,
    b3,
    b4,
    b5,
    b6,
    b7,
    o0,
    o1,
    o2,
    o3,
    o4,
    o5,
    o6,
    o7,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    A_SCALAR: tl.constexpr,
    B_SCALAR: tl.constexpr,
    RANK: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    _, i = _flat_index(n, BLOCK, INT64)
    ia = offset_of(i, S1, S2, S3, S4, S5, S6, S7, a0, a1, a2, a3, a4, a5, a6, a7, RANK)
    ib = offset_of(i, S1, S2, S3, S4, S5, S6, S7, b0, b1, b2, b3, b4, b5, b6, b7, RANK)
    io = offset_of(i, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, RANK)
    _binary_body(a, b, out, ia, ib, io, i < n, OP, CDT, A_SCALAR, B_SCALAR, BLOCK)


@triton.jit
def _binary_dense_kernel(
    a,
    b,
    out,
    n,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    A_SCALAR: tl.constexpr,
    B_SCALAR: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
    VEC: tl.constexpr,
):
    start, i = _flat_index(n, BLOCK, INT64)
    if VEC:  # operands of different widths: the block as (BLOCK / VEC, VEC), VEC elements per thread for every one
        i = start + (tl.arange(0, BLOCK // VEC)[:, None] * VEC + tl.arange(0, VEC)[None, :])
    if start + BLOCK <= n:
        _binary_body(a, b, out, i, i, i, None, OP, CDT, A_SCALAR, B_SCALAR, BLOCK)
    else:
        _binary_body(a, b, out, i, i, i, i < n, OP, CDT, A_SCALAR, B_SCALAR, BLOCK)


@triton.jit
def _ternary_body(
    a,
    b,
    c,
    value,
    out,
    ia,
    ib,
    ic,
    io,
    mask,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    A_DT: tl.constexpr,
    A_SCALAR: tl.constexpr,
    B_SCALAR: tl.constexpr,
    C_SCALAR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    av = _load(a, ia, mask, A_SCALAR, A_DT)
    bv = _load(b, ib, mask, B_SCALAR, CDT)
    cv = _load(c, ic, mask, C_SCALAR, CDT)
    r = ternary_op(av, bv, cv, value.to(CDT), OP, CDT)
    if A_SCALAR and B_SCALAR and C_SCALAR:
        r = tl.full([BLOCK], r, r.dtype)
    tl.store(out + io, cast_to(r, out.dtype.element_ty), mask=mask)


@triton.jit
def _ternary_kernel(
    a,
    b,
    c,
    out,
    value,
    n,
    S1,
    S2,
    S3,
    S4,
    S5,
    S6,
    S7,
    a0,
    a1,
    a2,
    a3,
    a4,
    a5,
    a6,
    a7,
    b0,
    b1,
    b2,
    b3,
    b4,
    b5,
    b6,
    b7,
    c0,
    c1,
    c2,
    c3,
    c4,
    c5,
    c6,
    c7,
    o0,
    o1,
    o2,
    o3,
    o4,
    o5,
    o6,
    o7,
    OP: tl.constexpr,
    CDT: tl.constexpr,
    A_DT: tl.constexpr,
    A_SCALAR: tl.constexpr,
    B_SCALAR: tl.constexpr,
    C_SCALAR: tl.constexpr,
    RANK: tl.constexpr,
    CONTIG: tl.constexpr,
    INT64: tl.constexpr,
    BLOCK: tl.constexpr,
):
    start, i = _flat_index(n, BLOCK, INT64)
    if CONTIG:
        if start + BLOCK <= n:
            _ternary_body(a, b, c, value, out, i, i, i, i, None, OP, CDT, A_DT, A_SCALAR, B_SCALAR, C_SCALAR, BLOCK)
        else:
            _ternary_body(a, b, c, value, out, i, i, i, i, i < n, OP, CDT, A_DT, A_SCALAR, B_SCALAR, C_SCALAR, BLOCK)
    else:
        ia = offset_of(i, S1, S2, S3, S4, S5, S6, S7, a0, a1, a2, a3, a4, a5, a6, a7, RANK)
        ib = offset_of(i, S1, S2, S3, S4, S5, S6, S7, b0, b1, b2, b3, b4, b5, b6, b7, RANK)
        ic = offset_of(i, S1, S2, S3, S4, S5, S6, S7, c0, c1, c2, c3, c4, c5, c6, c7, RANK)
        io = offset_of(i, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, RANK)
        _ternary_body(a, b, c, value, out, ia, ib, ic, io, i < n, OP, CDT, A_DT, A_SCALAR, B_SCALAR, C_SCALAR, BLOCK)


UNARY = Kernel(_unary_kernel)
UNARY_DENSE = Kernel(_unary_dense_kernel)
BINARY = Kernel(_binary_kernel)
BINARY_DENSE = Kernel(_binary_dense_kernel)
TERNARY = Kernel(_ternary_kernel)

# ----------------------------------------------------------------------------------------------
# Launchers
# ----------------------------------------------------------------------------------------------

UNARY_OPS = frozenset(
    (
        "identity",
        "neg",
        "abs",
        "square",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tan",
        "tanh",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "erfc",
        "lgamma",
        "sigmoid",
        "logsigmoid",
        "softplus",
        "relu",
        "gelu",
        "gelu_tanh",
        "silu",
        "mish",
        "sign",
        "floor",
        "ceil",
        "round",
        "trunc",
        "frac",
        "reciprocal",
        "isnan",
        "isinf",
        "isfinite",
        "isposinf",
        "isneginf",
        "logical_not",
        "bitwise_not",
    )
)
# Ops computed in floating point whatever the input (torch promotes integers to float32).
_FLOAT_UNARY = frozenset(
    (
        "exp",
        "exp2",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tan",
        "tanh",
        "asin",
        "acos",
        "atan",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "erfc",
        "lgamma",
        "sigmoid",
        "logsigmoid",
        "softplus",
        "gelu",
        "gelu_tanh",
        "silu",
        "mish",
        "reciprocal",
    )
)
# Ops that are the identity on integers (and bool).
_INT_IDENTITY = frozenset(("floor", "ceil", "round", "trunc"))
BINARY_OPS = frozenset(
    (
        "add",
        "sub",
        "mul",
        "div",
        "floordiv",
        "remainder",
        "fmod",
        "pow",
        "maximum",
        "minimum",
        "atan2",
        "hypot",
        "logaddexp",
        "fmax",
        "fmin",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "lshift",
        "rshift",
    )
)
_FLOAT_BINARY = frozenset(("div", "atan2", "hypot", "logaddexp"))
# The special functions' ops (special_math.py).
UNARY_OPS = UNARY_OPS | special_math.UNARY_OPS
_FLOAT_UNARY = _FLOAT_UNARY | special_math.FLOAT_UNARY
BINARY_OPS = BINARY_OPS | special_math.BINARY_OPS
_FLOAT_BINARY = _FLOAT_BINARY | special_math.FLOAT_BINARY

Scalar = bool | int | float


def _is_scalar(v: Any) -> bool:
    return isinstance(v, (bool, int, float))


def launch_config(itemsize: int, contiguous: bool) -> tuple[int, int]:
    """(BLOCK, num_warps) of an elementwise launch; a plain function so a tuning script can replace it.

    Contiguous: each of the 128 threads moves 32 bytes per operand (two 16-byte accesses for
    4-byte types), enough loads in flight to saturate HBM. Strided: plain 1024.
    """
    return (max(512, min(4096, 4096 // itemsize)) if contiguous else 1024), 4


def _scalar_type(cdt: str) -> str:
    return "fp64" if dtype_info(cdt).is_float else "i64"


def _scalar_value(v: Scalar, cdt: str) -> Any:
    return float(v) if dtype_info(cdt).is_float else int(v)


def _unary_compute(op: str, x_dtype: str, out_dtype: str) -> str:
    if op == "identity":
        # Copies convert directly, except half <-> integer or half <-> other half, which go via float32.
        halves = ("float16", "bfloat16")
        if x_dtype in halves and x_dtype != out_dtype and out_dtype != "float32" and out_dtype != "float64":
            return "float32"
        return x_dtype
    if op in _FLOAT_UNARY:
        return "float64" if "float64" in (x_dtype, out_dtype) else "float32"
    if x_dtype == "bool" and op not in ("logical_not", "bitwise_not", "isnan", "isinf", "isfinite"):
        return "int8"
    return accumulate_dtype(x_dtype) if dtype_info(x_dtype).is_float else x_dtype


_SCALARS = (bool, int, float)
_DENSE_INT64 = INT32_LIMIT - 65536  # flat indices at or past this need int64
_dense_strides: dict[tuple[int, ...], tuple[int, ...]] = {}


def _is_dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Row-major contiguous (memoised per shape: this is asked on every launch)."""
    want = _dense_strides.get(shape)
    if want is None:
        if len(_dense_strides) > 4096:
            _dense_strides.clear()
        want = _dense_strides[shape] = contiguous_strides(shape)
    return strides == want


def _alike(x: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """A Python scalar, or a buffer with exactly this shape and these strides."""
    return isinstance(x, _SCALARS) or (x.strides == strides and x.shape == shape)


def _unary_types(op: str, xdt: str, odt: str, x_scalar: bool) -> tuple[str, str]:
    """(op actually run, compute dtype); raises for ops the input dtype has no meaning for."""
    if op not in UNARY_OPS:
        raise ValueError(f"unknown unary op {op!r}")
    if not x_scalar:
        if op in _INT_IDENTITY and not dtype_info(xdt).is_float:
            op = "identity"
        if op == "bitwise_not" and dtype_info(xdt).is_float:
            raise TypeError("bitwise_not is only defined for integer and bool buffers")
    return op, _unary_compute(op, xdt, odt)


def _unary_dense_launch(op: str, xdt: str, odt: str, x_scalar: bool, int64: bool, aligned: bool) -> Any:
    """The dense unary kernel's launch for one specialisation (built once), with its constexprs, block and
    compute dtype attached."""
    key = (op, xdt, odt, x_scalar, int64, aligned)
    launch = UNARY_DENSE.cache.get(key)
    if launch is None:
        run_op, cdt = _unary_types(op, xdt, odt, x_scalar)
        block, warps = launch_config(max(dtype_info(odt).itemsize, dtype_info(xdt).itemsize), True)
        consts = dict(OP=run_op, CDT=dtype_info(cdt).tl, X_SCALAR=x_scalar, INT64=int64, BLOCK=block)
        x_type = _scalar_type(cdt) if x_scalar else ptr_type(xdt)
        types = {"x": x_type, "out": ptr_type(odt), "n": "i64" if int64 else "i32"}
        launch = UNARY_DENSE.build(
            key, types, consts, ("out",) if x_scalar else ("x", "out") if aligned else (), num_warps=warps
        )
        launch._consts = tuple(consts.values())  # type: ignore[attr-defined]
        launch._block = block  # type: ignore[attr-defined]
        launch._cdt = cdt  # type: ignore[attr-defined]
    return launch


def _unary_dense(op: str, x: BufferLike | Scalar, out: BufferLike, n: int, x_scalar: bool, stream: int) -> None:
    xdt = ("float64" if isinstance(x, float) else "int64") if x_scalar else x.dtype  # type: ignore[union-attr]
    aligned = ((0 if x_scalar else x.ptr) | out.ptr) & 15 == 0  # type: ignore[union-attr]
    launch = _unary_dense_launch(op, xdt, out.dtype, x_scalar, n >= _DENSE_INT64, aligned)
    if n:
        x_arg = _scalar_value(x, launch._cdt) if x_scalar else x.ptr  # type: ignore[arg-type,union-attr]
        launch((cdiv(n, launch._block), 1, 1), stream, (x_arg, out.ptr, n, *launch._consts))


def unary(op: str, x: BufferLike | Scalar, out: BufferLike, *, stream: int = 0) -> None:
    """``out = op(x)``. ``x`` may be a Python scalar (``fill`` is ``unary("identity", value, out)``)."""
    shape, ostrides = out.shape, out.strides
    x_scalar = isinstance(x, _SCALARS)
    if _alike(x, shape, ostrides) and _is_dense(shape, ostrides):
        _unary_dense(op, x, out, numel(shape), x_scalar, stream)
        return
    if isinstance(x, _SCALARS):  # == x_scalar, spelled so that mypy narrows x
        strides = [ostrides]
    else:
        check_same_shape(x, out)
        strides = [ostrides, x.strides]
    lay = layout(shape, strides)
    if lay.n == 0:
        return
    if lay.contiguous:  # dense in some other order (a transposed copy of a transposed view, ...)
        _unary_dense(op, x, out, lay.n, x_scalar, stream)
        return
    if lay.rank == 2 and not isinstance(x, _SCALARS):
        if tiled.wanted(lay, 1):  # x and out contiguous along different dims (x.t().contiguous())
            run_op, cdt = _unary_types(op, x.dtype, out.dtype, False)
            tiled.unary(run_op, x, out, lay, cdt, stream=stream)
            return
    xdt = ("float64" if isinstance(x, float) else "int64") if x_scalar else x.dtype  # type: ignore[union-attr]
    odt = out.dtype
    run_op, cdt = _unary_types(op, xdt, odt, x_scalar)
    block, warps = launch_config(max(dtype_info(odt).itemsize, dtype_info(xdt).itemsize), False)
    key = (run_op, xdt, odt, x_scalar, lay.rank, lay.int64, block, warps)
    launch = UNARY.cache.get(key)
    if launch is None:
        it = "i64" if lay.int64 else "i32"
        types = {
            "x": _scalar_type(cdt) if x_scalar else ptr_type(xdt),
            "out": ptr_type(odt),
            "n": it,
            **size_types(it),
            **stride_types("x", it),
            **stride_types("o", it),
        }
        consts = dict(OP=run_op, CDT=dtype_info(cdt).tl, X_SCALAR=x_scalar, RANK=lay.rank, INT64=lay.int64, BLOCK=block)
        launch = UNARY.build(key, types, consts, num_warps=warps)
        launch._consts = tuple(consts.values())  # type: ignore[attr-defined]
    st = lay.strides
    x_arg = _scalar_value(x, cdt) if x_scalar else x.ptr  # type: ignore[arg-type,union-attr]
    xs = (0,) * 8 if x_scalar else st[1]
    launch((cdiv(lay.n, block), 1, 1), stream, (x_arg, out.ptr, lay.n, *lay.sizes, *xs, *st[0], *launch._consts))  # type: ignore[attr-defined]


def _binary_compute(op: str, compute_dtype: str, odt: str) -> str:
    if op not in BINARY_OPS:
        raise ValueError(f"unknown binary op {op!r}")
    cdt = compute_dtype
    if cdt in ("float16", "bfloat16"):
        cdt = "float32"
    elif cdt == "bool" and op not in (
        "eq",
        "ne",
        "logical_and",
        "logical_or",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
    ):
        cdt = "int8"
    if op in _FLOAT_BINARY and not dtype_info(cdt).is_float:
        cdt = "float64" if odt == "float64" else "float32"
    return cdt


def _binary_dense_launch(op: str, adt: str, bdt: str, odt: str, compute_dtype: str, int64: bool, aligned: bool) -> Any:
    """The dense binary kernel's launch for one specialisation ("scalar" for a Python-number operand), built
    once, with its constexprs, block and compute dtype attached."""
    key = (op, adt, bdt, odt, compute_dtype, int64, aligned)
    launch = BINARY_DENSE.cache.get(key)
    if launch is None:
        a_scalar, b_scalar = adt == "scalar", bdt == "scalar"
        cdt = _binary_compute(op, compute_dtype, odt)
        sizes = [dtype_info(t).itemsize for t in (odt, adt, bdt) if t != "scalar"]
        block, warps = launch_config(max(sizes), True)
        # Tensors of different widths (a float32 residual stream plus a bf16 block output): left alone, Triton
        # gives the loads 16-byte vectors of the narrowest (8 bf16 per thread), the float32 store its own (4 per
        # thread), and converts between the two layouts through shared memory (2 barriers and 4 shared stores
        # per block in the sm_90 code, none when the widths agree). Indexing the block as (BLOCK / VEC, VEC)
        # tiles gives every tensor VEC elements per thread, the widest one's 16 bytes: one layout.
        vec = 16 // max(sizes) if len(set(sizes)) > 1 else 0
        types = {
            "a": _scalar_type(cdt) if a_scalar else ptr_type(adt),
            "b": _scalar_type(cdt) if b_scalar else ptr_type(bdt),
            "out": ptr_type(odt),
            "n": "i64" if int64 else "i32",
        }
        consts = dict(
            OP=op, CDT=dtype_info(cdt).tl, A_SCALAR=a_scalar, B_SCALAR=b_scalar, INT64=int64, BLOCK=block, VEC=vec
        )
        ptrs = [p for p, sc in (("a", a_scalar), ("b", b_scalar), ("out", False)) if not sc]
        launch = BINARY_DENSE.build(key, types, consts, ptrs if aligned else (), num_warps=warps)
        launch._consts = tuple(consts.values())  # type: ignore[attr-defined]
        launch._block = block  # type: ignore[attr-defined]
        launch._cdt = cdt  # type: ignore[attr-defined]
    return launch


DensePlan = Callable[..., None]


def binary_dense_plan(
    op: str, dtype: str, compute_dtype: str, other_dtype: str | None = None, out_dtype: str | None = None
) -> DensePlan:
    """``plan(a, b, out, n, stream)``: ``out = op(a, b)`` over ``n`` elements of dense buffers of one ``dtype``
    (or ``a`` of ``dtype``, ``b`` of ``other_dtype`` and ``out`` of ``out_dtype``), given as device addresses.
    What ``binary`` does for operands laid out exactly like a dense output, with everything but the
    addresses, the size and the stream resolved once per (alignment, index width): a backend's resolved
    entry for contiguous operands of one shape calls it. ``n`` must be positive."""
    launches: dict[int, tuple[Any, int, tuple]] = {}
    bdt = dtype if other_dtype is None else other_dtype
    odt = dtype if out_dtype is None else out_dtype

    def plan(a: int, b: int, out: int, n: int, stream: int) -> None:
        key = ((a | b | out) & 15) | (n >= _DENSE_INT64) << 4  # misalignment bits, index width
        found = launches.get(key)
        if found is None:
            launch = _binary_dense_launch(op, dtype, bdt, odt, compute_dtype, n >= _DENSE_INT64, key & 15 == 0)
            found = launches[key] = (launch, launch._block, launch._consts)
        launch, block, consts = found
        launch((-(-n // block), 1, 1), stream, (a, b, out, n, *consts))

    return plan


def unary_dense_plan(op: str, dtype: str) -> DensePlan:
    """``plan(x, out, n, stream)``: ``out = op(x)`` over ``n`` elements of dense buffers of one ``dtype``, given as
    device addresses (``unary``'s dense launch resolved once per alignment and index width, as
    :func:`binary_dense_plan`). ``n`` must be positive."""
    launches: dict[int, tuple[Any, int, tuple]] = {}

    def plan(x: int, out: int, n: int, stream: int) -> None:
        key = ((x | out) & 15) | (n >= _DENSE_INT64) << 4
        found = launches.get(key)
        if found is None:
            launch = _unary_dense_launch(op, dtype, dtype, False, n >= _DENSE_INT64, key & 15 == 0)
            found = launches[key] = (launch, launch._block, launch._consts)
        launch, block, consts = found
        launch((-(-n // block), 1, 1), stream, (x, out, n, *consts))

    return plan


def _binary_dense(
    op: str, a: Any, b: Any, out: BufferLike, n: int, a_scalar: bool, b_scalar: bool, compute_dtype: str, stream: int
) -> None:
    adt = "scalar" if a_scalar else a.dtype
    bdt = "scalar" if b_scalar else b.dtype
    aligned = ((0 if a_scalar else a.ptr) | (0 if b_scalar else b.ptr) | out.ptr) & 15 == 0
    launch = _binary_dense_launch(op, adt, bdt, out.dtype, compute_dtype, n >= _DENSE_INT64, aligned)
    if n:
        cdt = launch._cdt
        launch(
            (cdiv(n, launch._block), 1, 1),
            stream,
            (
                _scalar_value(a, cdt) if a_scalar else a.ptr,
                _scalar_value(b, cdt) if b_scalar else b.ptr,
                out.ptr,
                n,
                *launch._consts,
            ),
        )


def binary(
    op: str, a: BufferLike | Scalar, b: BufferLike | Scalar, out: BufferLike, *, compute_dtype: str, stream: int = 0
) -> None:
    """``out = op(a, b)``: ``a``/``b`` already broadcast to ``out.shape`` (strides may be 0) or Python scalars.

    ``compute_dtype`` is the promoted dtype chosen by the caller; float16/bfloat16 compute in float32,
    bool in int8; true division and atan2 of integers compute in float32.
    """
    shape, ostrides = out.shape, out.strides
    a_scalar, b_scalar = isinstance(a, _SCALARS), isinstance(b, _SCALARS)
    # The hot path: operands laid out exactly like a dense output (or scalars).
    if _alike(a, shape, ostrides) and _alike(b, shape, ostrides) and _is_dense(shape, ostrides):
        _binary_dense(op, a, b, out, numel(shape), a_scalar, b_scalar, compute_dtype, stream)
        return
    strides = [ostrides]
    if not a_scalar:
        check_same_shape(a, out)  # type: ignore[arg-type]
        strides.append(a.strides)  # type: ignore[union-attr]
    if not b_scalar:
        check_same_shape(b, out)  # type: ignore[arg-type]
        strides.append(b.strides)  # type: ignore[union-attr]
    lay = layout(shape, strides)
    if lay.n == 0:
        return
    if lay.contiguous:
        _binary_dense(op, a, b, out, lay.n, a_scalar, b_scalar, compute_dtype, stream)
        return
    if lay.rank == 2 and not a_scalar and not b_scalar:
        if tiled.wanted(lay, 2):  # operands contiguous along different dims (a + b.t())
            tiled.binary(op, a, b, out, lay, _binary_compute(op, compute_dtype, out.dtype), stream=stream)  # type: ignore[arg-type]
            return
    odt = out.dtype
    cdt = _binary_compute(op, compute_dtype, odt)
    adt = "scalar" if a_scalar else a.dtype  # type: ignore[union-attr]
    bdt = "scalar" if b_scalar else b.dtype  # type: ignore[union-attr]
    sizes = [dtype_info(t).itemsize for t in (odt, adt, bdt) if t != "scalar"]
    block, warps = launch_config(max(sizes), False)
    key = (op, adt, bdt, odt, cdt, lay.rank, lay.int64, block, warps)
    launch = BINARY.cache.get(key)
    if launch is None:
        it = "i64" if lay.int64 else "i32"
        types = {
            "a": _scalar_type(cdt) if a_scalar else ptr_type(adt),
            "b": _scalar_type(cdt) if b_scalar else ptr_type(bdt),
            "out": ptr_type(odt),
            "n": it,
            **size_types(it),
            **stride_types("a", it),
            **stride_types("b", it),
            **stride_types("o", it),
        }
        consts = dict(
            OP=op,
            CDT=dtype_info(cdt).tl,
            A_SCALAR=a_scalar,
            B_SCALAR=b_scalar,
            RANK=lay.rank,
            INT64=lay.int64,
            BLOCK=block,
        )
        launch = BINARY.build(key, types, consts, num_warps=warps)
        launch._consts = tuple(consts.values())  # type: ignore[attr-defined]
    st = lay.strides
    k = 1
    a_st: tuple[int, ...]
    b_st: tuple[int, ...]
    if a_scalar:
        a_arg, a_st = _scalar_value(a, cdt), (0,) * 8  # type: ignore[arg-type]
    else:
        a_arg, a_st = a.ptr, st[k]  # type: ignore[union-attr]
        k += 1
    if b_scalar:
        b_arg, b_st = _scalar_value(b, cdt), (0,) * 8  # type: ignore[arg-type]
    else:
        b_arg, b_st = b.ptr, st[k]  # type: ignore[union-attr]
    launch(
        (cdiv(lay.n, block), 1, 1),
        stream,
        (a_arg, b_arg, out.ptr, lay.n, *lay.sizes, *a_st, *b_st, *st[0], *launch._consts),  # type: ignore[attr-defined]
    )


def _ternary(
    op: str,
    a: BufferLike | Scalar,
    b: BufferLike | Scalar,
    c: BufferLike | Scalar,
    out: BufferLike,
    value: Scalar,
    compute_dtype: str | None,
    stream: int,
) -> None:
    odt = out.dtype
    operands = (a, b, c)
    scal = tuple(_is_scalar(t) for t in operands)
    strides = [out.strides]
    for t in operands:
        if not isinstance(t, _SCALARS):  # == not _is_scalar(t), spelled so that mypy narrows t
            check_same_shape(t, out)
            strides.append(t.strides)
    lay = layout(out.shape, strides)
    if lay.n == 0:
        return
    if compute_dtype is None:
        compute_dtype = odt
    cdt = accumulate_dtype(compute_dtype) if dtype_info(compute_dtype).is_float else compute_dtype
    if cdt == "bool" and op != "where":
        cdt = "int8"
    # ``where`` reads its condition as is; the other ops read ``a`` in the compute dtype.
    if op == "where":
        a_dt = "bool" if scal[0] else a.dtype  # type: ignore[union-attr]
    else:
        a_dt = cdt
    dts = tuple("scalar" if s else t.dtype for t, s in zip(operands, scal))  # type: ignore[union-attr]
    contig = lay.contiguous
    sizes = [dtype_info(odt).itemsize] + [dtype_info(d).itemsize for d in dts if d != "scalar"]
    block, warps = launch_config(max(sizes), contig)
    addr = 0
    for t, s in zip(operands, scal):
        addr |= 0 if s else t.ptr  # type: ignore[union-attr]
    aligned = (addr | out.ptr) & 15 == 0
    key = (op, *dts, odt, cdt, lay.rank, contig, lay.int64, aligned, block, warps)
    launch = TERNARY.cache.get(key)
    if launch is None:
        it = "i64" if lay.int64 else "i32"
        types = {"out": ptr_type(odt), "value": _scalar_type(cdt), "n": it, **size_types(it), **stride_types("o", it)}
        for name, d, s in zip("abc", dts, scal):
            scalar_dt = a_dt if name == "a" else cdt
            types[name] = _scalar_type(scalar_dt) if s else ptr_type(d)
            types.update(stride_types(name, it))
        consts = dict(
            OP=op,
            CDT=dtype_info(cdt).tl,
            A_DT=dtype_info(a_dt).tl,
            A_SCALAR=scal[0],
            B_SCALAR=scal[1],
            C_SCALAR=scal[2],
            RANK=lay.rank,
            CONTIG=contig,
            INT64=lay.int64,
            BLOCK=block,
        )
        ptrs = [p for p, s in zip("abc", scal) if not s] + ["out"]
        launch = TERNARY.build(key, types, consts, ptrs if aligned else (), num_warps=warps)
        launch._consts = tuple(consts.values())  # type: ignore[attr-defined]
    st = lay.strides
    args: list[Any] = []
    ops_st: list[tuple[int, ...]] = []
    k = 1
    for name, t, s in zip("abc", operands, scal):
        if s:
            args.append(_scalar_value(t, a_dt if name == "a" else cdt))  # type: ignore[arg-type]
            ops_st.append((0,) * 8)
        else:
            args.append(t.ptr)  # type: ignore[union-attr]
            ops_st.append(st[k])
            k += 1
    launch(
        (cdiv(lay.n, block), 1, 1),
        stream,
        (
            *args,
            out.ptr,
            _scalar_value(value, cdt),
            lay.n,
            *lay.sizes,
            *ops_st[0],
            *ops_st[1],
            *ops_st[2],
            *st[0],
            *launch._consts,  # type: ignore[attr-defined]
        ),
    )


def where(
    cond: BufferLike | Scalar, a: BufferLike | Scalar, b: BufferLike | Scalar, out: BufferLike, *, stream: int = 0
) -> None:
    """``out = cond ? a : b`` (all broadcast to ``out.shape``); computed in ``out.dtype``."""
    _ternary("where", cond, a, b, out, 0, out.dtype, stream)


def clamp(
    x: BufferLike | Scalar,
    lo: BufferLike | Scalar | None,
    hi: BufferLike | Scalar | None,
    out: BufferLike,
    *,
    stream: int = 0,
) -> None:
    """``out = min(max(x, lo), hi)``; either bound may be None. NaN in ``x`` propagates."""
    if lo is None and hi is None:
        raise ValueError("clamp needs at least one of lo and hi")
    op = "clamp" if lo is not None and hi is not None else ("clamp_min" if hi is None else "clamp_max")
    _ternary(op, x, 0 if lo is None else lo, 0 if hi is None else hi, out, 0, out.dtype, stream)


def lerp(
    a: BufferLike | Scalar, b: BufferLike | Scalar, w: BufferLike | Scalar, out: BufferLike, *, stream: int = 0
) -> None:
    """``out = a + w * (b - a)``, in torch's two-sided form for accuracy near ``w = 1``."""
    _ternary("lerp", a, b, w, out, 0, out.dtype, stream)


def addcmul(
    x: BufferLike | Scalar,
    t1: BufferLike | Scalar,
    t2: BufferLike | Scalar,
    out: BufferLike,
    *,
    value: Scalar = 1,
    stream: int = 0,
) -> None:
    """``out = x + value * t1 * t2``."""
    _ternary("addcmul", x, t1, t2, out, value, out.dtype, stream)


def addcdiv(
    x: BufferLike | Scalar,
    t1: BufferLike | Scalar,
    t2: BufferLike | Scalar,
    out: BufferLike,
    *,
    value: Scalar = 1,
    stream: int = 0,
) -> None:
    """``out = x + value * t1 / t2``."""
    _ternary("addcdiv", x, t1, t2, out, value, out.dtype, stream)


def copy(src: BufferLike, out: BufferLike, *, stream: int = 0) -> None:
    """``out[...] = src[...]`` for any strides on both sides, with a cast to ``out.dtype``."""
    unary("identity", src, out, stream=stream)


def fill(out: BufferLike, value: Scalar, *, stream: int = 0) -> None:
    """Every element of ``out`` (any strides) set to ``value`` cast to ``out.dtype``."""
    unary("identity", value, out, stream=stream)
