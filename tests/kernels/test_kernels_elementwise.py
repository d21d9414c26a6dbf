"""Unary, binary and ternary kernels, copies and casts, against torch (float64 references)."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from kernels_helpers import FLOATS, INTS, TORCH_DTYPES, assert_close, buf, layout_variants, make, sync

import genesis_kernels as gk

UNARY_REF = {
    "neg": torch.neg,
    "abs": torch.abs,
    "square": torch.square,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log10": torch.log10,
    "log1p": torch.log1p,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "erf": torch.erf,
    "erfc": torch.erfc,
    "lgamma": torch.lgamma,
    "sigmoid": torch.sigmoid,
    "logsigmoid": F.logsigmoid,
    "softplus": F.softplus,
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "sign": torch.sign,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "frac": torch.frac,
    "reciprocal": torch.reciprocal,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
    "isfinite": torch.isfinite,
    "isposinf": torch.isposinf,
    "isneginf": torch.isneginf,
    "logical_not": torch.logical_not,
    "identity": lambda x: x,
}
# Input ranges that keep each op inside its domain.
DOMAIN = {
    "log": (0.05, 5),
    "log2": (0.05, 5),
    "log10": (0.05, 5),
    "sqrt": (0.05, 5),
    "rsqrt": (0.05, 5),
    "log1p": (-0.9, 5),
    "asin": (-0.95, 0.95),
    "acos": (-0.95, 0.95),
    "atanh": (-0.95, 0.95),
    "acosh": (1.05, 5),
    "lgamma": (0.1, 6),
    "reciprocal": (0.2, 4),
    "tan": (-1.2, 1.2),
}
BOOL_OUT = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not"}


def _unary_input(op: str, shape: tuple[int, ...], dtype: str, device: str) -> torch.Tensor:
    low, high = DOMAIN.get(op, (-3.0, 3.0))
    x = make(shape, dtype, device, low=low, high=high)
    if op in ("isnan", "isinf", "isfinite", "isposinf", "isneginf") and dtype in FLOATS and x.numel() >= 4:
        x.view(-1)[:4] = torch.tensor([float("nan"), float("inf"), float("-inf"), 1.0])
    if op == "round" and dtype in FLOATS:
        x = (x * 2).round() / 2  # exercise ties: half to even
    return x


def _unary_check(op: str, x: torch.Tensor, out_dtype: str, device: str) -> None:
    out = torch.empty(x.shape, dtype=TORCH_DTYPES[out_dtype], device=device)
    gk.unary(op, buf(x), buf(out))
    sync(device)
    ref = UNARY_REF[op](x.double() if x.dtype.is_floating_point else x)
    dtype = str(x.dtype).removeprefix("torch.")
    extra = {}
    if op in ("tan", "lgamma", "expm1", "exp", "exp2", "sinh", "cosh", "mish") and dtype == "float32":
        extra = dict(rtol=2e-5, atol=2e-6)
    assert_close(out, ref.to(out.dtype), out_dtype, **extra)


@pytest.mark.parametrize("op", sorted(set(UNARY_REF) - {"identity"}))
def test_unary_every_op_float32_transposed(device: str, op: str) -> None:
    x = _unary_input(op, (37, 5), "float32", device).t()  # non-contiguous input, contiguous out
    _unary_check(op, x, "bool" if op in BOOL_OUT else "float32", device)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["neg", "exp", "sigmoid", "gelu", "round", "isnan", "relu", "sign"])
def test_unary_float_dtypes(device: str, dtype: str, op: str) -> None:
    x = _unary_input(op, (3, 37), dtype, device)
    _unary_check(op, x, "bool" if op in BOOL_OUT else dtype, device)


_UNARY_INT_CASES = [
    (dtype, op)
    for dtype in (*INTS, "bool")
    for op in ("neg", "abs", "sign", "bitwise_not", "logical_not", "floor", "exp")
    # torch rejects neg/abs/sign/floor on bool and wraps unsigned neg/abs/sign per op: no reference
    if not (dtype == "bool" and op in ("neg", "abs", "sign", "floor"))
    and not (dtype == "uint8" and op in ("neg", "abs", "sign"))
]


@pytest.mark.parametrize(("dtype", "op"), _UNARY_INT_CASES)
def test_unary_integer_dtypes(device: str, dtype: str, op: str) -> None:
    x = make((41,), dtype, device)
    out_dtype = "bool" if op == "logical_not" else ("float32" if op == "exp" else dtype)
    out = torch.empty(x.shape, dtype=TORCH_DTYPES[out_dtype], device=device)
    gk.unary(op, buf(x), buf(out))
    sync(device)
    ref = {"bitwise_not": torch.bitwise_not, "exp": lambda t: torch.exp(t.double())}.get(op, UNARY_REF.get(op))(x)
    assert_close(out, ref.to(out.dtype), out_dtype)


BINARY_REF = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "floordiv": torch.floor_divide,
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "atan2": torch.atan2,
    "hypot": torch.hypot,
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
}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
FLOAT_ONLY = {"atan2", "hypot"}
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor"}


def _binary_inputs(op: str, shape: tuple[int, ...], dtype: str, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    a = make(shape, dtype, device)
    b = make(shape, dtype, device)
    if op in ("div", "floordiv", "remainder", "fmod") and dtype not in ("bool",):
        b = torch.where(b == 0, torch.ones_like(b), b)
    if op == "pow":
        if dtype in FLOATS:
            a = a.abs() + 0.1
        else:
            b = b.abs() % 5
            a = a % 7 if dtype != "uint8" else a % 5
    if op in ("eq", "ne") and a.numel() > 3:
        b.view(-1)[:3] = a.view(-1)[:3]
    return a, b


def _binary_ref(op: str, a: torch.Tensor, b: torch.Tensor, dtype: str) -> torch.Tensor:
    if dtype in FLOATS:
        return BINARY_REF[op](a.double(), b.double() if isinstance(b, torch.Tensor) else b)
    return BINARY_REF[op](a, b)


_BINARY_CASES = [
    # The interpreter tier runs only a few ops per extra dtype (int8, float64), to stay short.
    pytest.param(
        op,
        dtype,
        marks=[pytest.mark.gpu_tier]
        if dtype in ("int8", "float64") and op not in ("add", "floordiv", "remainder", "pow")
        else [],
    )
    for op in sorted(BINARY_REF)
    for dtype in ("float32", "bfloat16", "float64", "int32", "int64", "int8", "uint8")
    # ops that are not defined for a dtype (atan2 on ints, bitwise ops on floats) are not cases at all
    if not ((op in FLOAT_ONLY and dtype not in FLOATS) or (op in INT_ONLY and dtype in FLOATS))
]


@pytest.mark.parametrize(("op", "dtype"), _BINARY_CASES)
def test_binary_ops(device: str, op: str, dtype: str) -> None:
    a, b = _binary_inputs(op, (2, 29), dtype, device)
    out_dtype = "bool" if op in COMPARE else ("float32" if op == "div" and dtype not in FLOATS else dtype)
    out = torch.empty(a.shape, dtype=TORCH_DTYPES[out_dtype], device=device)
    gk.binary(op, buf(a), buf(b), buf(out), compute_dtype=dtype)
    sync(device)
    ref = _binary_ref(op, a, b, dtype)
    extra = dict(rtol=3e-5, atol=3e-6) if op == "pow" and dtype == "float32" else {}
    assert_close(out, ref.to(out.dtype), out_dtype, **extra)


@pytest.mark.parametrize(
    "layout",
    [
        "contiguous",
        "transposed",
        "sliced",
        "broadcast_row",
        "broadcast_col",
        "scalar_left",
        "scalar_right",
        "zero_size",
        "one",
        "out_transposed",
    ],
)
def test_binary_layouts(device: str, layout: str) -> None:
    rows, cols = (0, 7) if layout == "zero_size" else ((1, 1) if layout == "one" else (13, 31))
    base_a = make((rows, cols), "float32", device)
    base_b = make((rows, cols), "float32", device)
    a: torch.Tensor | float = base_a
    b: torch.Tensor | float = base_b
    out = torch.empty((rows, cols), device=device)
    if layout in ("transposed", "sliced"):
        a = layout_variants(base_a)[layout]
    elif layout == "broadcast_row":
        b = make((1, cols), "float32", device).expand(rows, cols)
    elif layout == "broadcast_col":
        a = make((rows, 1), "float32", device).expand(rows, cols)
    elif layout == "scalar_left":
        a = 2.5
    elif layout == "scalar_right":
        b = -0.75
    elif layout == "out_transposed":
        out = torch.empty((cols, rows), device=device).t()
    gk.binary(
        "sub",
        a if isinstance(a, float) else buf(a),
        b if isinstance(b, float) else buf(b),
        buf(out),
        compute_dtype="float32",
    )
    sync(device)
    ta = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=torch.float64)
    tb = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=torch.float64)
    assert_close(out, (ta.double() - tb.double()).expand(rows, cols).float())


def test_binary_mixed_dtypes_and_scalars(device: str) -> None:
    a = make((37,), "bfloat16", device)
    b = make((37,), "float32", device)
    out = torch.empty(37, device=device)
    gk.binary("mul", buf(a), buf(b), buf(out), compute_dtype="float32")
    gk_int = torch.empty(37, dtype=torch.int64, device=device)
    ai = make((37,), "int32", device)
    gk.binary("add", buf(ai), 3, buf(gk_int), compute_dtype="int64")
    bools = torch.empty(37, dtype=torch.bool, device=device)
    gk.binary("gt", 0.5, buf(b), buf(bools), compute_dtype="float32")
    sync(device)
    assert_close(out, a.double() * b.double())
    assert_close(gk_int, ai.long() + 3)
    assert_close(bools, 0.5 > b)


@pytest.mark.parametrize(("adt", "bdt", "odt"), [("float32", "bfloat16", "float32"), ("float16", "float32", "float16")])
def test_binary_mixed_widths_over_whole_and_partial_blocks(device: str, adt: str, bdt: str, odt: str) -> None:
    """Operands of different widths take the dense kernel's (BLOCK / VEC, VEC) indexing: whole blocks (no mask)
    and a partial last block."""
    n = 4 * 1024 + 37
    a, b = make((n,), adt, device), make((n,), bdt, device)
    out = torch.empty(n, dtype=getattr(torch, odt), device=device)
    gk.binary("add", buf(a), buf(b), buf(out), compute_dtype="float32")
    sync(device)
    assert_close(out, (a.double() + b.double()).to(out.dtype))


def test_binary_inplace(device: str) -> None:
    a = make((5, 37), "float32", device)
    b = make((5, 37), "float32", device)
    expected = a.double() * b.double()
    gk.binary("mul", buf(a), buf(b), buf(a), compute_dtype="float32")  # out aliases an input
    sync(device)
    assert_close(a, expected)


def test_ternary(device: str) -> None:
    x, y, w = (make((3, 37), "float32", device) for _ in range(3))
    cond = make((3, 37), "bool", device)
    out = torch.empty(3, 37, device=device)
    gk.where(buf(cond), buf(x), buf(y), buf(out))
    sync(device)
    assert_close(out, torch.where(cond, x, y))
    gk.where(buf(cond), buf(x), 0.0, buf(out))
    sync(device)
    assert_close(out, torch.where(cond, x, 0.0))
    gk.clamp(buf(x), -1.0, 0.5, buf(out))
    sync(device)
    assert_close(out, x.clamp(-1.0, 0.5))
    gk.clamp(buf(x), buf(y), None, buf(out))
    sync(device)
    assert_close(out, torch.clamp(x, min=y))
    wu = w.abs() / 3
    gk.lerp(buf(x), buf(y), buf(wu), buf(out))
    sync(device)
    assert_close(out, torch.lerp(x.double(), y.double(), wu.double()))
    gk.addcmul(buf(x), buf(y), buf(w), buf(out), value=0.5)
    sync(device)
    assert_close(out, torch.addcmul(x.double(), y.double(), w.double(), value=0.5))
    wn = torch.where(w.abs() < 0.1, torch.ones_like(w), w)
    gk.addcdiv(buf(x), buf(y), buf(wn), buf(out), value=-2.0)
    sync(device)
    assert_close(out, torch.addcdiv(x.double(), y.double(), wn.double(), value=-2.0))


ALL = FLOATS + INTS + ("bool",)


@pytest.mark.parametrize("n", [0, 1, 37])
def test_copy_cast_every_pair(device: str, n: int) -> None:
    for src_dt in ALL:
        src = make((n,), src_dt, device, low=-60, high=60) if src_dt in FLOATS else make((n,), src_dt, device)
        if src_dt in FLOATS:
            src = torch.where(src.abs() < 0.5, torch.full_like(src, 0.0), src)  # also exercise exact zeros
        for dst_dt in ALL:
            if dst_dt == "uint8" and src_dt in FLOATS + INTS:
                src_use = src.abs()  # negative float -> uint8 is undefined behaviour in C and torch
            else:
                src_use = src
            out = torch.empty((n,), dtype=TORCH_DTYPES[dst_dt], device=device)
            gk.copy(buf(src_use), buf(out))
            sync(device)
            assert_close(out, src_use.to(out.dtype), dst_dt, rtol=0, atol=0)


@pytest.mark.parametrize("case", ["transpose3d", "permute", "broadcast_src", "sliced_both", "strided_out"])
def test_copy_layouts(device: str, case: str) -> None:
    if case == "transpose3d":
        src = make((3, 5, 7), "float32", device).transpose(0, 2)
        out = torch.empty(src.shape, device=device)
    elif case == "permute":
        src = make((2, 3, 5, 7), "bfloat16", device).permute(2, 0, 3, 1)
        out = torch.empty(src.shape, dtype=torch.bfloat16, device=device)
    elif case == "broadcast_src":
        src = make((1, 7), "int32", device).expand(11, 7)
        out = torch.empty(11, 7, dtype=torch.int32, device=device)
    elif case == "sliced_both":
        src = make((9, 20), "float64", device)[::2, 1::3]
        out = torch.empty(9, 35, dtype=torch.float64, device=device)[2:7, ::5]
    else:
        src = make((6, 13), "float16", device)
        out = torch.empty(13, 6, dtype=torch.float32, device=device).t()
    gk.copy(buf(src), buf(out))
    sync(device)
    assert_close(out, src.to(out.dtype), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL)
def test_fill(device: str, dtype: str) -> None:
    out = torch.empty(4, 9, dtype=TORCH_DTYPES[dtype], device=device)[:, ::2]
    value = {"bool": True, "uint8": 200}.get(dtype, -7 if dtype in INTS else 1.375)
    gk.fill(buf(out), value)
    sync(device)
    assert_close(out, torch.full(out.shape, value, dtype=out.dtype), rtol=0, atol=0)


@pytest.mark.slow
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=pytest.mark.cuda)])  # too big for the interpreter
@pytest.mark.parametrize("n", [3_000_017, 2**24 + 3])
def test_large_gpu_only(device: str, n: int) -> None:
    a = make((n,), "float32", device)
    b = make((n,), "float32", device)
    out = torch.empty(n, device=device)
    gk.binary("add", buf(a), buf(b), buf(out), compute_dtype="float32")
    sync(device)
    assert torch.equal(out, a + b)
    h = torch.empty(n, dtype=torch.bfloat16, device=device)
    gk.copy(buf(a), buf(h))
    sync(device)
    assert torch.equal(h, a.bfloat16())


# ----------------------------------------------------------------------------------------------
# Operands contiguous along different dims: the 2-D tiled kernels (tiled.py), ragged tiles included
# ----------------------------------------------------------------------------------------------

from genesis_kernels import tiled  # noqa: E402  (beside the tests that use it)


@pytest.fixture(params=["default_tiles", "small_tiles"])
def tile_sizes(request, monkeypatch):  # type: ignore[no-untyped-def]
    if request.param == "small_tiles":  # several tiles along both dims, and ragged ones, on small shapes
        monkeypatch.setattr(tiled, "tile_config", lambda itemsize: (16, 32, 4))
    return request.param


@pytest.mark.parametrize(
    "case", ["b_transposed", "a_transposed", "out_transposed", "permuted_3d", "bf16_to_fp32", "int32_mul"]
)
def test_binary_transposed_operand_tiled(device: str, tile_sizes: str, case: str) -> None:
    rows, cols = 70, 133
    dt, odt, op = "float32", "float32", "add"
    if case == "bf16_to_fp32":
        dt = "bfloat16"
    if case == "int32_mul":
        dt, odt, op = "int32", "int32", "mul"
    a = make((rows, cols), dt, device)
    b = make((cols, rows), dt, device).t()
    out = torch.empty(rows, cols, dtype=TORCH_DTYPES[odt], device=device)
    if case == "a_transposed":
        a, b = b, a
    elif case == "out_transposed":
        b = make((rows, cols), dt, device)
        out = torch.empty(cols, rows, device=device).t()
        a = make((cols, rows), dt, device).t()
        b = make((rows, cols), dt, device)
    elif case == "permuted_3d":  # (5, 14, 133) seen as (133, 5, 14): collapses to one rank-2 space
        a = make((5, 14, cols), dt, device).permute(2, 0, 1)
        b = make((cols, 5, 14), dt, device)
        out = torch.empty(cols, 5, 14, device=device)
    assert tiled.wanted(
        sys.modules["genesis_kernels.strided"].layout(tuple(out.shape), [out.stride(), a.stride(), b.stride()]), 2
    )
    cdt = "float32" if dt == "bfloat16" else dt
    gk.binary(op, buf(a), buf(b), buf(out), compute_dtype=cdt)
    sync(device)
    ref = a.double() + b.double() if op == "add" else a * b
    assert_close(out, ref.to(out.dtype), odt, rtol=0, atol=0)


@pytest.mark.parametrize("src_dt,dst_dt", [("float32", "float32"), ("bfloat16", "bfloat16"), ("bfloat16", "float32"),
                                           ("float64", "float16"), ("int8", "int64"), ("bool", "float32")])  # fmt: skip
def test_copy_transposed_tiled(device: str, tile_sizes: str, src_dt: str, dst_dt: str) -> None:
    src = make((133, 70), src_dt, device).t()  # x.t().contiguous()
    out = torch.empty(70, 133, dtype=TORCH_DTYPES[dst_dt], device=device)
    gk.copy(buf(src), buf(out))
    sync(device)
    assert_close(out, src.to(out.dtype), dst_dt, rtol=0, atol=0)
    back = torch.empty(133, 70, dtype=TORCH_DTYPES[dst_dt], device=device).t()  # out stored transposed
    if src_dt == "bool":
        gk.copy(buf(src), buf(back))
    else:
        gk.unary("neg", buf(src), buf(back))
    sync(device)
    want = src.to(back.dtype) if src_dt == "bool" else (-src.double()).to(back.dtype)
    assert_close(back, want, dst_dt, rtol=0, atol=0)
