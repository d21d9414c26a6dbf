"""interpolate: resize the spatial dims of (N, C, *) by nearest, nearest-exact, linear (3D), bilinear (4D),
trilinear (5D) or bicubic (4D) sampling, one axis at a time through index_select (whose gradient scatters back onto the
sources), by area (adaptive average pooling), or anti-aliased bilinear / bicubic / lanczos (4D: a product with a
resampling matrix per axis); and torch's deprecated upsample* wrappers of it.

Source positions are computed on the host as torch's CPU kernels do (float32 for nearest, and for
linear modes in the input's precision), so that the same pixels are picked at the edges of rounding.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from genesis_autograd import Tensor, tensor

from .adaptive_pooling import averaging_matrix

__all__ = ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]

_LINEAR_MODES = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4, "lanczos": 4}
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "bicubic", "lanczos", "area")
_CUBIC_A = -0.75  # torch's cubic convolution coefficient


def _output_sizes(input: Tensor, size, scale_factor, recompute_scale_factor) -> tuple[list[int], list]:
    dims = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = list(size) if isinstance(size, Sequence) else [size] * dims
        if len(sizes) != dims:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got input with "
                f"spatial dimensions of {list(input.shape[2:])} and output size of {sizes}. Please "
                "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                "...,oK) format."
            )
        return [int(s) for s in sizes], [None] * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = list(scale_factor) if isinstance(scale_factor, Sequence) else [scale_factor] * dims
    if len(scales) != dims:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial dimensions, but got input "
            f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {scales}."
        )
    sizes = [math.floor(float(n) * float(s)) for n, s in zip(input.shape[2:], scales)]
    return sizes, ([None] * dims if recompute_scale_factor else [float(s) for s in scales])


def _nearest_index(in_size: int, out_size: int, scale: float | None, exact: bool) -> list[int]:
    f32 = np.float32
    ratio = f32(1.0 / scale) if scale is not None else f32(in_size) / f32(out_size)
    offset = f32(0.5) if exact else f32(0.0)
    dst = np.arange(out_size, dtype=np.float32)
    return np.minimum(np.floor((dst + offset) * ratio).astype(np.int64), in_size - 1).tolist()


def _linear_index(in_size: int, out_size: int, scale: float | None, align_corners: bool, precision):
    """(low index, high index, weight of high) per output position, as torch's area_pixel_* helpers."""
    if align_corners:
        ratio = precision(in_size - 1) / precision(out_size - 1) if out_size > 1 else precision(0)
    else:
        ratio = precision(1.0 / scale) if scale is not None else precision(in_size) / precision(out_size)
    dst = np.arange(out_size, dtype=precision)
    src = ratio * dst if align_corners else np.maximum(ratio * (dst + precision(0.5)) - precision(0.5), 0)
    low = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    high = np.minimum(low + 1, in_size - 1)
    return low.tolist(), high.tolist(), (src - low).astype(precision)


def _cubic_index(in_size: int, out_size: int, scale: float | None, align_corners: bool, precision):
    """Four (index, weight) taps per output position, as torch's upsample_bicubic2d: cubic
    convolution (A = -0.75) around an unclamped source position, taps clamped into the input."""
    if align_corners:
        ratio = precision(in_size - 1) / precision(out_size - 1) if out_size > 1 else precision(0)
    else:
        ratio = precision(1.0 / scale) if scale is not None and scale > 0 else precision(in_size) / precision(out_size)
    dst = np.arange(out_size, dtype=precision)
    src = ratio * dst if align_corners else ratio * (dst + precision(0.5)) - precision(0.5)
    base = np.floor(src)
    t = (src - base).astype(precision)
    a = precision(_CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    base = base.astype(np.int64)
    return [(np.clip(base + k - 1, 0, in_size - 1).tolist(), w) for k, w in enumerate(weights)]


def _aa_filter(mode: str):
    """The anti-aliasing kernels of torch's _upsample_*_aa: a triangle (bilinear), Keys' cubic with a = -0.5
    (bicubic) or the Lanczos-3 windowed sinc (lanczos), and the width in input pixels they cover at scale 1."""
    if mode == "bilinear":
        return 2, lambda x: np.maximum(1 - np.abs(x), 0)
    if mode == "lanczos":
        return 6, lambda x: np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0)

    def cubic(x):
        a, x = -0.5, np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1, near, np.where(x < 2, far, 0))

    return 4, cubic


def _antialias_matrix(in_size: int, out_size: int, scale: float | None, align_corners: bool, mode: str, precision):
    """(out_size, in_size) resampling weights of torch's anti-aliased kernels: output pixel i averages the input
    pixels within the filter's support around its centre, the filter stretched by the downscaling factor, and
    the weights normalised to sum to 1 (torch's _compute_weights_aa, computed in the input's precision)."""
    if align_corners:
        ratio = precision(in_size - 1) / precision(out_size - 1) if out_size > 1 else precision(0)
    else:
        ratio = precision(1.0 / scale) if scale is not None and scale > 0 else precision(in_size) / precision(out_size)
    width, kernel = _aa_filter(mode)
    support = precision(width * 0.5) * ratio if ratio >= 1 else precision(width * 0.5)
    invscale = precision(1) / ratio if ratio >= 1 else precision(1)
    weights = np.zeros((out_size, in_size), dtype=precision)
    for i in range(out_size):
        center = ratio * precision(i + 0.5)
        low = max(int(center - support + precision(0.5)), 0)
        high = min(int(center + support + precision(0.5)), in_size)
        taps = np.arange(low, high)
        w = kernel((taps - center + precision(0.5)).astype(precision) * invscale).astype(precision)
        total = w.sum(dtype=precision)
        weights[i, low:high] = w / total if total != 0 else w
    return weights


def _antialias(input: Tensor, sizes: list[int], scales: list, align_corners: bool, mode: str) -> Tensor:
    """Anti-aliased bilinear / bicubic / lanczos resizing, one spatial axis at a time as a product with its weights."""
    precision = np.float64 if input.dtype.name == "float64" else np.float32
    out = input
    for k, (in_size, out_size, scale) in enumerate(zip(input.shape[2:], sizes, scales)):
        weights = _antialias_matrix(in_size, out_size, scale, align_corners, mode, precision)
        matrix = tensor(weights.T.astype(np.float64), dtype=input.dtype, device=input.device)
        out = out.movedim(2 + k, -1).matmul(matrix).movedim(-1, 2 + k)
    return out


def _area(input: Tensor, sizes: list[int]) -> Tensor:
    """mode="area": the average over each output cell's input window (adaptive average pooling, with
    torch's window bounds), one spatial axis at a time as a product with an averaging matrix."""
    if input.ndim not in (3, 4, 5):
        raise NotImplementedError(f"Got {input.ndim}D input, but area mode needs 3D, 4D or 5D input")
    out = input
    for k, (in_size, out_size) in enumerate(zip(input.shape[2:], sizes)):
        if in_size == out_size:
            continue
        axis = 2 + k
        out = out.movedim(axis, -1).matmul(averaging_matrix(in_size, out_size, input).mT).movedim(-1, axis)
    return out if out is not input else input * 1.0


def _along(input: Tensor, axis: int, index: list[int]) -> Tensor:
    return input.index_select(axis, tensor(index, dtype="int64", device=input.device))


def interpolate(
    input: Tensor,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dimensions of ``input`` by sampling.

    Args:
        input: (N, C, d1, ...); 3-D for ``"linear"``, 4-D for ``"bilinear"``.
        size: the output spatial size (an int or one per dimension); or give ``scale_factor``.
        scale_factor: the multiplier for each spatial size (a number or one per dimension).
        mode: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (3-D), ``"bilinear"`` (4-D), ``"trilinear"``
            (5-D), ``"bicubic"`` (4-D), ``"lanczos"`` (4-D, Lanczos-3, with antialias=True) or ``"area"``.
        align_corners: for the linear modes, map the corner pixels of input and output onto each
            other (torch's meaning).
        recompute_scale_factor: compute the sampling from the output size rather than from
            ``scale_factor``.
        antialias: for ``"bilinear"``, ``"bicubic"`` and ``"lanczos"`` (4-D), low-pass filter when downsampling (torch's
            anti-aliased kernels: the filter widened by the downscaling factor, weights normalised).
    """
    if mode not in _MODES:
        raise NotImplementedError(
            f"interpolate mode {mode!r} is not supported (nearest, nearest-exact, linear, bilinear, trilinear, "
            "bicubic, lanczos, area are)"
        )
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"
        )
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as input"
        )
    if mode == "lanczos" and align_corners:
        raise ValueError("Lanczos mode does not support align_corners=True")
    if mode == "lanczos" and not antialias:
        raise ValueError("Lanczos mode requires antialias=True")
    if input.ndim < 3:
        raise ValueError(f"interpolate expects (N, C, d1, ...) input, got {input.ndim}D")
    if mode in _LINEAR_MODES and input.ndim != _LINEAR_MODES[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR_MODES[mode]}D input")
    sizes, scales = _output_sizes(input, size, scale_factor, recompute_scale_factor)
    if mode == "area":
        return _area(input, sizes)
    if antialias:
        return _antialias(input, sizes, scales, bool(align_corners), mode)
    out = input
    for k, (in_size, out_size, scale) in enumerate(zip(input.shape[2:], sizes, scales)):
        axis = 2 + k
        if mode in ("nearest", "nearest-exact"):
            # An axis whose size is unchanged is still sampled by its scale (floor(3 * 1.3) = 3 reads rows
            # 0, 0, 1), except by torch's 2-D "nearest" kernel, which copies it.
            copies = scale in (None, 1.0) or (mode == "nearest" and input.ndim == 4)
            if out_size != in_size or not copies:
                out = _along(out, axis, _nearest_index(in_size, out_size, scale, mode == "nearest-exact"))
            continue
        precision = np.float64 if input.dtype.name == "float64" else np.float32
        shape = [1] * input.ndim
        shape[axis] = out_size
        if mode == "bicubic":
            taps = _cubic_index(in_size, out_size, scale, bool(align_corners), precision)
            terms = [
                _along(out, axis, index)
                * tensor(w.astype(np.float64), dtype=input.dtype, device=input.device).reshape(shape)
                for index, w in taps
            ]
            out = terms[0] + terms[1] + terms[2] + terms[3]
            continue
        low, high, frac = _linear_index(in_size, out_size, scale, bool(align_corners), precision)
        w_high = tensor(frac.astype(np.float64), dtype=input.dtype, device=input.device).reshape(shape)
        out = _along(out, axis, low) * (1 - w_high) + _along(out, axis, high) * w_high
    return out


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None):
    """Deprecated in torch: F.interpolate (with a warning, as torch)."""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated in torch: F.interpolate(..., mode="nearest") (with a warning, as torch)."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated in torch: F.interpolate(..., mode="bilinear", align_corners=True) (with a warning, as torch)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
