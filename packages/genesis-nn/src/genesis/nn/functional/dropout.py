"""The dropout family: zero (or, for alpha dropout, saturate) elements or whole channels with
probability p while training, rescaled so the statistics are kept; the identity otherwise.

``dropout`` masks single elements; the feature forms (dropout1d / 2d / 3d, feature_alpha_dropout) draw
one mask value per (sample, channel) and broadcast it over the spatial dims. Alpha dropout keeps a
SELU network's zero mean and unit variance: dropped elements take SELU's negative saturation value and
an affine map a * x + b restores the moments.
"""

from __future__ import annotations

import math
import warnings

from genesis_autograd import Tensor, empty, is_grad_enabled

__all__ = ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]

# -scale * alpha of SELU: the value SELU approaches for large negative inputs, negated.
_SELU_SATURATION = 1.7580993408473766


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _write(input: Tensor, inplace: bool, compute) -> Tensor:
    """compute(source), written into ``input`` for inplace. The recorded ops read a clone when the write
    is recorded: they save their operand, which the write would otherwise change under them."""
    source = input.clone() if inplace and input.requires_grad and is_grad_enabled() else input
    out = compute(source)
    return input.copy_(out) if inplace else out


def _feature_mask_shape(shape: tuple[int, ...], batched: bool) -> list[int]:
    """One mask value per channel (and per sample when batched), 1 along the spatial dims."""
    kept = 2 if batched else 1  # an unbatched input is torch's unsqueezed one: its dim 0 is the channel
    if len(shape) < kept:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return list(shape[:kept]) + [1] * (len(shape) - kept)


def _masked(input: Tensor, p: float, training: bool, inplace: bool, mask_shape, alpha: bool) -> Tensor:
    """The shared body: a Bernoulli(1 - p) keep-mask of ``mask_shape()`` (a callable, so the shape is
    checked only when dropout is active), broadcast over ``input``."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = mask_shape()
    if p == 1.0:
        return _write(input, inplace, lambda t: t * 0.0)
    keep = empty(*shape, dtype=input.dtype, device=input.device).bernoulli_(1.0 - p)
    if not alpha:
        scale = keep.mul_(1.0 / (1.0 - p))  # one scaled mask, so the graph holds a single product
        return _write(input, inplace, lambda t: t * scale)
    a = 1.0 / math.sqrt((_SELU_SATURATION**2 * p + 1) * (1 - p))
    # kept: a * x + a * alpha * p; dropped: a * (-alpha) + a * alpha * p (x's value is lost).
    shift = (keep - 1.0) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    scale = keep * a
    return _write(input, inplace, lambda t: t * scale + shift)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """While ``training``, zero each element with probability ``p`` and scale the others by
    1 / (1 - p); otherwise return ``input`` unchanged.

    Args:
        input: any shape.
        p: the probability of zeroing an element.
        training: apply dropout (False: the identity).
        inplace: write the result into ``input``.
    """
    _check_p(p)
    return _masked(input, p, training, inplace, lambda: list(input.shape), alpha=False)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    return _masked(input, p, training, inplace, lambda: _feature_mask_shape(tuple(input.shape), batched), False)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (1-D feature maps) with probability ``p`` while training, scaling the others
    by 1 / (1 - p).

    Args:
        input: (N, C, L) or unbatched (C, L).
        p: the probability of zeroing a channel.
        training: apply dropout (False: the identity).
        inplace: write the result into ``input``.
    """
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def _warn_rank(name: str, ndim: int, spatial: int) -> None:
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error in a future "
        f"release. To retain the behavior and silence this warning, please use dropout instead. Note that {name} "
        f"exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a channel dimension, "
        f"and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
        stacklevel=3,
    )


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (2-D feature maps) with probability ``p`` while training, scaling the others
    by 1 / (1 - p). As torch, a 3-D input is read as (N, C, L) (with a warning), not as unbatched.

    Args:
        input: (N, C, H, W); other ranks are deprecated (a warning) and masked per dims 0 and 1.
        p: the probability of zeroing a channel.
        training: apply dropout (False: the identity).
        inplace: write the result into ``input``.
    """
    _check_p(p)
    if input.ndim not in (3, 4):
        _warn_rank("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, batched=True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (3-D feature maps) with probability ``p`` while training, scaling the others
    by 1 / (1 - p).

    Args:
        input: (N, C, D, H, W) or unbatched (C, D, H, W); other ranks are deprecated (a warning) and
            read as unbatched.
        p: the probability of zeroing a channel.
        training: apply dropout (False: the identity).
        inplace: write the result into ``input``.
    """
    _check_p(p)
    if input.ndim not in (4, 5):
        _warn_rank("dropout3d", input.ndim, 3)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout (for SELU networks): while ``training``, set each element with probability ``p``
    to SELU's negative saturation value, then map a * x + b so that a zero-mean, unit-variance input
    keeps its mean and variance.

    Args:
        input: any shape.
        p: the probability of dropping an element.
        training: apply dropout (False, the default here as in torch: the identity).
        inplace: write the result into ``input``.
    """
    _check_p(p)
    return _masked(input, p, training, inplace, lambda: list(input.shape), alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels: one draw per (sample, channel) of an (N, C, *) input,
    broadcast over the other dims (see :func:`alpha_dropout`).

    Args:
        input: (N, C, *), at least 2-D.
        p: the probability of dropping a channel.
        training: apply dropout (False, the default here as in torch: the identity).
        inplace: write the result into ``input``.
    """
    _check_p(p)
    return _masked(input, p, training, inplace, lambda: _feature_mask_shape(tuple(input.shape), True), alpha=True)
