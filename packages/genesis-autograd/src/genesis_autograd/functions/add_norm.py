"""add_rms_norm / add_layer_norm: a residual add and the norm that follows it, one op each way.

A pre-norm transformer block does ``s = residual + h; y = norm(s)``, and ``s`` goes on to the next
residual add. Here forward is one NDArray op that writes ``s`` and ``y`` (the add's promotion for ``s``;
``y`` in ``s``'s dtype, float32 under autocast as genesis's norms), and backward one op that writes the
gradient of ``s`` (the norm's part from ``y``'s gradient plus the gradient ``s`` received from its other
uses), which is also the gradient of ``h`` and of ``residual``. Either output may go unused: its gradient
comes as None (no zero-filled buffer).

Inputs the fused op does not cover (shapes that only broadcast, non-float or mixed float16 / bfloat16
inputs, different devices) take the composition ``residual + input`` then the norm, which gives torch's
results and errors. A backward that is itself recorded (create_graph=True) is refused: the fused op keeps
``s`` but not the inputs it came from, so second derivatives cannot flow through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from genesis_ndarray import float32, float64, promote_types

from .. import function as _function
from ..autocast import _state as _autocast_state
from ..autocast import cast_inputs
from ..grad_mode import _state as _grad_state
from ._util import Primitive, backward_recorded, check_output_version, wrap
from .normalization import _EPS, _check_param, _flat, _normalized_ndim, _rows, _unrows, layer_norm, rms_norm

if TYPE_CHECKING:
    from ..tensor import Tensor


class AddNorm(Primitive):
    """Outputs (s, y): ``s`` first, so that the engine's in-place check covers the saved ``s``."""

    autocast_policy = None  # the add keeps its dtypes; the norm's float32 is decided by the caller (out_dtype)

    @staticmethod
    def forward(ctx, x, residual, weight, bias, n, eps, rms, out_dtype):
        y, s, mean, rstd = _rows(x, n).add_norm(
            _rows(residual, n), _flat(weight), _flat(bias), eps, rms, out_dtype, ctx.records
        )  # statistics only where a backward will read them
        if ctx.records:
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(weight, bias)
            ctx.out, ctx.stats = s, (mean, rstd)
            ctx.n, ctx.rms, ctx.dtypes = n, rms, (x.dtype, residual.dtype)
        return _unrows(s, x, n), _unrows(y, x, n)

    @staticmethod
    def backward(ctx, gs, gy):
        w, b = ctx.saved_tensors
        if backward_recorded(gs, gy):
            raise RuntimeError(
                "add_rms_norm / add_layer_norm: the backward is not differentiable (create_graph=True); use "
                "residual + input and F.rms_norm / F.layer_norm for higher-order gradients"
            )
        check_output_version(ctx)
        need = ctx.needs_input_grad
        like = gy if gy is not None else gs
        if like is None:
            return None, None, None, None, None, None, None, None
        dw = db = low = None
        n = ctx.n
        x_dtype, r_dtype = ctx.dtypes
        if gy is None:  # y unused: s's gradient passes to both inputs (as an add's)
            total = gs.data
        else:
            mean, rstd = ctx.stats
            grad_s = None if gs is None else _rows(gs, n)
            s = ctx.out
            # An addend narrower than s (a 16-bit block output on a float32 residual stream; s's promotion
            # leaves at most one): its gradient is written by the same pass, not cast from the sum afterwards.
            narrow = None
            for needed, dtype in ((need[0], x_dtype), (need[1], r_dtype)):
                if needed and dtype.itemsize < s.dtype.itemsize:
                    narrow = dtype
            total, dw, db, low = s.add_norm_backward(
                _rows(gy, n), grad_s, _flat(w), _flat(b), mean, rstd, ctx.rms, need[2], need[3], narrow
            )
            total = _unrows(total, gy, n)
            low = None if low is None else _unrows(low, gy, n)
        gx = _grad_in(like, total, low, x_dtype) if need[0] else None
        gr = (gx if r_dtype is x_dtype and gx is not None else _grad_in(like, total, low, r_dtype)) if need[1] else None
        return (
            gx,
            gr,
            None if dw is None else wrap(like, _unrows(dw, w, n)),
            None if db is None else wrap(like, _unrows(db, b, n)),
            None,
            None,
            None,
            None,
        )


def _grad_in(like, total, low, dtype):
    """An addend's gradient in its ``dtype``: ``low`` where the backward wrote it in that dtype, else the sum cast."""
    return wrap(like, low if low is not None and low.dtype is dtype else total.astype(dtype))


def _composed(input, residual, normalized_shape, weight, bias, eps, rms: bool):
    """(y, s) as ``s = residual + input`` then the norm: torch's semantics and errors for any inputs."""
    s = residual + input
    y = rms_norm(s, normalized_shape, weight, eps) if rms else layer_norm(s, normalized_shape, weight, bias, eps)
    return y, s


def _add_norm(input, residual, normalized_shape, weight, bias, eps, rms: bool, lowered: bool = False):
    """(y, s) by the fused op where it covers the inputs, else by the composition. ``lowered``: under autocast,
    ``y`` comes in autocast's dtype instead of float32 (still computed in float32, rounded once): what
    genesis.compile asks for where every reader of ``y`` is a Linear, which would cast it to that dtype."""
    # Every pre-norm block calls this twice: the common case reads NDArray attributes (no Tensor
    # properties), checks with plain comparisons, and calls the helpers that raise only when one fails.
    x, r = input.data, residual.data
    dtype, shape = x.dtype, x.shape
    s_dtype = dtype if dtype is r.dtype else promote_types(dtype, r.dtype)
    if (
        shape != r.shape
        or not dtype.is_floating_point
        or not (s_dtype is dtype or s_dtype is r.dtype)  # (float16 + bfloat16 -> float32: neither)
        or (x.device is not r.device and x.device != r.device)
    ):
        return _composed(input, residual, normalized_shape, weight, bias, eps, rms)
    like = input if s_dtype is dtype else residual  # the shape, dtype and device of s
    out_dtype = None
    if _autocast_state.active and x.device.type in _autocast_state.dtypes:  # the norm runs in float32
        if s_dtype is float64:  # (genesis's norms cast a float64 input down too; leave that to them)
            return _composed(input, residual, normalized_shape, weight, bias, eps, rms)
        weight, bias = cast_inputs("float32", (weight, bias))
        out_dtype = _autocast_state.dtypes[x.device.type] if lowered else float32
    if shape and (normalized_shape == shape[-1:] or normalized_shape == shape[-1]):
        n = 1
    else:
        n = _normalized_ndim(like, normalized_shape)
    for p, name in ((weight, "weight"), (bias, "bias")):
        if p is not None:
            pd = p.data
            if (
                pd.shape != shape[len(shape) - n :]
                or pd.device is not x.device
                or not (pd.dtype is s_dtype or pd.dtype is float32)
            ):
                _check_param(like, p, name, n)  # raises torch's error, if there is one
    if eps is None:  # rms_norm's default: the epsilon of the dtype the norm runs in
        eps = _EPS[(float32 if out_dtype is not None else s_dtype).name]
    if _function._capture_hook is None and not (
        _grad_state.enabled
        and (
            input.requires_grad
            or residual.requires_grad
            or (weight is not None and weight.requires_grad)
            or (bias is not None and bias.requires_grad)
        )
    ):  # nothing to record: AddNorm.forward's work without apply's
        make = input._result_type
        w = None if weight is None else weight.data if n == 1 else _flat(weight)
        b = None if bias is None else bias.data if n == 1 else _flat(bias)
        if n == 1:  # (no statistics: nothing will run a backward)
            y, s, _, _ = x.add_norm(r, w, b, float(eps), rms, out_dtype, False)
            return make(y), make(s)
        y, s, _, _ = _rows(input, n).add_norm(_rows(residual, n), w, b, float(eps), rms, out_dtype, False)
        return make(_unrows(y, input, n)), make(_unrows(s, input, n))
    s, y = AddNorm.apply(input, residual, weight, bias, n, float(eps), rms, out_dtype)
    return y, s


def add_rms_norm(
    input: Tensor,
    residual: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> tuple[Tensor, Tensor]:
    """``s = residual + input`` and ``rms_norm(s)``, fused: returns ``(normed, s)``. A Genesis extension
    (``genesis.nn.functional.add_rms_norm``; torch has none: there it is ``s = residual + input`` followed by
    ``F.rms_norm(s, ...)``).

    The step of a pre-norm transformer block (``x = x + attn(norm1(x))``, then ``norm2(x)``): one kernel
    reads ``input`` and ``residual`` and writes the new residual stream ``s`` and the normed output, and
    one kernel each way computes the gradient of ``s`` (from both outputs) and of ``weight``.

    Args:
        input: the block's output (``h``), of ``residual``'s shape.
        residual: the residual stream; ``s`` has torch's promotion of the two dtypes (a float32 stream
            plus a bfloat16 ``input`` gives a float32 ``s``).
        normalized_shape: the trailing dims to normalise over, as for ``F.rms_norm``.
        weight: the scale, of shape ``normalized_shape``, or None.
        eps: added to the mean square; default: the machine epsilon of the dtype the norm runs in.

    Returns:
        ``(F.rms_norm(s, normalized_shape, weight, eps), s)``: the same values (and gradients) as that
        composition computed eagerly; the normed output is in ``s``'s dtype, float32 under autocast (as
        ``F.rms_norm``). Shapes that only broadcast, and other inputs the fused op does not take, run as
        that composition.
    """
    return _add_norm(input, residual, normalized_shape, weight, None, eps, rms=True)


def add_layer_norm(
    input: Tensor,
    residual: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> tuple[Tensor, Tensor]:
    """``s = residual + input`` and ``layer_norm(s)``, fused: returns ``(normed, s)``. A Genesis extension
    (``genesis.nn.functional.add_layer_norm``).

    As :func:`add_rms_norm`, with LayerNorm's mean subtraction and ``bias``: the same values and
    gradients as ``s = residual + input; (F.layer_norm(s, normalized_shape, weight, bias, eps), s)``.
    """
    return _add_norm(input, residual, normalized_shape, weight, bias, eps, rms=False)
