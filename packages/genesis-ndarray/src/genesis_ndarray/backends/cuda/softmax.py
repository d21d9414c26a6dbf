"""softmax / log_softmax and their backward on CUDA: the dim moved last by a view, one kernel."""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from ...shape import normalize_dim
from .common import View, dtype_of, reg, stream_of
from .views import permute


def _to_last(v: View, dim: int) -> tuple[View, list[int]]:
    """v with ``dim`` moved last (a view), and the order that does it."""
    order = [d for d in range(len(v.shape)) if d != dim] + [dim]
    return permute(v, order), order


@reg("softmax")
def softmax(input: View, dim: int, log: bool) -> View:
    if not dtype_of(input).is_floating_point:
        raise NotImplementedError(f"\"softmax_cuda\" not implemented for '{input.dtype}'")
    src = input if len(input.shape) else input.as_strided((1,), (1,), input.offset)
    dim = normalize_dim(dim, len(src.shape))
    out = gs.empty(src.shape, input.dtype, input.device)
    if out.numel:
        x_last, _ = _to_last(src, dim)
        y_last, _ = _to_last(out, dim)
        gk.softmax(x_last, y_last, log=log, stream=stream_of(input))
    return out if len(input.shape) else out.as_strided((), (), out.offset)


@reg("softmax_backward")
def softmax_backward(output: View, grad_output: View, dim: int, log: bool) -> View:
    src_y = output if len(output.shape) else output.as_strided((1,), (1,), output.offset)
    src_dy = grad_output if len(grad_output.shape) else grad_output.as_strided((1,), (1,), grad_output.offset)
    dim = normalize_dim(dim, len(src_y.shape))
    dx = gs.empty(src_y.shape, output.dtype, output.device)
    if dx.numel:
        gk.softmax_backward(
            _to_last(src_y, dim)[0], _to_last(src_dy, dim)[0], _to_last(dx, dim)[0], log=log, stream=stream_of(output)
        )
    return dx if len(output.shape) else dx.as_strided((), (), dx.offset)
