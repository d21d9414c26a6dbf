"""Device math functions: CUDA's libdevice on the GPU, numpy under the interpreter.

Triton's interpreter does not implement ``triton.language.extra.libdevice``, so
kernels call ``lib.<name>`` and this module picks the implementation at import.
libdevice is also the accurate choice on the GPU: ``tl.exp`` and ``tl.sqrt`` lower
to approximate instructions, while these are correctly rounded or within 1-2 ulp.
Only names present in both worlds are listed here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .runtime import INTERPRET

NAMES = (
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
    "rint",
    "trunc",
    "floor",
    "ceil",
    "atan2",
    "pow",
    "fmod",
    "hypot",
    "lgamma",
)

if INTERPRET:
    import math

    from triton import language as tl
    from triton.runtime.interpreter import TensorHandle

    _erf = np.vectorize(math.erf, otypes=[np.float64])
    _erfc = np.vectorize(math.erfc, otypes=[np.float64])
    _lgamma = np.vectorize(
        lambda v: math.lgamma(v) if np.isfinite(v) and not (v <= 0 and v == int(v)) else float("inf"),
        otypes=[np.float64],
    )

    _NUMPY = {
        "exp": np.exp,
        "exp2": np.exp2,
        "expm1": np.expm1,
        "log": np.log,
        "log2": np.log2,
        "log10": np.log10,
        "log1p": np.log1p,
        "sqrt": np.sqrt,
        "rsqrt": lambda v: 1 / np.sqrt(v),
        "sin": np.sin,
        "cos": np.cos,
        "tan": np.tan,
        "tanh": np.tanh,
        "asin": np.arcsin,
        "acos": np.arccos,
        "atan": np.arctan,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "asinh": np.arcsinh,
        "acosh": np.arccosh,
        "atanh": np.arctanh,
        "erf": _erf,
        "erfc": _erfc,
        "rint": np.rint,
        "trunc": np.trunc,
        "floor": np.floor,
        "ceil": np.ceil,
        "atan2": np.arctan2,
        "pow": np.power,
        "fmod": np.fmod,
        "hypot": np.hypot,
        "lgamma": _lgamma,
    }

    def _numpy_elementwise(f: Any) -> Any:
        def call(*args: Any) -> Any:
            tensors = [a for a in args if isinstance(a, tl.core.tensor)]
            ref = max(tensors, key=lambda t: t.handle.data.ndim)
            dtype = ref.handle.data.dtype
            data = [a.handle.data if isinstance(a, tl.core.tensor) else a for a in args]
            with np.errstate(all="ignore"):
                res = np.asarray(f(*data)).astype(dtype)
            return tl.core.tensor(TensorHandle(res, ref.handle.dtype.scalar), ref.type)

        return call

    class _NumpyLib:
        pass

    lib: Any = _NumpyLib()
    for _name in NAMES:
        setattr(lib, _name, _numpy_elementwise(_NUMPY[_name]))
else:
    from triton.language.extra import libdevice

    lib = libdevice  # typed Any above, as the interpreter's stand-in is
