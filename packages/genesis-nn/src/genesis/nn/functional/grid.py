"""affine_grid and grid_sample: sampling an (N, C, H, W) or (N, C, D, H, W) input at the normalised
coordinates of a grid, as torch's grid_sampler (bilinear / trilinear, nearest, bicubic for 2-D; zeros,
border or reflection padding; align_corners).

Composed of differentiable Tensor ops, so both gradients come out of autograd: the input's through
``gather`` (whose backward scatter-adds onto the sampled pixels) and the grid's through the interpolation
weights, which are the only place the grid's values enter (the integer tap positions carry no gradient,
as in torch's kernels). The input's spatial dims are flattened, each tap is one gather of (N, C, L) values
at linear indices, masked to zero where the tap falls outside the input.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from genesis_autograd import Function, Tensor, cat, linspace, ones, where

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # torch's cubic convolution coefficient
_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
    "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for details."
)


def _align(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=3)
        return False
    return bool(align_corners)


def _base_coords(steps: int, align_corners: bool, like: Tensor) -> Tensor:
    """torch's linspace_from_neg_one: steps points over [-1, 1], shrunk by (steps - 1) / steps without
    align_corners (pixel centres); one step is the centre, 0."""
    if steps <= 1:
        return like.new_zeros((1,))
    coords = linspace(-1.0, 1.0, steps, dtype=like.dtype, device=like.device)
    return coords if align_corners else coords * ((steps - 1) / steps)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps, for grid_sample.

    Args:
        theta: (N, 2, 3) maps for a 2-D ``size`` (N, C, H, W), or (N, 3, 4) for a 3-D one (N, C, D, H, W).
        size: the output size the grid is for.
        align_corners: -1 and 1 are the corner pixels' centres (True) or their outer edges (False,
            the default, with torch's warning when not given).

    Returns:
        (N, H, W, 2) or (N, D, H, W, 3) normalised (x, y[, z]) coordinates: theta applied to the output's
        own normalised pixel coordinates.
    """
    align_corners = _align(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) in (4, 5):
        k = len(size) - 2
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (k, k + 1):
            raise ValueError(
                f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. Got {theta.shape}."
            )
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
            f"Got size {size}."
        )
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
            "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(
            f"affine_grid: theta holds {theta.shape[0]} matrices but size asks for a batch of {size[0]} "
            f"(theta {tuple(theta.shape)}, size {size})"
        )
    # The base grid's last axis is (x, y[, z], 1): x runs along the last spatial dim.
    axes = []
    for i, steps in enumerate(reversed(spatial)):
        shape = [1] * k
        shape[k - 1 - i] = steps
        axes.append(_base_coords(steps, align_corners, theta).reshape(shape).expand(*spatial))
    axes.append(ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = cat([a.unsqueeze(-1) for a in axes], -1).reshape(1, -1, k + 1)
    return base.matmul(theta.mT).reshape(size[0], *spatial, k)


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """[-1, 1] to pixel units: the corner pixels' centres (align_corners) or their outer edges."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Fold ``coord`` into [twice_low / 2, twice_high / 2] by reflection at both ends (differentiable: the
    slope is +1 or -1 by the parity of the number of folds)."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (coord - low).abs()
    flips = (distance.detach() / span).floor()
    extra = distance - flips * span
    return where(flips.remainder(2) == 0, extra + low, (span - extra) + low)


def _pad_coord(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """torch's compute_coordinates: border clips into the input, reflection folds then clips."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _reflect(coord, *twice).clamp(0, size - 1)
    return coord


class _ZeroGridGradient(Function):
    """Passes the sampled values through and gives the grid a zero gradient, as torch's nearest mode does
    (its output is piecewise constant in the grid)."""

    @staticmethod
    def forward(ctx: Any, values: Tensor, grid: Tensor) -> Tensor:
        ctx.grid_shape, ctx.grid_dtype = tuple(grid.shape), grid.dtype
        return values.detach()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor]:
        return grad, grad.new_zeros(ctx.grid_shape, dtype=ctx.grid_dtype)


class _Sampler:
    """Gathers taps of a flattened (N, C, prod(sizes)) input at per-axis integer positions."""

    def __init__(self, input: Tensor, sizes: tuple[int, ...]) -> None:
        self.flat = input.reshape(input.shape[0], input.shape[1], -1)
        self.sizes = sizes  # spatial sizes, outermost first

    def tap(self, positions: list[Tensor]) -> Tensor:
        """Values at integer-valued float ``positions`` (one (N, L) tensor per spatial axis, outermost
        first), 0 where a position is outside the input; (N, C, L)."""
        inside = None
        linear = None
        for pos, size in zip(positions, self.sizes):
            ok = (pos >= 0) & (pos <= size - 1)
            inside = ok if inside is None else inside & ok
            index = pos.clamp(0, size - 1).to(dtype="int64")
            linear = index if linear is None else linear * size + index
        assert linear is not None and inside is not None
        n, c, length = self.flat.shape[0], self.flat.shape[1], linear.shape[1]
        values = self.flat.gather(2, linear.unsqueeze(1).expand(n, c, length))
        return values * inside.unsqueeze(1).to(dtype=self.flat.dtype)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """The four cubic-convolution weights (A = -0.75) of the taps at floor - 1 ... floor + 2."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _check(input: Tensor, grid: Tensor, mode: str) -> None:
    if input.device != grid.device:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to be on same device, but input is on {input.device} and "
            f"grid is on {grid.device}"
        )
    if input.dtype != grid.dtype:
        raise RuntimeError(
            f"grid_sampler(): expected input and grid to have same dtype, but input has {input.dtype} and grid "
            f"has {grid.dtype}"
        )
    if not input.is_floating_point():
        raise NotImplementedError(f"grid_sampler(): not implemented for {input.dtype} input")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got grid with "
            f"sizes {list(grid.shape)}"
        )
    for i in range(2, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(
                f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                f"{list(input.shape)} with dimension {i} being empty"
            )
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(
            f"grid_sampler(): expected {input.ndim if input.ndim in (4, 5) else 4}D input and grid with same "
            f"number of dimensions, but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample ``input`` at the normalised coordinates of ``grid``.

    Args:
        input: (N, C, H, W) or (N, C, D, H, W).
        grid: (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3) of (x, y[, z]) in [-1, 1] (x along the
            last spatial dim); values outside are padded by ``padding_mode``.
        mode: ``"bilinear"`` (trilinear for 5-D), ``"nearest"`` (half to even) or ``"bicubic"`` (4-D only).
        padding_mode: ``"zeros"``, ``"border"`` (the edge value) or ``"reflection"`` (mirrored at the border).
        align_corners: -1 and 1 are the corner pixels' centres (True) or their outer edges (False, the
            default, with torch's warning when not given).

    Returns:
        (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out), differentiable in input and grid (nearest:
        a zero gradient for the grid).
    """
    if mode not in _MODES:
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    align_corners = _align(align_corners)
    _check(input, grid, mode)
    sizes = tuple(int(s) for s in input.shape[2:])
    out_spatial = tuple(grid.shape[1:-1])
    k = len(sizes)
    flat_grid = grid.reshape(grid.shape[0], -1, k)
    # coords[j] runs along spatial axis j (outermost first); the grid lists x (innermost) first.
    coords = [_unnormalize(flat_grid[..., k - 1 - j], sizes[j], align_corners) for j in range(k)]
    sampler = _Sampler(input, sizes)
    if mode == "bicubic":
        out = _bicubic(sampler, coords, padding_mode, align_corners)
    else:
        coords = [_pad_coord(c, s, padding_mode, align_corners) for c, s in zip(coords, sizes)]
        if mode == "nearest":
            out = _ZeroGridGradient.apply(sampler.tap([c.detach().round() for c in coords]), grid)
        else:
            out = _linear(sampler, coords)
    return out.reshape(input.shape[0], input.shape[1], *out_spatial)


def _linear(sampler: _Sampler, coords: list[Tensor]) -> Tensor:
    """Bilinear / trilinear: the 2**k corners around each point, weighted by the opposite distances."""
    lows = [c.detach().floor() for c in coords]
    fracs = [c - low for c, low in zip(coords, lows)]
    out = None
    for corner in range(2 ** len(coords)):
        bits = [(corner >> (len(coords) - 1 - j)) & 1 for j in range(len(coords))]
        weight = None
        for bit, frac in zip(bits, fracs):
            w = frac if bit else 1 - frac
            weight = w if weight is None else weight * w
        assert weight is not None
        term = sampler.tap([low + bit for low, bit in zip(lows, bits)]) * weight.unsqueeze(1)
        out = term if out is None else out + term
    assert out is not None
    return out


def _bicubic(sampler: _Sampler, coords: list[Tensor], padding_mode: str, align_corners: bool) -> Tensor:
    """Bicubic over the 4 x 4 taps around each point; each tap's position is padded on its own (torch's
    get_value_bounded), the point's own coordinates are not."""
    (cy, cx), (h, w) = coords, sampler.sizes
    y0, x0 = cy.detach().floor(), cx.detach().floor()
    wy, wx = _cubic_weights(cy - y0), _cubic_weights(cx - x0)
    out = None
    for i in range(4):
        ty = _pad_coord(y0 + (i - 1), h, padding_mode, align_corners)
        for j in range(4):
            tx = _pad_coord(x0 + (j - 1), w, padding_mode, align_corners)
            term = sampler.tap([ty, tx]) * (wy[i] * wx[j]).unsqueeze(1)
            out = term if out is None else out + term
    assert out is not None
    return out
