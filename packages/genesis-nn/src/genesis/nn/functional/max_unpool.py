"""max_unpool1d / 2d / 3d: the partial inverse of max pooling, each value scattered to the flat position
its index names in a zero output plane (volume); the gradient gathers from the same positions."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, zeros

from ._util import ntuple, torch_type_name

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def unpool_output_size(input: Tensor, kernel: tuple, stride: tuple, padding: tuple, output_size) -> list[int]:
    """(size - 1) * stride + kernel - 2 * padding per axis, or ``output_size`` (checked as torch does)."""
    nd = len(kernel)
    default = [(input.shape[input.ndim - nd + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(nd)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(
            f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a length of "
            f"'{len(output_size)}'"
        )
    for d in range(nd):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {low} and {high})')
    return [int(s) for s in output_size]


def _max_unpool(nd: int, input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size) -> Tensor:
    if indices.dtype.name != "int64":
        raise RuntimeError(f"elements in indices should be type int64 but got: {torch_type_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) but got "
            f"indices tensor with shape: {list(indices.shape)}"
        )
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"max_unpool{nd}d: Expected {nd + 1}D or {nd + 2}D input, but got {list(input.shape)}")
    kernel = ntuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None else ntuple(stride, nd, "stride")
    sizes = unpool_output_size(input, kernel, stride, ntuple(padding, nd, "padding"), output_size)
    plane = math.prod(sizes)
    lead = tuple(input.shape[: input.ndim - nd])
    flat_index = indices.reshape(math.prod(lead), -1)
    if flat_index.numel():
        low, high = int(flat_index.min().item()), int(flat_index.max().item())
        if low < 0 or high >= plane:
            raise RuntimeError(
                f"Found an invalid max index: {high if high >= plane else low} (output volumes are of size "
                f"{'x'.join(map(str, sizes))})"
            )
    out = zeros(math.prod(lead), plane, dtype=input.dtype, device=input.device)
    out = out.scatter(1, flat_index, input.reshape(math.prod(lead), -1))
    return out.reshape(*lead, *sizes)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """(N, C, L) values and max_pool1d's indices -> (N, C, L_out), zero but at the indexed positions."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """(N, C, H, W) values and max_pool2d's indices -> (N, C, H_out, W_out), zero but at the indexed positions."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """(N, C, D, H, W) values and max_pool3d's indices -> (N, C, D_out, H_out, W_out), zero but at the indexed
    positions."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)
