"""layer_norm and rms_norm over trailing dims: fused forward, fused backward.

The ``normalized_shape`` trailing dims flatten to one row of N elements (a view for a contiguous
input). Forward keeps the per-row mean / rstd (float32; float64 for float64 inputs), not the
output; the plain backward is one NDArray op that yields dx, dweight and dbias. A backward that is
itself recorded (create_graph=True, or a gradient that requires grad) is written with Tensor ops
instead, recomputing the statistics from the saved input so that second derivatives flow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from genesis_ndarray import bfloat16, float16, float32

from ._util import Primitive, backward_recorded, wrap

if TYPE_CHECKING:
    from ..tensor import Tensor

# torch.finfo(dtype).eps: rms_norm's default eps.
_EPS = {
    "float64": 2.220446049250313e-16,
    "float32": 1.1920928955078125e-07,
    "float16": 0.0009765625,
    "bfloat16": 0.0078125,
}


def _rows(x, n: int):
    """x's NDArray as (..., N): the normalised dims flattened (a view when x is contiguous there)."""
    if n == 1:  # the usual case: already in that shape (no reshape on the per-call path)
        return x.data
    return x.data.reshape(tuple(x.shape[: x.ndim - n]) + (math.prod(x.shape[x.ndim - n :]),))


def _flat(p):
    if p is None:
        return None
    return p.data if p.ndim == 1 else p.data.reshape((p.numel(),))


def _unrows(a, like, n: int):
    """An (..., N) result back in the shape of ``like`` (the input, or a parameter)."""
    return a if n == 1 or like.ndim == 1 else a.reshape(tuple(like.shape))


def _composed_grads(ctx, g, x, w, b, rms: bool):
    """dx, dweight, dbias with Tensor ops (differentiable again), from the saved input."""
    dims = tuple(range(x.ndim - ctx.n, x.ndim))
    lead = tuple(range(x.ndim - ctx.n))
    if rms:
        rstd = ((x * x).mean(dims, keepdim=True) + ctx.eps).rsqrt()
        xhat = x * rstd
    else:
        centered = x - x.mean(dims, keepdim=True)
        rstd = ((centered * centered).mean(dims, keepdim=True) + ctx.eps).rsqrt()
        xhat = centered * rstd
    wg = g * w if w is not None else g
    dx = wg - xhat * (xhat * wg).mean(dims, keepdim=True)
    if not rms:
        dx = dx - wg.mean(dims, keepdim=True)
    dx = (dx * rstd).to(x.dtype) if ctx.needs_input_grad[0] else None
    dw = db = None
    if w is not None and ctx.needs_input_grad[1]:
        dw = ((g * xhat).sum(lead) if lead else g * xhat).to(w.dtype)
    if b is not None and ctx.needs_input_grad[2]:
        db = (g.sum(lead) if lead else g).to(b.dtype)
    return dx, dw, db


class LayerNorm(Primitive):
    autocast_policy = "float32"  # torch's autocast runs layer_norm in float32

    @staticmethod
    def forward(ctx, x, weight, bias, n, eps):
        out, mean, rstd = _rows(x, n).layer_norm(_flat(weight), _flat(bias), eps)
        ctx.save_for_backward(x, weight, bias)
        ctx.n, ctx.eps, ctx.stats = n, eps, (mean, rstd)
        return _unrows(out, x, n)

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        if backward_recorded(g):
            dx, dw, db = _composed_grads(ctx, g, x, w, b, rms=False)
            return dx, dw, db, None, None
        mean, rstd = ctx.stats
        need = ctx.needs_input_grad
        dx, dw, db = _rows(x, ctx.n).layer_norm_backward(
            _rows(g, ctx.n), _flat(w), _flat(b), mean, rstd, need[1], need[2]
        )
        return (
            wrap(g, _unrows(dx, x, ctx.n)) if need[0] else None,
            None if dw is None else wrap(g, _unrows(dw, w, ctx.n)),
            None if db is None else wrap(g, _unrows(db, b, ctx.n)),
            None,
            None,
        )


class RMSNorm(Primitive):
    autocast_policy = "float32"

    @staticmethod
    def forward(ctx, x, weight, n, eps):
        if eps is None:  # the dtype it runs in, after any autocast cast
            eps = _EPS.get(x.dtype.name, _EPS["float32"])
        out, rstd = _rows(x, n).rms_norm(_flat(weight), eps)
        ctx.save_for_backward(x, weight)
        ctx.n, ctx.eps, ctx.rstd = n, eps, rstd
        return _unrows(out, x, n)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        if backward_recorded(g):
            dx, dw, _ = _composed_grads(ctx, g, x, w, None, rms=True)
            return dx, dw, None, None
        need = ctx.needs_input_grad
        dx, dw = _rows(x, ctx.n).rms_norm_backward(_rows(g, ctx.n), _flat(w), ctx.rstd, need[1])
        return (
            wrap(g, _unrows(dx, x, ctx.n)) if need[0] else None,
            None if dw is None else wrap(g, _unrows(dw, w, ctx.n)),
            None,
            None,
        )


# The checks below read the NDArray's plain shape tuple, not Tensor.shape (a Size made per read):
# they run on every call of the op.


def _normalized_ndim(input: Tensor, normalized_shape: Sequence[int] | int) -> int:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    dims = input.data.shape
    if n == 0 or len(dims) < n or dims[len(dims) - n :] != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}"
        )
    return n


def _check_param(input: Tensor, p: Tensor | None, name: str, n: int) -> None:
    if p is None:
        return
    dims = input.data.shape
    shape = dims[len(dims) - n :]
    if p.data.shape != shape:
        raise RuntimeError(
            f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
            f"{list(p.shape)} and normalized_shape = {list(shape)}"
        )
    # torch's rule: parameters in the input's dtype, or float32 beside a 16-bit float input.
    if p.dtype != input.dtype and not (p.dtype == float32 and input.dtype in (bfloat16, float16)):
        raise RuntimeError(
            f"expected {name} to have the input's dtype {input.dtype.name} (or float32 for a 16-bit float "
            f"input), but got {p.dtype.name}"
        )
    if p.device is not input.device and p.device != input.device:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{input.device} and {p.device}!"
        )


def _check_input(input: Tensor, op: str) -> None:
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype.name}'")


def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing ``normalized_shape`` dims (biased
    variance), fused; the output has the input's dtype (a float32 weight / bias may go with a 16-bit input)."""
    n = _normalized_ndim(input, normalized_shape)
    _check_input(input, "layer_norm")
    _check_param(input, weight, "weight", n)
    _check_param(input, bias, "bias", n)
    return LayerNorm.apply(input, weight, bias, n, float(eps))


def rms_norm(
    input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims, fused; eps defaults to the input
    dtype's machine epsilon (torch.finfo(dtype).eps)."""
    n = _normalized_ndim(input, normalized_shape)
    _check_input(input, "rms_norm")
    _check_param(input, weight, "weight", n)
    return RMSNorm.apply(input, weight, n, None if eps is None else float(eps))
