"""searchsorted: for each value, its insertion index in a sorted row, by binary search.

``seq`` is ``R`` sorted rows of ``N`` (any strides), ``values`` ``R`` rows of ``M`` (any strides), ``out`` the
contiguous ``R x M`` indices (int64 or int32). A program takes ``BLOCK`` values of one row and halves each
value's [lo, hi) interval ceil(log2(N + 1)) times. Values compare in the wider of the two dtypes (float64,
float32 for the other floats, int64 for integers), with torch's exact tests (NaN sorts last).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info
from .elementwise import cast_to
from .runtime import Kernel, cdiv, ptr_type


@triton.jit
def _searchsorted_kernel(
    seq,
    vals,
    out,
    N,
    M,
    s_row,
    s_col,
    v_row,
    v_col,
    STEPS,
    COL_BLOCKS,
    RIGHT: tl.constexpr,
    CDT: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)  # one flat grid: rows past 65,535 need no second axis
    row = pid // COL_BLOCKS
    cols = (pid % COL_BLOCKS) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < M
    x = cast_to(tl.load(vals + row * v_row + cols * v_col, mask=mask, other=0), CDT)
    lo = tl.zeros([BLOCK], tl.int64)
    hi = tl.zeros([BLOCK], tl.int64) + N
    for _ in range(STEPS):
        active = lo < hi
        mid = (lo + hi) // 2
        v = cast_to(tl.load(seq + row * s_row + mid * s_col, mask=mask & active, other=0), CDT)
        # torch's comparisons exactly: any comparison with NaN is false, so NaN values and NaN elements
        # both behave as larger than every number
        if RIGHT:
            go = ~(v > x)
        else:
            go = ~(v >= x)
        lo = tl.where(active & go, mid + 1, lo)
        hi = tl.where(active & ~go, mid, hi)
    tl.store(out + row * M + cols, lo.to(out.dtype.element_ty), mask=mask)


_SEARCH = Kernel(_searchsorted_kernel)
_BLOCK = 256


def _compare_dtype(a: str, b: str) -> str:
    fa, fb = dtype_info(a).is_float, dtype_info(b).is_float
    if "float64" in (a, b):
        return "float64"
    if fa or fb:
        return "float32"
    return "int64"


def searchsorted(seq: BufferLike, values: BufferLike, out: BufferLike, *, right: bool = False, stream: int = 0) -> None:
    """``out[r, j]`` = the number of elements of the sorted row ``seq[r]`` below ``values[r, j]`` (at most
    ``values[r, j]`` with ``right``): 2-D operands with the same number of rows."""
    if len(seq.shape) != 2 or len(values.shape) != 2 or tuple(out.shape) != tuple(values.shape):
        raise ValueError(f"searchsorted takes 2-D seq and values, got {seq.shape} and {values.shape} -> {out.shape}")
    rows, n = seq.shape
    if values.shape[0] != rows:
        raise ValueError(f"searchsorted: {rows} rows of boundaries but {values.shape[0]} rows of values")
    m = values.shape[1]
    if rows == 0 or m == 0:
        return
    cdt = _compare_dtype(seq.dtype, values.dtype)
    key = (seq.dtype, values.dtype, out.dtype, cdt, bool(right))
    launch = _SEARCH.cache.get(key)
    if launch is None:
        types = {
            "seq": ptr_type(seq.dtype),
            "vals": ptr_type(values.dtype),
            "out": ptr_type(out.dtype),
            **{name: "i64" for name in ("N", "M", "s_row", "s_col", "v_row", "v_col")},
            "STEPS": "i32",
            "COL_BLOCKS": "i64",
        }
        consts = dict(RIGHT=bool(right), CDT=dtype_info(cdt).tl, BLOCK=_BLOCK)
        launch = _SEARCH.build(key, types, consts, (), num_warps=4)
        launch._consts = tuple(consts.values())  # type: ignore[attr-defined]
    steps = max(n, 1).bit_length()  # ceil(log2(n + 1)) halvings empty any [lo, hi) of n + 1 places
    blocks = cdiv(m, _BLOCK)
    args = (seq.ptr, values.ptr, out.ptr, n, m, *seq.strides, *values.strides, steps, blocks, *launch._consts)  # type: ignore[attr-defined]
    launch((rows * blocks, 1, 1), stream, args)


__all__ = ["searchsorted"]
