"""Residual add + normalisation in one op: add_rms_norm, add_layer_norm (Genesis extensions: torch has no
``F.add_rms_norm``; there it is ``s = residual + input`` followed by ``F.rms_norm(s, ...)``)."""

from __future__ import annotations

from collections.abc import Sequence

import genesis_autograd as _ag
from genesis_autograd import Tensor

__all__ = ["add_layer_norm", "add_rms_norm"]


def add_rms_norm(
    input: Tensor,
    residual: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> tuple[Tensor, Tensor]:
    """``s = residual + input`` and ``rms_norm(s)``, fused: returns ``(normed, s)``. A Genesis extension.

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
    return _ag.add_rms_norm(input, residual, normalized_shape, weight, eps)


def add_layer_norm(
    input: Tensor,
    residual: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> tuple[Tensor, Tensor]:
    """``s = residual + input`` and ``layer_norm(s)``, fused: returns ``(normed, s)``. A Genesis extension.

    As :func:`add_rms_norm`, with LayerNorm's mean subtraction and ``bias``: the same values and
    gradients as ``s = residual + input; (F.layer_norm(s, normalized_shape, weight, bias, eps), s)``.
    """
    return _ag.add_layer_norm(input, residual, normalized_shape, weight, bias, eps)
