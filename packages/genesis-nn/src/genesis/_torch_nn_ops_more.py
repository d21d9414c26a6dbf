"""The rest of the nn ops torch has at its top level with signatures of their own: torch.embedding
(weight first), torch.convolution (one entry for every conv and transposed conv), torch.grid_sampler
(the modes as ints), torch.constant_pad_nd, torch.feature_dropout, torch.norm_except_dim (weight
norm's helper), ... Each is a thin wrapper over what nn.functional (or Tensor) already computes.

torch's internal kernels (native_*, the SyncBatchNorm batch_norm_* helpers, embedding_bag's
four-tensor form) are left out: user code calls nn.functional for them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from genesis_autograd import Tensor

from .nn.functional.bilinear import bilinear
from .nn.functional.conv import conv1d, conv2d, conv3d
from .nn.functional.conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d
from .nn.functional.dropout import _feature_dropout
from .nn.functional.grid import affine_grid, grid_sample
from .nn.functional.normalization import rms_norm
from .nn.functional.padding import pad as _pad
from .nn.functional.sparse import _renorm_
from .nn.functional.sparse import embedding as _embedding

__all__ = [
    "affine_grid_generator",
    "bilinear",
    "constant_pad_nd",
    "convolution",
    "embedding",
    "embedding_renorm_",
    "feature_dropout",
    "feature_dropout_",
    "grid_sampler",
    "grid_sampler_2d",
    "grid_sampler_3d",
    "norm_except_dim",
    "rms_norm",
]

# torch.convolution's choice of function: (transposed, number of spatial dims) -> the functional.
_CONVOLUTIONS: dict[tuple[bool, int], Callable[..., Tensor]] = {
    (False, 1): conv1d,
    (False, 2): conv2d,
    (False, 3): conv3d,
    (True, 1): conv_transpose1d,
    (True, 2): conv_transpose2d,
    (True, 3): conv_transpose3d,
}
# torch's grid_sampler enums, in their order (GridSamplerInterpolation, GridSamplerPadding).
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """``nn.functional.affine_grid(theta, size, align_corners)``: the sampling grid of an affine map."""
    return affine_grid(theta, size, align_corners)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """``nn.functional.pad(input, pad, "constant", value)``: pad (or, negative, crop) the last dims."""
    if len(pad) % 2:  # torch's top-level message (nn.functional.pad words it differently)
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    return _pad(input, pad, "constant", value)


def convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    """A 1-, 2- or 3-D convolution (or, ``transposed``, transposed convolution) chosen by ``weight``'s rank;
    every argument is required, as in torch.convolution. ``output_padding`` is used by transposed ones only."""
    if weight.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    conv = _CONVOLUTIONS.get((bool(transposed), weight.ndim - 2))
    if conv is None:
        raise RuntimeError(
            f"convolution: expected a 3-D, 4-D or 5-D weight, but got weight of shape {list(weight.shape)}"
        )
    if transposed:
        return conv(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return conv(input, weight, bias, stride, padding, dilation, groups)


def embedding(
    weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False
) -> Tensor:
    """``weight[indices]`` (torch's top-level argument order: the table first). A ``padding_idx`` ≥ 0 names
    the row that gets no gradient; a negative one, none (nn.functional.embedding resolves negatives first)."""
    return _embedding(indices, weight, padding_idx if padding_idx >= 0 else None, None, 2.0, scale_grad_by_freq, sparse)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Scale, in place, the rows of ``weight`` named in ``indices`` whose ``norm_type``-norm exceeds
    ``max_norm`` down to it (factor max_norm / (norm + 1e-7), as torch); returns ``weight``."""
    _renorm_(weight, indices, max_norm, norm_type)
    return weight


def _check_feature_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:  # RuntimeError here, as torch's top-level form (nn.functional raises ValueError)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """While ``train``, zero whole channels of an (N, C, *) input with probability ``p`` (one draw per sample
    and channel, broadcast over the rest) and scale the kept ones by 1 / (1 - p)."""
    _check_feature_p(p)
    return _feature_dropout(input, p, train, False, True)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`feature_dropout`."""
    _check_feature_p(p)
    return _feature_dropout(input, p, train, True, True)


def _enum(names: tuple[str, ...], value: int, what: str) -> str:
    if not 0 <= value < len(names):
        raise RuntimeError(
            f"grid_sampler(): {what} must be one of 0..{len(names) - 1} ({', '.join(names)}), got {value}"
        )
    return names[value]


def grid_sampler(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``nn.functional.grid_sample`` with torch's enum ints: interpolation 0 bilinear, 1 nearest, 2 bicubic;
    padding 0 zeros, 1 border, 2 reflection."""
    mode = _enum(_INTERPOLATIONS, interpolation_mode, "interpolation_mode")
    return grid_sample(input, grid, mode, _enum(_PADDINGS, padding_mode, "padding_mode"), align_corners)


def _check_rank(input: Tensor, grid: Tensor, rank: int) -> None:
    if input.ndim != rank or grid.ndim != rank:
        raise RuntimeError(
            f"grid_sampler(): expected {rank}D input and grid with same number of dimensions, but got input with "
            f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )


def grid_sampler_2d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """:func:`grid_sampler` for a 4-D input (N, C, H, W) and grid (N, H_out, W_out, 2)."""
    _check_rank(input, grid, 4)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """:func:`grid_sampler` for a 5-D input (N, C, D, H, W) and grid (N, D_out, H_out, W_out, 3)."""
    _check_rank(input, grid, 5)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (weight norm's ``g``);
    ``dim=-1`` gives the norm of the whole tensor, 0-d."""
    if dim == -1:
        return v.norm(pow)
    d = dim % v.ndim if v.ndim else 0
    others = [i for i in range(v.ndim) if i != d]
    if not others:
        return v.abs()  # torch's norm over no dims: |v| elementwise
    return v.norm(pow, dim=others, keepdim=True)
