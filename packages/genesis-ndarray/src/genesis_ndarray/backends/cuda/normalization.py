"""LayerNorm / RMSNorm over the last dim and their fused backward on CUDA: one kernel each way.

The kernels read rows through one row stride; a contiguous input (the common case) is passed
as it is, and only leading dims that do not collapse to one stride are copied first.
"""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, dtype_of, reg, stream_of
from .memory import clone


def _acc(v: View) -> str:
    return "float64" if v.dtype == "float64" else "float32"


def _rows(v: View) -> View:
    """``v`` itself when its leading dims collapse to one row stride, else a contiguous copy."""
    stride = None
    for size, st in zip(reversed(v.shape[:-1]), reversed(v.strides[:-1])):
        if size == 1:
            continue
        if stride is not None and st != stride:
            return clone(v)
        stride = st * size
    return v


def _vec(v: View | None) -> View | None:
    """A weight / bias the kernels can read with stride 1 (a copy of N elements when strided)."""
    return v if v is None or v.shape[0] <= 1 or v.strides[0] == 1 else clone(v)


def _check_float(input: View, what: str) -> None:
    if not dtype_of(input).is_floating_point:
        raise NotImplementedError(f"\"{what}_cuda\" not implemented for '{input.dtype}'")


def _forward(input: View, weight: View | None, bias: View | None, eps: float, rms: bool):
    _check_float(input, "rms_norm" if rms else "layer_norm")
    x = _rows(input)
    out = gs.empty(x.shape, x.dtype, x.device)
    mean = None if rms else gs.empty(x.shape[:-1], _acc(x), x.device)
    rstd = gs.empty(x.shape[:-1], _acc(x), x.device)
    gk.norm_forward(x, _vec(weight), _vec(bias), out, mean, rstd, eps=float(eps), rms=rms, stream=stream_of(x))
    return out, mean, rstd


def _backward(grad_output, input, weight, mean, rstd, dw_dtype: str | None, db_dtype: str | None, rms: bool):
    x, dy = _rows(input), _rows(grad_output)
    dx = gs.empty(x.shape, x.dtype, x.device)
    n = x.shape[-1]
    dw = gs.empty((n,), dw_dtype, x.device) if dw_dtype is not None else None
    db = gs.empty((n,), db_dtype, x.device) if db_dtype is not None else None
    gk.norm_backward(x, dy, _vec(weight), mean, rstd, dx, dw, db, rms=rms, stream=stream_of(x))
    return dx, dw, db


@reg("layer_norm")
def layer_norm(input: View, weight: View | None, bias: View | None, eps: float) -> tuple[View, View, View]:
    """(out, mean, rstd) of LayerNorm over the last dim; mean / rstd per row in float32 (float64)."""
    out, mean, rstd = _forward(input, weight, bias, eps, rms=False)
    assert mean is not None
    return out, mean, rstd


@reg("rms_norm")
def rms_norm(input: View, weight: View | None, eps: float) -> tuple[View, View]:
    """(out, rstd) of RMSNorm over the last dim."""
    out, _, rstd = _forward(input, weight, None, eps, rms=True)
    return out, rstd


@reg("layer_norm_backward")
def layer_norm_backward(
    grad_output: View,
    input: View,
    weight: View | None,
    bias: View | None,
    mean: View,
    rstd: View,
    grad_weight: bool,
    grad_bias: bool,
) -> tuple[View, View | None, View | None]:
    """(dx, dweight or None, dbias or None), each in its input's dtype."""
    dw_dtype = weight.dtype if grad_weight and weight is not None else None
    db_dtype = bias.dtype if grad_bias and bias is not None else None
    return _backward(grad_output, input, weight, mean, rstd, dw_dtype, db_dtype, rms=False)


@reg("rms_norm_backward")
def rms_norm_backward(
    grad_output: View, input: View, weight: View | None, rstd: View, grad_weight: bool
) -> tuple[View, View | None]:
    """(dx, dweight or None)."""
    dw_dtype = weight.dtype if grad_weight and weight is not None else None
    dx, dw, _ = _backward(grad_output, input, weight, None, rstd, dw_dtype, None, rms=True)
    return dx, dw
