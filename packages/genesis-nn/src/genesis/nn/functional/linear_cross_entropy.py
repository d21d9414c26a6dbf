"""linear_cross_entropy: cross entropy of linear(input, weight, bias), torch 2.13's function.

With ``options=None`` it is the reference composition (linear, then cross_entropy). With a
LinearCrossEntropyOptions it runs chunked: rows are processed ``chunk`` at a time, so the full
(rows, classes) logits never exist; forward keeps only each row's logsumexp, and backward recomputes each
chunk's logits to form softmax - one_hot and its three matrix products (input, weight and bias gradients).
"""

from __future__ import annotations

import math
import warnings

from genesis_autograd import Function, Tensor, arange, cat, zeros

from .linear import linear
from .linear_cross_entropy_options import LinearCrossEntropyOptions
from .loss import cross_entropy

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]


def _chunks(rows: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, rows)) for start in range(0, rows, size)]


def _row_weights(target: Tensor, weight: Tensor | None, ignore_index: int, dtype) -> Tensor:
    """Each row's weight: weight[target] (1 without a weight), 0 where the target is ignored."""
    kept = target != ignore_index
    w = kept.to(dtype)
    if weight is not None:
        w = w * weight.to(dtype=dtype)[target.where(kept, 0)]
    return w


class _ChunkedLinearCrossEntropy(Function):
    """Per-row losses w[y] (logsumexp(z) - z[y]), z = x W^T + b, computed ``chunk`` rows at a time in
    ``acc_dtype``; backward recomputes each chunk's z. Inputs: x (N, D), W (C, D), b (C,) or None,
    target (N,), class weight (C,) or None."""

    @staticmethod
    def forward(ctx, x, w, b, target, weight, ignore_index, chunk, acc_dtype, allow_retain_graph):
        rows = x.shape[0]
        if rows and ((target != ignore_index) & ((target < 0) | (target >= w.shape[0]))).any().item():
            raise IndexError(f"Target is out of bounds: a target is outside [0, {w.shape[0]})")
        wa = w.to(acc_dtype)
        ba = None if b is None else b.to(acc_dtype)
        row_weight = _row_weights(target, weight, ignore_index, acc_dtype)
        lse_parts, picked_parts = [], []
        for start, stop in _chunks(rows, chunk):
            logits = linear(x[start:stop].to(acc_dtype), wa, ba)
            lse_parts.append(logits.logsumexp(1))
            safe = target[start:stop].where(target[start:stop] != ignore_index, 0)
            picked_parts.append(logits.gather(1, safe.unsqueeze(1)).squeeze(1))
        lse = _cat(lse_parts, rows, acc_dtype, x.device)
        picked = _cat(picked_parts, rows, acc_dtype, x.device)
        ctx.save_for_backward(x, w, b, target, lse, row_weight)
        ctx.chunk, ctx.ignore_index, ctx.acc_dtype = chunk, ignore_index, acc_dtype
        ctx.allow_retain_graph, ctx.used = allow_retain_graph, False
        return (row_weight * (lse - picked)).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        if ctx.used and not ctx.allow_retain_graph:
            raise RuntimeError(
                "linear_cross_entropy: backward called a second time on the chunked path; construct "
                "LinearCrossEntropyOptions(allow_retain_graph=True) to allow repeated backward."
            )
        ctx.used = True
        x, w, b, target, lse, row_weight = ctx.saved_tensors
        acc = ctx.acc_dtype
        wa = w.to(acc)
        ba = None if b is None else b.to(acc)
        coef = grad.to(acc) * row_weight  # d loss_i / d z_i = coef_i (softmax(z_i) - one_hot(y_i))
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grad_x_parts = []
        grad_w = zeros(*w.shape, dtype=acc, device=w.device) if need_w else None
        grad_b = zeros(w.shape[0], dtype=acc, device=w.device) if need_b else None
        for start, stop in _chunks(x.shape[0], ctx.chunk):
            xc = x[start:stop].to(acc)
            logits = linear(xc, wa, ba)
            probs = (logits - lse[start:stop].unsqueeze(1)).exp()
            safe = target[start:stop].where(target[start:stop] != ctx.ignore_index, 0)
            one_hot = (arange(w.shape[0], device=w.device).unsqueeze(0) == safe.unsqueeze(1)).to(acc)
            dz = (probs - one_hot) * coef[start:stop].unsqueeze(1)
            if need_x:
                grad_x_parts.append(dz @ wa)
            if grad_w is not None:
                grad_w = grad_w + dz.T @ xc
            if grad_b is not None:
                grad_b = grad_b + dz.sum(0)
        grad_x = _cat(grad_x_parts, 0, acc, x.device, x.shape[1]).to(x.dtype) if need_x else None
        return (
            grad_x,
            None if grad_w is None else grad_w.to(w.dtype),
            None if grad_b is None else grad_b.to(b.dtype),
            None,
            None,
            None,
            None,
            None,
            None,
        )


def _cat(parts: list[Tensor], rows: int, dtype, device, width: int | None = None) -> Tensor:
    if parts:
        return cat(parts, 0)
    return zeros(rows, *(() if width is None else (width,)), dtype=dtype, device=device)


def _check_shapes(input: Tensor, linear_weight: Tensor, linear_bias: Tensor | None) -> None:
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), "
            f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively"
        )
    expected = tuple(linear_weight.shape[:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != expected:
        raise RuntimeError(f"expected linear_bias shape {expected}, got {tuple(linear_bias.shape)}")
    if linear_weight.ndim > 2 and input.ndim == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires batched "
            f"input, (N, {input.shape[-1]}), got unbatched input with shape {tuple(input.shape)}"
        )


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: LinearCrossEntropyOptions | None = None,
) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...), the logits shaped
    (N, C, d1, ..., dK) for a linear_weight of shape (C, d1, ..., dK, in_features).

    Args:
        input: (in_features) or (N, in_features).
        linear_weight: (C, in_features), or (C, d1, ..., dK, in_features) for a K-dimensional loss.
        target: class indices ((), (N) or (N, d1, ..., dK)) or class probabilities shaped like the logits.
        linear_bias: (C, d1, ..., dK) or None.
        weight, reduction, label_smoothing: as cross_entropy's.
        ignore_index: as cross_entropy's (None: -100); refused with probability targets.
        options: None for the reference composition, or a LinearCrossEntropyOptions to run in chunks (class
            indices, no label smoothing, (C, in_features) weights; otherwise a warning and the reference path).
    """
    _check_shapes(input, linear_weight, linear_bias)
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    logits_shape = (*input.shape[:-1], num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    index = -100 if ignore_index is None else ignore_index
    chunkable = (
        reduction in ("mean", "sum", "none")
        and label_smoothing == 0.0
        and target.dtype.name == "int64"
        and not out_features
    )
    if options is not None and not chunkable:
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
            f"label_smoothing == 0, target.dtype == int64, out_features == (). Got reduction={reduction!r}, "
            f"label_smoothing={label_smoothing}, target.dtype={target.dtype}, out_features={out_features}.",
            stacklevel=2,
        )
    if options is not None and chunkable:
        return _chunked(input, linear_weight, target, linear_bias, weight, reduction, index, options)
    flat = math.prod(out_features, start=num_classes)
    logits = linear(
        input,
        linear_weight.reshape(flat, input.shape[-1]),
        None if linear_bias is None else linear_bias.reshape(flat),
    ).reshape(logits_shape)
    return cross_entropy(
        logits, target, weight=weight, reduction=reduction, ignore_index=index, label_smoothing=label_smoothing
    )


def _chunked(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    linear_bias: Tensor | None,
    weight: Tensor | None,
    reduction: str,
    ignore_index: int,
    options: LinearCrossEntropyOptions,
) -> Tensor:
    batched = input.ndim == 2
    x = input if batched else input.unsqueeze(0)
    t = target if batched else target.reshape(1)
    if t.ndim != 1 or t.shape[0] != x.shape[0]:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({t.shape[0]}).")
    num_classes = linear_weight.shape[0]
    if weight is not None and (weight.ndim != 1 or weight.numel() != num_classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {num_classes} classes or no classes but got weight "
            f"tensor of shape: {list(weight.shape)}"
        )
    chunk = options.chunk_rows(x.shape[0], x.shape[1], num_classes)
    acc = options.accumulation_dtype(x.dtype)
    losses = _ChunkedLinearCrossEntropy.apply(
        x, linear_weight, linear_bias, t, weight, ignore_index, chunk, acc, options.allow_retain_graph
    )
    if reduction == "none":
        return losses if batched else losses.squeeze(0)
    if reduction == "sum":
        return losses.sum()
    total = _row_weights(t, weight, ignore_index, losses.dtype).sum()
    return losses.sum() / total
