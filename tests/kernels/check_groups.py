"""Drivers for compile_check.py: one function per kernel family, calling the public API."""

from __future__ import annotations

import genesis_kernels as gk


def elementwise(b) -> None:  # type: ignore[no-untyped-def]
    n = 4096
    for dt in ("float32", "bfloat16", "float16", "float64"):
        for op in ("exp", "gelu", "sigmoid", "round", "isnan", "tanh"):
            gk.unary(op, b((n,), dt), b((n,), dt if op != "isnan" else "bool"))
    gk.unary("neg", b((64, 64), "float32", (1, 64)), b((64, 64)))
    for op in ("add", "mul", "div", "floordiv", "remainder", "pow", "maximum", "atan2", "lt"):
        for dt in ("float32", "bfloat16", "int32", "int64"):
            odt = "bool" if op == "lt" else dt
            cdt = "float32" if dt == "bfloat16" else dt
            gk.binary(op, b((n,), dt), b((n,), dt), b((n,), odt), compute_dtype=cdt)
    gk.binary("add", b((n,)), 2.0, b((n,)), compute_dtype="float32")
    gk.binary("add", b((64, 64), "float32", (1, 64)), b((64, 64)), b((64, 64)), compute_dtype="float32")
    gk.binary("bitwise_and", b((n,), "bool"), b((n,), "bool"), b((n,), "bool"), compute_dtype="bool")
    gk.where(b((n,), "bool"), b((n,)), 0.0, b((n,)))
    gk.clamp(b((n,)), -1.0, 1.0, b((n,)))
    gk.lerp(b((n,), "bfloat16"), b((n,), "bfloat16"), 0.3, b((n,), "bfloat16"))
    gk.addcdiv(b((n,)), b((n,)), b((n,)), b((n,)), value=0.5)
    dts = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
    for s in dts:
        for d in dts:
            gk.copy(b((n,), s), b((n,), d))
    gk.fill(b((n,), "bfloat16"), 1.5)
    gk.fill(b((n,), "bool"), 1)
