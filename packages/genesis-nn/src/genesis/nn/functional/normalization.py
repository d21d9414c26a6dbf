"""Normalisations: layer_norm, rms_norm, group_norm, batch_norm, local_response_norm, and normalize (p-norm
scaling). instance_norm is in instance_norm.py."""

from __future__ import annotations

from collections.abc import Sequence

import genesis_autograd as _ag
from genesis_autograd import Tensor, autocast_policy, no_grad

from .padding import pad as _pad

__all__ = ["batch_norm", "group_norm", "layer_norm", "local_response_norm", "normalize", "rms_norm"]


# layer_norm and rms_norm take no autocast decorator: their Functions (LayerNorm, RMSNorm) cast by the same
# "float32" policy when applied, and each is the whole of its function, so a wrapper would cast nothing more.
def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int] | int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """(x - mean) / sqrt(var + eps) over the trailing ``normalized_shape`` dims (biased variance), then
    ``weight`` and ``bias``: one fused op each way (under autocast, in float32 as torch)."""
    return _ag.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(
    input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims, then ``weight``; eps defaults to the dtype's
    machine epsilon. One fused op each way."""
    return _ag.rms_norm(input, normalized_shape, weight, eps)


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    """(1, C, 1, ...): how a per-channel vector broadcasts against (N, C, *)."""
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


@autocast_policy("float32")
def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    """Normalise each sample over groups of channels: (x - mean) / sqrt(var + eps) within each
    of ``num_groups`` groups (biased variance), then ``weight`` and ``bias`` per channel.

    Args:
        input: (N, C, *), C divisible by ``num_groups``.
        num_groups: the number of channel groups.
        weight: (C,) scale, or None.
        bias: (C,) shift, or None.
        eps: added to the variance.
    """
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {list(input.shape)} and num_groups={num_groups}"
        )
    grouped = input.reshape(n, num_groups, -1)
    centered = grouped - grouped.mean(2, keepdim=True)
    out = (centered * ((centered * centered).mean(2, keepdim=True) + eps).rsqrt()).reshape(*input.shape)
    if weight is not None:
        out = out * weight.reshape(_channel_shape(input))
    if bias is not None:
        out = out + bias.reshape(_channel_shape(input))
    return out


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float | None = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise (N, C, *) per channel: with the batch's statistics when training (and fold them into the
    running ones: the mean, and the unbiased variance, by ``momentum``), else with the running ones.

    ``momentum=None`` is passed by BatchNorm as the cumulative-average factor it computed; here it
    means 0.0 as in torch's functional form.
    """
    if input.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
    shape = _channel_shape(input)
    if training:
        count = input.numel() // input.shape[1]
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {list(input.shape)}"
            )
        dims = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        out = centered * (var + eps).rsqrt()
        m = 0.0 if momentum is None else momentum
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - m).add_(mean.detach().reshape(-1).to(dtype=running_mean.dtype) * m)
            if running_var is not None:
                unbiased = var.detach().reshape(-1) * (count / (count - 1))
                running_var.mul_(1 - m).add_(unbiased.to(dtype=running_var.dtype) * m)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        scale = (running_var.reshape(shape) + eps).rsqrt()
        out = (input - running_mean.reshape(shape)) * scale
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p along dim, eps)."""
    norm = input.vector_norm(p, dim, keepdim=True).clamp_min(eps)
    result = input / norm
    if out is not None:
        return out.copy_(result)
    return result


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels) ** beta, over (N, C, *) input; the
    window is centred (size // 2 channels before, (size - 1) // 2 after) and zero-padded at the ends."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    channels_last = (input * input).movedim(1, -1)
    padded = _pad(channels_last, [size // 2, (size - 1) // 2])
    mean_square = padded.unfold(-1, size, 1).sum(-1).movedim(-1, 1) / size
    return input / (mean_square * alpha + k).pow(beta)
