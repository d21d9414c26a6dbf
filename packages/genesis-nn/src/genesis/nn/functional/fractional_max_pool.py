"""Fractional max pooling (Graham, 2014): windows of a fixed size at pseudo-random, increasing starts, one
sequence per (sample, channel) and axis drawn from a uniform sample as torch's generate_intervals does.
The window positions are computed on the host from the samples (in the input's precision, as torch), and
the windows are gathered from each flattened plane and reduced by max."""

from __future__ import annotations

import math

import numpy as np

from genesis_autograd import Tensor, rand, tensor

from ._util import ntuple

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]


def _starts(samples: np.ndarray, in_size: int, out_size: int, pool: int) -> np.ndarray:
    """(..., out_size) window starts for each sample, torch's generate_intervals."""
    dtype = samples.dtype.type
    starts = np.empty((*samples.shape, out_size), dtype=np.int64)
    if out_size > 1:
        alpha = dtype(in_size - pool) / dtype(out_size - 1)
        i = np.arange(out_size - 1, dtype=samples.dtype)
        s = samples[..., None]
        starts[..., :-1] = ((i + s) * alpha).astype(np.int64) - (s * alpha).astype(np.int64)
    starts[..., -1] = in_size - pool
    return starts


def _fractional_max_pool(name: str, nd: int, input: Tensor, kernel_size, output_size, output_ratio, samples):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    kernel = ntuple(kernel_size, nd, "kernel_size")
    if output_size is None:
        ratios = ntuple(output_ratio, nd, "output_ratio")
        output_size = [int(size * r) for size, r in zip(spatial, ratios)]
    outs = ntuple(output_size, nd, "output_size")
    axes = ("time", "height", "width")[-nd:]
    for axis_name, size, out, k in zip(axes, spatial, outs, kernel):
        if out + k - 1 > size:
            raise RuntimeError(f"{name}(): pool {axis_name} {k} too large relative to input {axis_name} {size}")
    if samples is None:
        samples = rand(n, c, nd, dtype=x.dtype, device=x.device)
    host = np.asarray(samples.detach().cpu().numpy())
    if host.shape != (n, c, nd):
        raise RuntimeError(f"{name}(): expected _random_samples of shape {[n, c, nd]}, but got {list(host.shape)}")
    # torch's sample order: 2-D (width, height), 3-D (time, height, width).
    sample_axis = (1, 0) if nd == 2 else (0, 1, 2)
    flat = np.zeros((n, c, *outs, *kernel), dtype=np.int64)
    plane = 1
    for axis in reversed(range(nd)):
        starts = _starts(host[..., sample_axis[axis]], spatial[axis], outs[axis], kernel[axis])  # (N, C, out)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + axis] = outs[axis]
        offsets_shape = [1] * (2 + 2 * nd)
        offsets_shape[2 + nd + axis] = kernel[axis]
        flat = flat + (starts.reshape(shape) + np.arange(kernel[axis]).reshape(offsets_shape)) * plane
        plane *= spatial[axis]
    index = tensor(flat.reshape(n, c, -1), dtype="int64", device=x.device)
    gathered = x.reshape(n, c, -1).gather(2, index).reshape(n, c, *outs, math.prod(kernel))
    values, arg = gathered.max(-1)
    positions = index.reshape(n, c, *outs, math.prod(kernel)).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if unbatched:
        values, positions = values.squeeze(0), positions.squeeze(0)
    return values, positions


def fractional_max_pool2d_with_indices(
    input: Tensor, kernel_size, output_size=None, output_ratio=None, return_indices: bool = True, _random_samples=None
):
    """fractional_max_pool2d's values and each maximum's flat position in its (H * W) input plane."""
    return _fractional_max_pool(
        "fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, _random_samples
    )


def fractional_max_pool2d(
    input: Tensor, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False, _random_samples=None
):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) input to ``output_size`` (or the input size times
    ``output_ratio``) with kernel_size windows; ``_random_samples`` (N, C, 2) in [0, 1) fixes the windows."""
    values, positions = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, True, _random_samples
    )
    return (values, positions) if return_indices else values


def fractional_max_pool3d_with_indices(
    input: Tensor, kernel_size, output_size=None, output_ratio=None, return_indices: bool = True, _random_samples=None
):
    """fractional_max_pool3d's values and each maximum's flat position in its (D * H * W) input volume."""
    return _fractional_max_pool(
        "fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, _random_samples
    )


def fractional_max_pool3d(
    input: Tensor, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False, _random_samples=None
):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) input; ``_random_samples`` (N, C, 3)."""
    values, positions = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, True, _random_samples
    )
    return (values, positions) if return_indices else values
