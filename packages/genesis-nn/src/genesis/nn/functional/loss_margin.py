"""Margin and embedding losses, torch's: hinge / soft / ranking margins on scores, multi-class and
multi-label margins, and the embedding losses (cosine, triplet). Each is composed of differentiable
Tensor ops, so gradients and both devices come from the layer below."""

from __future__ import annotations

from collections.abc import Callable

from genesis_autograd import Tensor, arange, autocast_policy

from ._util import legacy_reduction
from ._util import reduce as _reduce
from .activation import logsigmoid, softplus

__all__ = [
    "cosine_embedding_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]

_EPSILON = 1e-12  # torch's guard on the squared norms of cosine_embedding_loss


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


@autocast_policy("float32")
def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1 (0 elsewhere).

    Shape: input1, input2 (N, D) with target (N), or (D) with target ().
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.ndim == 1 and (input1.ndim != 2 or input2.ndim != 2):
        raise RuntimeError(
            f"1D target tensor expects 2D input tensors, but found inputs with sizes {list(input1.shape)} and "
            f"{list(input2.shape)}."
        )
    if target.ndim == 0 and (input1.ndim != 1 or input2.ndim != 1):
        raise RuntimeError(
            f"0D target tensor expects 1D input tensors, but found inputs with sizes {list(input1.shape)} and "
            f"{list(input2.shape)}."
        )
    dim = target.ndim
    dot = (input1 * input2).sum(dim)
    denominator = (((input1 * input1).sum(dim) + _EPSILON) * ((input2 * input2).sum(dim) + _EPSILON)).sqrt()
    cos = dot / denominator
    loss = (1 - cos).where(target == 1, 0.0) + (cos - margin).clamp_min(0.0).where(target == -1, 0.0)
    return _reduce(loss, reduction)


@autocast_policy("float32")
def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """x where target is 1, max(0, margin - x) where it is -1 (input and target broadcast)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = (margin - input).clamp_min(0.0).where(target != 1, 0.0) + input.where(target != -1, 0.0)
    return _reduce(loss, reduction)


@autocast_policy("float32")
def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -target (x1 - x2) + margin): target 1 asks x1 to rank above x2, -1 below."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0.0), reduction)


@autocast_policy("float32")
def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """log(1 + exp(-target x)), the two-class logistic loss for targets in {1, -1}."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _reduce(softplus(-target * input), reduction)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Per-class binary cross entropy of sigmoid(input) against 0/1 targets, averaged over the classes.

    Shape: input (N, C) or (C), target the same; output (N) or () with reduction="none", else a scalar.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not valid")
    return _reduce(loss, reduction)


def _check_margin_input(input: Tensor) -> None:
    if input.ndim > 2 or (input.numel() == 0 and input.ndim != 2):
        raise RuntimeError(
            f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {list(input.shape)}"
        )


@autocast_policy("float32")
def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: sum over i != y of max(0, margin - x[y] + x[i])^p / C, times weight[y].

    Shape: input (N, C) or (C); target (N) or () class indices; output (N) or () with reduction="none".
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    _check_margin_input(input)
    batched = input.ndim == 2
    n_classes = input.shape[-1]
    x = input if batched else input.reshape(1, n_classes)
    n = x.shape[0]
    if target.numel() != n or (batched and target.ndim != 1) or (not batched and target.ndim > 1):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples "
            f"(batch size). Expected target size [{n}], but got {list(target.shape)}. "
            f"Input has shape {list(input.shape)}."
        )
    if weight is not None and (weight.ndim > 1 or weight.numel() != n_classes):
        raise RuntimeError(f"inconsistent weight size, expected {n_classes} but got {list(weight.shape)}")
    t = target.reshape(n, 1)
    if n and ((t < 0) | (t >= n_classes)).any().item():
        raise RuntimeError("target out of range")
    z = (margin - x.gather(1, t) + x).clamp_min(0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.to(dtype=x.dtype)[t]
    others = arange(n_classes, device=x.device).reshape(1, n_classes) != t
    loss = z.where(others, 0.0).sum(1) / n_classes
    return _reduce(loss if batched else loss.reshape(()), reduction)


@autocast_policy("float32")
def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-label hinge loss: for each target class j (the leading entries of a target row, up to its
    first -1) and each non-target class i, max(0, 1 - (x[j] - x[i])), summed and divided by C.

    Shape: input (N, C) or (C); target int64 of the same shape; output (N) or () with reduction="none".
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_margin_input(input)
    batched = input.ndim == 2
    n_classes = input.shape[-1]
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    x = input if batched else input.reshape(1, n_classes)
    t = target.reshape(x.shape)
    if t.numel() and ((t < -1) | (t >= n_classes)).any().item():
        raise RuntimeError("argument #2 'target' is out of range")
    # A row's targets are its entries before the first -1: a running product of "not -1" keeps them.
    listed = (t >= 0).to(x.dtype).cumprod(1) > 0
    safe = t.where(listed, 0)
    classes = arange(n_classes, device=x.device).reshape(1, 1, n_classes)
    is_target = ((safe.unsqueeze(2) == classes) & listed.unsqueeze(2)).any(1)  # (N, C)
    z = (1 - x.gather(1, safe).unsqueeze(2) + x.unsqueeze(1)).clamp_min(0.0)  # (N, J, C): target j, class i
    pairs = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = z.where(pairs, 0.0).sum((1, 2)) / n_classes
    return _reduce(loss if batched else loss.reshape(()), reduction)


def _pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6) -> Tensor:
    """torch.pairwise_distance: the p-norm of x1 - x2 + eps over the last dimension."""
    return (x1 - x2 + eps).vector_norm(p, -1)


def _check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions, "
            f"but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative {negative.ndim}D inputs"
        )


@autocast_policy("float32")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) with d the pairwise p-norm distance; ``swap`` takes the
    smaller of d(a, n) and d(p, n).

    Shape: anchor, positive, negative (N, D) or (D); output (N) or () with reduction="none".
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = _pairwise_distance(anchor, positive, p, eps)
    dist_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = dist_neg.minimum(_pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0.0), reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) for any distance function d (pairwise_distance by default)."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    distance = distance_function if distance_function is not None else _pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = dist_neg.minimum(distance(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0.0), reduction)
