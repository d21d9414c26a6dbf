"""linear_cross_entropy: cross entropy of linear(input, weight, bias), torch 2.13's function.

With ``options=None`` it is the reference composition (linear, then cross_entropy). With a
LinearCrossEntropyOptions it runs chunked, as genesis_autograd.linear_cross_entropy: rows are processed
``chunk`` at a time, so the full (rows, classes) logits never exist, and for a summed or averaged loss each
chunk's three gradients are found while its logits are at hand (one fused op each way, nothing recomputed).
"""

from __future__ import annotations

import math
import warnings

from genesis_autograd import Tensor, float64
from genesis_autograd import linear_cross_entropy as _fused

from .linear import linear
from .linear_cross_entropy_options import LinearCrossEntropyOptions
from .loss import cross_entropy

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]

# "auto" chunks: genesis' fused op finds the weight's gradient chunk by chunk, adding each chunk's product into a
# float32 sum that every chunk reads and writes again (0.16 ms a chunk for GPT-2's head on an H200), so it takes
# fewer, larger chunks than torch's aspect-ratio rule (64 rows there): 2,048 rows, a quarter of the logits of an
# 8,192-token batch. An explicit batch_chunk_size or chunking_method is followed as torch's.
_AUTO_ROWS = 2048


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
    chunkable = reduction in ("mean", "sum", "none") and target.dtype.name == "int64" and not out_features
    if options is not None and not chunkable:
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
            f"target.dtype == int64, out_features == (). Got reduction={reduction!r}, "
            f"target.dtype={target.dtype}, out_features={out_features}.",
            stacklevel=2,
        )
    if options is not None and chunkable:
        return _chunked(input, linear_weight, target, linear_bias, weight, reduction, index, label_smoothing, options)
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
    label_smoothing: float,
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
    if options.batch_chunk_size is None and options.chunking_method == "auto":
        chunk = min(x.shape[0], _AUTO_ROWS)
    else:
        chunk = options.chunk_rows(x.shape[0], x.shape[1], num_classes)
    dtype = x.dtype
    if options.accumulation_dtype(dtype) is float64 and dtype is not float64:  # (16-bit inputs sum in float32)
        x, linear_weight = x.to(float64), linear_weight.to(float64)
        linear_bias = None if linear_bias is None else linear_bias.to(float64)
    loss = _fused(
        x, linear_weight, t, linear_bias, weight, ignore_index, label_smoothing, reduction, chunk,
        allow_retain_graph=options.allow_retain_graph,
    )  # fmt: skip
    loss = loss if loss.dtype is dtype or x.dtype is dtype else loss.to(dtype)
    return loss if batched or reduction != "none" else loss.squeeze(0)
