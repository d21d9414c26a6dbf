"""CPU residual add + LayerNorm / RMSNorm over the last dim: torch's add, then this backend's norms.

The same contract as the cuda ops: ``s = residual + input`` with torch's promotion, ``y = norm(s)`` in
``out_dtype`` (else ``s``'s dtype), statistics in float32 (float64 for float64); the backward returns
the gradient of ``s``, the norm's part plus ``grad_s``.
"""

from __future__ import annotations

import torch

from ...dtypes import DType
from .common import reg
from .normalization import _acc, layer_norm, layer_norm_backward, rms_norm, rms_norm_backward


@reg("add_norm")
def add_norm(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
    rms: bool,
    out_dtype: DType | None,
    keep_stats: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """(y, s, mean or None, rstd); mean and rstd None without ``keep_stats``. The norm runs on ``s`` as it is
    (widened first where ``out_dtype`` is wider, as the cuda kernel reads it) and ``y`` is rounded once to
    ``out_dtype``: a narrower ``out_dtype`` (autocast's bfloat16 for a Linear that reads ``y``) does not round
    ``s`` before the norm."""
    s = residual + input
    x = s if out_dtype is None or out_dtype.itemsize <= s.element_size() else s.to(out_dtype.torch)
    if rms:
        y, rstd = rms_norm(x, weight, eps)
        mean = None
    else:
        y, mean, rstd = layer_norm(x, weight, bias, eps)
    if out_dtype is not None and y.dtype != out_dtype.torch:
        y = y.to(out_dtype.torch)
    return (y, s, mean, rstd) if keep_stats else (y, s, None, None)


@reg("add_norm_backward")
def add_norm_backward(
    grad_y: torch.Tensor,
    grad_s: torch.Tensor | None,
    s: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    mean: torch.Tensor | None,
    rstd: torch.Tensor,
    rms: bool,
    grad_weight: bool,
    grad_bias: bool,
    low_dtype=None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """(gradient of s in s's dtype, dweight or None, dbias or None, the same in ``low_dtype`` or None)."""
    # The norm's part in float32 (float64 for float64), added to grad_s there, and rounded once to s's dtype, as
    # the cuda kernel does: a 16-bit norm gradient rounded first, then the sum rounded again, can be off by more
    # than the result's ulp where the two parts cancel.
    acc = _acc(s)
    x, g = s.to(acc), grad_y.to(acc)
    w = None if weight is None else weight.to(acc)
    db = None
    if rms:
        dx, dw = rms_norm_backward(g, x, w, rstd, grad_weight)
    else:
        assert mean is not None
        b = None if bias is None else bias.to(acc)
        dx, dw, db = layer_norm_backward(g, x, w, b, mean, rstd, grad_weight, grad_bias)
    if grad_s is not None:
        dx = dx + grad_s.to(acc)
    dw = dw.to(weight.dtype) if dw is not None and weight is not None else None
    db = db.to(bias.dtype) if db is not None and bias is not None else None
    low = None if low_dtype is None else dx.to(low_dtype.torch)  # rounded once from the sum, as on cuda
    return dx.to(s.dtype), dw, db, low
