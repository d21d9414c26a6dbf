"""Creation kernels: arange and linspace over a 1-D output of any stride.

``out[i] = start + i * step`` computed in float32 for float32/half outputs (as torch's
CUDA arange), float64 for float64, int64 for integers; linspace fills the two halves
from both ends (``start + i*step`` and ``end - (n-1-i)*step``) exactly as torch does,
so the last element is ``end``.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .buffer import BufferLike, dtype_info
from .elementwise import cast_to
from .runtime import Kernel, cdiv, ptr_type

_BLOCK = 1024


@triton.jit
def _range_kernel(out, start, step, end, n, stride, CDT: tl.constexpr, LINSPACE: tl.constexpr,
                  BLOCK: tl.constexpr):
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
    info = dtype_info(out.dtype)
    cdt = "float64" if out.dtype == "float64" else ("float32" if info.is_float else "int64")
    scalar = "fp64" if dtype_info(cdt).is_float else "i64"
    key = (out.dtype, cdt, linspace)
    fn = _RANGE.cache.get(key)
    if fn is None:
        types = {"out": ptr_type(out.dtype), "start": scalar, "step": scalar, "end": scalar, "n": "i64",
                 "stride": "i64"}
        consts = dict(CDT=dtype_info(cdt).tl, LINSPACE=linspace, BLOCK=_BLOCK)
        fn = _RANGE.build(key, types, consts, (), num_warps=4)
        fn._consts = tuple(consts.values())  # type: ignore[attr-defined]
    conv = float if scalar == "fp64" else int
    fn((cdiv(n, _BLOCK), 1, 1), stream,
       (out.ptr, conv(start), conv(step), conv(end), n, out.strides[0], *fn._consts))  # type: ignore[attr-defined]


def arange(out: BufferLike, start: float, step: float, *, stream: int = 0) -> None:
    """``out[i] = start + i * step`` for ``i < len(out)``."""
    _launch(out, start, step, 0, False, stream)


def linspace(out: BufferLike, start: float, end: float, *, stream: int = 0) -> None:
    """``len(out)`` evenly spaced values from ``start`` to ``end`` inclusive."""
    n = out.shape[0] if len(out.shape) == 1 else 0
    step = (end - start) / (n - 1) if n > 1 else 0.0
    _launch(out, start, step, end if n > 1 else start, True, stream)
