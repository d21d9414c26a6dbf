"""Fused cross-entropy on CUDA: per-row loss / logsumexp / target weight, and the logits' gradient.

The logits arrive classes-last (any row strides: torch's (N, C, d1, ...) comes as a permuted
view, never copied); per-row arrays are contiguous. One kernel each way (genesis_kernels.cross_entropy).
"""

from __future__ import annotations

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, dtype_of, forget_range, reg, stream_of, value_range
from .memory import contiguous


def _acc(logits: View) -> str:
    return "float64" if logits.dtype == "float64" else "float32"


def _check(logits: View, target: View) -> None:
    if not dtype_of(logits).is_floating_point:
        raise NotImplementedError(f"\"cross_entropy_cuda\" not implemented for '{logits.dtype}'")
    if not logits.shape or tuple(target.shape) != tuple(logits.shape[:-1]):
        raise ValueError(
            f"cross_entropy: target of shape {list(target.shape)} does not match logits of shape "
            f"{list(logits.shape)} (classes last)"
        )
    if dtype_of(target).is_floating_point or target.dtype == "bool":
        raise RuntimeError(f"cross_entropy: expected an integer target, got {target.dtype}")


def _weight_sum(weight: View | None, label_smoothing: float, acc: str) -> View | None:
    """sum(weight), on the device (no synchronisation): only label smoothing with weights reads it."""
    if weight is None or label_smoothing <= 0.0:
        return None
    total = gs.empty((), acc, weight.device)
    gk.reduce("sum", weight, total, (0,), stream=stream_of(weight))
    return total


@reg("cross_entropy")
def cross_entropy(
    logits: View, target: View, weight: View | None, ignore_index: int, label_smoothing: float
) -> tuple[View, View, View]:
    _check(logits, target)
    acc = _acc(logits)
    rows = tuple(logits.shape[:-1])
    loss, lse, row_weight = (gs.empty(rows, acc, logits.device) for _ in range(3))
    if loss.numel:
        weight = None if weight is None else contiguous(weight)
        target = contiguous(target)
        gk.cross_entropy(
            logits,
            target,
            weight,
            _weight_sum(weight, label_smoothing, acc),
            loss,
            lse,
            row_weight,
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
            target_range=value_range(target),  # known in range: no check, no sync
            stream=stream_of(logits),
        )
    return loss, lse, row_weight


def _per_row(grad: View) -> View:
    """The incoming gradient as the kernel reads it: one element (a reduced loss, or a broadcast scalar
    such as the backward of ``loss.sum()``), else one per row, contiguous."""
    if grad.numel == 1 or all(s == 0 for s in grad.strides):
        return grad.as_strided((1,), (1,), grad.offset)
    return contiguous(grad)


@reg("cross_entropy_backward")
def cross_entropy_backward(
    logits: View,
    target: View,
    weight: View | None,
    lse: View,
    grad: View,
    total: View | None,
    ignore_index: int,
    label_smoothing: float,
    out: View | None,
) -> View:
    _check(logits, target)
    if out is not None:
        forget_range(out)
    dx = gs.empty(logits.shape, logits.dtype, logits.device) if out is None else out
    if dx.numel:
        weight = None if weight is None else contiguous(weight)
        gk.cross_entropy_backward(
            logits,
            contiguous(target),
            weight,
            _weight_sum(weight, label_smoothing, _acc(logits)),
            contiguous(lse),
            _per_row(grad),
            total,
            dx,
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
            stream=stream_of(logits),
        )
    return dx
