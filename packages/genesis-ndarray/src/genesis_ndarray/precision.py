"""float32 matmul precision: torch.set_float32_matmul_precision's switch, read by every backend's matmul.

"highest" (the default, as in torch) computes float32 products in IEEE float32. "high" lets
them use tf32 tensor cores (10-bit mantissa inputs, float32 accumulation: about 1e-3 relative
error, several times the speed). "medium" is accepted as in torch and means tf32 here too
(torch may go down to bfloat16 there; we never round further than tf32).
"""

from __future__ import annotations

from . import registry

_PRECISIONS = ("highest", "high", "medium")
_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Set how float32 matrix products are computed: "highest", "high" or "medium"."""
    global _precision
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid precision: {precision!r}; expected one of {', '.join(_PRECISIONS)}")
    if precision != _precision:
        _precision = precision
        registry.invalidate()  # matmul plans chose their kernel (tf32 or IEEE) under the old setting


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision ("highest" unless set)."""
    return _precision


def allow_tf32() -> bool:
    """Whether float32 matrix products may run on tf32 tensor cores now."""
    return _precision != "highest"
