"""Creation kernels: arange and linspace over a 1-D output of any stride; eye, triu, tril.

``out[i] = start + i * step`` computed in float32 for float32/half outputs (as torch's
CUDA arange), float64 for float64, int64 for integers; linspace fills the two halves
from both ends (``start + i*step`` and ``end - (n-1-i)*step``) exactly as torch does,
so the last element is ``end``, with torch's step: computed in float32 for float32/half
outputs and in float64 for float64 and integer outputs (which truncate, as torch's CPU).
``eye``/``triu``/``tril`` walk (row tile, column tile, batch) of the last two dims; batch
dims are collapsed and read through their strides.
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from .buffer import MAX_RANK, BufferLike, collapse, dtype_info, numel
from .elementwise import cast_to
from .runtime import Kernel, cdiv, ptr_type
from .strided import offset_of

_BLOCK = 1024


@triton.jit
def _range_kernel(out, start, step, end, n, stride, CDT: tl.constexpr, LINSPACE: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    s = start.to(CDT)
    d = step.to(CDT)
    if LINSPACE:
        half = n // 2
        v = tl.where(i < half, s + d * i.to(CDT), end.to(CDT) - d * (n - 1 - i).to(CDT))
    else:
        v = s + d * i.to(CDT)
    tl.store(out + i * stride, cast_to(v, out.dtype.element_ty), mask=mask)


_RANGE = Kernel(_range_kernel)


def _launch(out: BufferLike, start: float, step: float, end: float, linspace: bool, stream: int) -> None:
    if len(out.shape) != 1:
        raise ValueError("arange/linspace write a 1-D buffer")
    n = out.shape[0]
    if n == 0:
        return
    cdt = _compute_dtype(out.dtype, linspace)
    scalar = "fp64" if dtype_info(cdt).is_float else "i64"
    key = (out.dtype, cdt, linspace)
    fn = _RANGE.cache.get(key)
    if fn is None:
        types = {
            "out": ptr_type(out.dtype),
            "start": scalar,
            "step": scalar,
            "end": scalar,
            "n": "i64",
            "stride": "i64",
        }
        consts = dict(CDT=dtype_info(cdt).tl, LINSPACE=linspace, BLOCK=_BLOCK)
        fn = _RANGE.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    conv = float if scalar == "fp64" else int
    fn((cdiv(n, _BLOCK), 1, 1), stream, (out.ptr, conv(start), conv(step), conv(end), n, out.strides[0], *fn._consts))  # type: ignore[attr-defined]


def _compute_dtype(dtype: str, linspace: bool) -> str:
    if dtype == "float64" or (linspace and not dtype_info(dtype).is_float):
        return "float64"
    return "float32" if dtype_info(dtype).is_float else "int64"


def arange(out: BufferLike, start: float, step: float, *, stream: int = 0) -> None:
    """``out[i] = start + i * step`` for ``i < len(out)``."""
    _launch(out, start, step, 0, False, stream)


def linspace(out: BufferLike, start: float, end: float, *, stream: int = 0) -> None:
    """``len(out)`` evenly spaced values from ``start`` to ``end`` inclusive."""
    n = out.shape[0] if len(out.shape) == 1 else 0
    if n <= 1:
        _launch(out, start, 0.0, start, True, stream)
        return
    if _compute_dtype(out.dtype, True) == "float32":  # torch's float32 step: each operation rounded to float32
        f32 = np.float32
        step = float((f32(end) - f32(start)) / f32(n - 1))
    else:
        step = (end - start) / (n - 1)
    _launch(out, start, step, end, True, stream)


# ----------------------------------------------------------------------------------------------
# eye, triu, tril: one kernel over (batch, row tile, column tile) of the last two dims.
# ----------------------------------------------------------------------------------------------


@triton.jit
def _tri_kernel(
    x,
    out,
    R,
    C,
    diagonal,
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
    xr,
    xc,
    orr,
    oc,
    MODE: tl.constexpr,
    RANK: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    b = tl.program_id(2).to(tl.int64)
    r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    c = tl.program_id(1).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (r < R)[:, None] & (c < C)[None, :]
    ob = offset_of(b, S1, S2, S3, S4, S5, S6, S7, o0, o1, o2, o3, o4, o5, o6, o7, RANK)
    d = c[None, :] - r[:, None]
    if MODE == "eye":
        v = (d == 0).to(tl.int8)
    else:
        xb = offset_of(b, S1, S2, S3, S4, S5, S6, S7, x0, x1, x2, x3, x4, x5, x6, x7, RANK)
        if MODE == "triu":
            keep = d >= diagonal
        else:
            keep = d <= diagonal
        v = tl.load(x + xb + r[:, None] * xr + c[None, :] * xc, mask=mask & keep, other=0)
    tl.store(out + ob + r[:, None] * orr + c[None, :] * oc, cast_to(v, out.dtype.element_ty), mask=mask)


_TRI = Kernel(_tri_kernel)


def _tri(mode: str, x: BufferLike | None, out: BufferLike, diagonal: int, stream: int) -> None:
    if len(out.shape) < 2:
        raise ValueError(f"{mode}: needs at least 2 dims, got shape {tuple(out.shape)}")
    if x is not None and tuple(x.shape) != tuple(out.shape):
        raise ValueError(f"{mode}: x.shape {tuple(x.shape)} != out.shape {tuple(out.shape)}")
    R, C = out.shape[-2:]
    bshape = tuple(out.shape[:-2])
    B = numel(bshape)
    if R == 0 or C == 0 or B == 0:
        return
    xs = tuple(x.strides) if x is not None else (0,) * len(out.shape)
    kshape, (obs, xbs) = collapse(bshape, [tuple(out.strides[:-2]), xs[:-2]])
    if not kshape:
        kshape, obs, xbs = (1,), (0,), (0,)
    pad = (0,) * (MAX_RANK - len(kshape))
    sizes = tuple(kshape[1:]) + (1,) * (MAX_RANK - len(kshape))
    block_r, block_c = 32, 64
    xdt = x.dtype if x is not None else out.dtype
    key = (mode, xdt, out.dtype, len(kshape))
    fn = _TRI.cache.get(key)
    if fn is None:
        types = {
            "x": ptr_type(xdt),
            "out": ptr_type(out.dtype),
            "R": "i64",
            "C": "i64",
            "diagonal": "i64",
            **{f"S{d}": "i64" for d in range(1, MAX_RANK)},
            **{f"x{d}": "i64" for d in range(MAX_RANK)},
            **{f"o{d}": "i64" for d in range(MAX_RANK)},
            "xr": "i64",
            "xc": "i64",
            "orr": "i64",
            "oc": "i64",
        }
        consts = dict(MODE=mode, RANK=len(kshape), BLOCK_R=block_r, BLOCK_C=block_c)
        fn = _TRI.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    fn(
        (cdiv(R, block_r), cdiv(C, block_c), B),
        stream,
        (
            x.ptr if x is not None else out.ptr,
            out.ptr,
            R,
            C,
            int(diagonal),
            *sizes,
            *xbs,
            *pad,
            *obs,
            *pad,
            xs[-2],
            xs[-1],
            out.strides[-2],
            out.strides[-1],
            *fn._consts,  # type: ignore[attr-defined]
        ),
    )


def eye(out: BufferLike, *, stream: int = 0) -> None:
    """``out[i, j] = (i == j)`` for a 2-d ``out`` of any shape and strides."""
    if len(out.shape) != 2:
        raise ValueError("eye writes a 2-d buffer")
    _tri("eye", None, out, 0, stream)


def triu(x: BufferLike, out: BufferLike, diagonal: int = 0, *, stream: int = 0) -> None:
    """``out = x`` on and above the ``diagonal``-th diagonal of the last two dims, 0 below (``out`` may be x)."""
    _tri("triu", x, out, diagonal, stream)


def tril(x: BufferLike, out: BufferLike, diagonal: int = 0, *, stream: int = 0) -> None:
    """``out = x`` on and below the ``diagonal``-th diagonal of the last two dims, 0 above (``out`` may be x)."""
    _tri("tril", x, out, diagonal, stream)
