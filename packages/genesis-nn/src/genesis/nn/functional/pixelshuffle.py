"""pixel_shuffle and pixel_unshuffle: trade channels for spatial resolution (sub-pixel convolution).

Both are one reshape, one permute and one reshape, so they are views and copies of existing ops
with their gradients.
"""

from __future__ import annotations

from genesis_autograd import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle"]


def _check(name: str, input: Tensor, factor: int, factor_name: str) -> None:
    if input.ndim < 3:
        raise RuntimeError(
            f"{name} expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {factor_name}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange (*, C * r^2, H, W) into (*, C, H * r, W * r), r = upscale_factor: channel
    c * r^2 + i * r + j becomes the pixel offset (i, j) of channel c.

    Args:
        input: at least 3-D; its channel dim (-3) divisible by r^2.
        upscale_factor: r, a positive int.
    """
    r = upscale_factor
    _check("pixel_shuffle", input, r, "upscale_factor")
    *batch, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
            f"but input.size(-3)={channels} is not divisible by {r * r}"
        )
    n = len(batch)
    out = input.reshape(*batch, channels // (r * r), r, r, height, width)
    out = out.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)  # (*, C, H, r, W, r)
    return out.reshape(*batch, channels // (r * r), height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """The inverse of :func:`pixel_shuffle`: (*, C, H * r, W * r) into (*, C * r^2, H, W),
    r = downscale_factor.

    Args:
        input: at least 3-D; its height and width divisible by r.
        downscale_factor: r, a positive int.
    """
    r = downscale_factor
    _check("pixel_unshuffle", input, r, "downscale_factor")
    *batch, channels, height, width = input.shape
    for what, size, dim in (("height", height, -2), ("width", width, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but input.size({dim})={size} "
                f"is not divisible by {r}"
            )
    n = len(batch)
    out = input.reshape(*batch, channels, height // r, r, width // r, r)
    out = out.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)  # (*, C, r, r, H, W)
    return out.reshape(*batch, channels * r * r, height // r, width // r)
