"""instance_norm: normalise each (sample, channel) plane over its spatial elements, optionally folding the
statistics (averaged over the batch) into running ones, as torch.nn.functional.instance_norm."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, no_grad

__all__ = ["instance_norm"]


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """(x - mean) / sqrt(var + eps) per (sample, channel) of (N, C, *) input (biased variance), then
    ``weight`` and ``bias`` per channel.

    With ``use_input_stats`` the plane's own statistics are used and, where given, the running ones move
    by ``momentum`` towards their batch averages (the mean, and the unbiased variance); without it the
    running statistics normalise instead.
    """
    if input.ndim < 3:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
    count = math.prod(input.shape[2:])
    if use_input_stats and count == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if use_input_stats:
        dims = tuple(range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        out = centered * (var + eps).rsqrt()
        with no_grad():
            if running_mean is not None:
                batch_mean = mean.detach().reshape(input.shape[0], -1).mean(0)
                running_mean.mul_(1 - momentum).add_(batch_mean.to(dtype=running_mean.dtype) * momentum)
            if running_var is not None:
                unbiased = var.detach().reshape(input.shape[0], -1).mean(0) * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(dtype=running_var.dtype) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        out = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out
