"""Residual add + LayerNorm / RMSNorm over the last dim on CUDA: one kernel each way (genesis_kernels.add_norm).

Forward writes ``s = residual + input`` (torch's promotion of the two dtypes) and ``y = norm(s)`` (in
``out_dtype``, float32 under autocast; else ``s``'s dtype); backward writes the gradient of ``s``, the
norm's part plus what ``s``'s other uses sent, once.
"""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType, promote_types
from .common import View, dtype_of, reg, stream_of
from .normalization import _check_float, _rows, _vec

_S_DTYPES: dict[tuple[str, str], str] = {}  # (input, residual) dtype names -> s's, for the pairs checked


def _s_dtype(input: View, residual: View, rms: bool) -> str:
    """s's dtype name (torch's promotion); raises torch's error for a non-float input."""
    found = _S_DTYPES.get((input.dtype, residual.dtype))
    if found is None:
        what = "rms_norm" if rms else "layer_norm"
        _check_float(input, what)
        _check_float(residual, what)
        found = _S_DTYPES[(input.dtype, residual.dtype)] = promote_types(dtype_of(input), dtype_of(residual)).name
    return found


@reg("add_norm")
def add_norm(
    input: View,
    residual: View,
    weight: View | None,
    bias: View | None,
    eps: float,
    rms: bool,
    out_dtype: DType | None,
    keep_stats: bool = True,
) -> tuple[View, View, View | None, View | None]:
    """(y, s, mean or None, rstd): s = residual + input, y = norm(s) * weight (+ bias) over the last dim;
    without ``keep_stats`` (no backward will read them) mean and rstd are None (the kernel's scratch)."""
    s_dtype = _s_dtype(input, residual, rms)
    x, r = _rows(input), _rows(residual)
    shape, device = x.shape, x.device
    s = gs.empty(shape, s_dtype, device)
    y = gs.empty(shape, s_dtype if out_dtype is None else out_dtype.name, device)
    acc = "float64" if s_dtype == "float64" else "float32"
    mean = None if rms or not keep_stats else gs.empty(shape[:-1], acc, device)
    rstd = gs.empty(shape[:-1], acc, device) if keep_stats else None
    w = weight if weight is None or weight.strides == (1,) else _vec(weight)
    b = bias if bias is None or bias.strides == (1,) else _vec(bias)
    gk.add_norm_forward(x, r, w, b, s, y, mean, rstd, eps=eps, rms=rms, stream=stream_of(x))
    return y, s, mean, rstd


@reg("add_norm_backward")
def add_norm_backward(
    grad_y: View,
    grad_s: View | None,
    s: View,
    weight: View | None,
    bias: View | None,
    mean: View | None,
    rstd: View,
    rms: bool,
    grad_weight: bool,
    grad_bias: bool,
    low_dtype: DType | None = None,
) -> tuple[View, View | None, View | None, View | None]:
    """(gradient of s in s's dtype: the norm's from ``grad_y`` plus ``grad_s``, dweight or None, dbias or None,
    the same gradient in ``low_dtype`` or None), one launch."""
    dy = _rows(grad_y)
    ds = None if grad_s is None else _rows(grad_s)
    ds_total = gs.empty(s.shape, s.dtype, s.device)
    n = s.shape[-1]
    dw = gs.empty((n,), weight.dtype, s.device) if grad_weight and weight is not None else None
    db = gs.empty((n,), bias.dtype, s.device) if grad_bias and bias is not None else None
    low = None if low_dtype is None else gs.empty(s.shape, low_dtype.name, s.device)
    gk.add_norm_backward(
        s, dy, ds, _vec(weight), mean, rstd, ds_total, dw, db, dx_low=low, rms=rms, stream=stream_of(s)
    )
    return ds_total, dw, db, low
