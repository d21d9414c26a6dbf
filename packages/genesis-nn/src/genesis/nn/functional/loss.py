"""Losses, with torch's reductions ("none" / "mean" / "sum"), arguments and errors.

Classification losses take the class dimension at 1 ((N, C, d1, ...)) or 0 for an
unbatched (C,) input, as torch.
"""

from __future__ import annotations

import warnings

from genesis_autograd import Function, Tensor, autocast_policy, float32, is_autocast_enabled
from genesis_autograd import cross_entropy as fused_cross_entropy

from ._util import legacy_reduction, torch_type_name
from ._util import reduce as _reduce

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
]


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _class_dim(input: Tensor) -> int:
    return 0 if input.ndim == 1 else 1


def _check_class_target(input: Tensor, target: Tensor, weight: Tensor | None) -> None:
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if target.dtype.is_floating_point or target.dtype.name == "bool":
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {torch_type_name(target.dtype)}")
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError(
                f"0D or 1D target tensor expected, multi-target not supported (got target of shape "
                f"{list(target.shape)} for input of shape {list(input.shape)})"
            )
    elif target.ndim == 0 or input.shape[0] != target.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0] if target.ndim else 0})."
        )
    elif tuple(target.shape) != tuple(input.shape[:1] + input.shape[2:]):
        raise RuntimeError(f"Expected target size {list(input.shape[:1] + input.shape[2:])}, got {list(target.shape)}")
    if target.device != input.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{input.device} and {target.device}!"
        )
    n_classes = input.shape[_class_dim(input)]
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes but "
            f"got weight tensor of shape: {list(weight.shape)}"
        )


def _picked(input: Tensor, target: Tensor, ignore_index: int) -> tuple[Tensor, Tensor, Tensor]:
    """input's entry at each target class (class dim removed), the kept-position mask, and the target with
    ignored positions sent to class 0 (so every index it holds is a valid one)."""
    dim = _class_dim(input)
    valid = target != ignore_index
    safe = target.where(valid, 0)
    try:
        picked = input.gather(dim, safe.unsqueeze(dim)).squeeze(dim)
    except RuntimeError as e:  # gather's bounds check is the one check: torch calls this an IndexError
        if "out of bounds" in str(e):
            raise IndexError(f"Target is out of bounds: {e}") from None
        raise
    return picked, valid, safe


@autocast_policy("float32")
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-input[n, target[n], ...] (times weight[target]); "mean" divides by the kept positions' total weight."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_class_target(input, target, weight)
    picked, valid, safe = _picked(input, target, ignore_index)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * weight.to(dtype=input.dtype)[safe]
    if reduction == "mean":
        # Each weight divided by the total first, so that when every target is ignored the gradient is zero
        # (torch's) rather than 0 * inf; the value is still torch's 0 / 0 = nan then (total / total - 1).
        total = w.sum()
        safe_total = total + (total == 0).to(total.dtype)
        return (-picked * (w / safe_total)).sum() + (total / total - 1)
    loss = -picked * w
    return loss.sum() if reduction == "sum" else loss


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """The negative log-likelihood of log_softmax over the class dim: of class indices (one fused op,
    genesis_autograd.cross_entropy), or, for a target shaped like input, of class probabilities;
    label smoothing mixes in the uniform distribution.

    Under autocast it computes in float32, as torch: the class-index path reads low-precision logits
    as they are (no float32 copy of them) and returns float32; the logits' gradient keeps their dtype.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if tuple(input.shape) == tuple(target.shape):
        return _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing)
    _check_class_target(input, target, weight)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_softmax\" not implemented for '{torch_type_name(input.dtype)}'")
    dtype = input.dtype
    if is_autocast_enabled(input.device.type):
        dtype = float32
        if input.dtype.itemsize > 4:  # what the float32 policy did before: float64 logits are cast down
            input = input.to(float32)
    if weight is not None:
        weight = weight.to(dtype=dtype)  # the logits' dtype, float32 under autocast
    logits = input.movedim(1, -1) if input.ndim > 2 else input  # torch's (N, C, d1, ...): classes last, a view
    return fused_cross_entropy(logits, target, weight, ignore_index, label_smoothing, reduction, dtype)


@autocast_policy("float32")
@autocast_policy("float32")  # the class-index path computes in float32 itself (see cross_entropy)
def _cross_entropy_probabilities(
    input: Tensor, target: Tensor, weight: Tensor | None, reduction: str, label_smoothing: float
) -> Tensor:
    if not target.dtype.is_floating_point:
        raise RuntimeError(
            f"Expected floating point type for target with class probabilities, got {torch_type_name(target.dtype)}"
        )
    dim = _class_dim(input)
    n_classes = input.shape[dim]
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(
            f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or "
            f"no classes but got weight tensor of shape: {list(weight.shape)}"
        )
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = input.log_softmax(dim) * target
    if weight is not None:
        shape = [1] * input.ndim
        shape[dim] = n_classes
        terms = terms * weight.to(dtype=input.dtype).reshape(shape)
    if reduction == "none":
        return -terms.sum(dim)
    if reduction == "sum":
        return -terms.sum()
    return -terms.sum() / (input.numel() // n_classes)


def _check_same_size(input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def _weighted(loss: Tensor, weight: Tensor | None) -> Tensor:
    return loss if weight is None else loss * weight


@autocast_policy("float32")
def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """The squared error (input - target)^2, reduced.

    Args:
        input: any shape.
        target: the same shape as input.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the per-element loss).
        size_average, reduce: torch's deprecated spellings of ``reduction``.
        weight: a per-element weight that broadcasts with the loss, or None.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target)
    diff = input - target
    return _reduce(_weighted(diff * diff, weight), reduction)


@autocast_policy("float32")
def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """The absolute error |input - target|, reduced.

    Args:
        input: any shape.
        target: the same shape as input.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the per-element loss).
        size_average, reduce: torch's deprecated spellings of ``reduction``.
        weight: a per-element weight that broadcasts with the loss, or None.
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target)
    return _reduce(_weighted((input - target).abs(), weight), reduction)


@autocast_policy("float32")
def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; plain L1 at beta = 0."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target)
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce((d * d * (0.5 / beta)).where(d < beta, d - 0.5 * beta), reduction)


@autocast_policy("float32")
def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Tensor | None = None
) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size(input, target)
    d = (input - target).abs()
    loss = (d * d * 0.5).where(d < delta, (d - 0.5 * delta) * delta)
    return _reduce(_weighted(loss, weight), reduction)


class _BinaryCrossEntropy(Function):
    """-(t log x + (1 - t) log(1 - x)) with each log clamped at -100; backward is torch's closed form
    (x - t) / max(x (1 - x), 1e-12), finite where the clamped logs' chain rule would give 0 * inf."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        return -(target * input.log().clamp_min(-100.0) + (1 - target) * (-input).log1p().clamp_min(-100.0))

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        grad_x = grad * (x - t) / (x * (1 - x)).clamp_min(1e-12) if ctx.needs_input_grad[0] else None
        grad_t = grad * ((-x).log1p() - x.log()) if ctx.needs_input_grad[1] else None  # unclamped, as torch
        return grad_x, grad_t


def _sum_to(grad: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast gradient back to ``shape``."""
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1)
    return grad.sum(dims, keepdim=True).reshape(shape) if dims else grad


class _BinaryCrossEntropyWithLogits(Function):
    """(1 - t) x + w_t softplus(-x), w_t = 1 + (pos_weight - 1) t, with softplus(-x) = log1p(e^-|x|) +
    max(-x, 0) (no overflow). Backward uses the smooth closed forms (torch's): d/dx = (1 - t) - w_t
    sigmoid(-x), which the piecewise forward's chain rule would get wrong at x = 0."""

    @staticmethod
    def forward(ctx, input, target, pos_weight):
        ctx.save_for_backward(input, target, pos_weight)
        softplus_neg = (-input.abs()).exp().log1p() + (-input).relu()
        weight_t = 1 if pos_weight is None else (pos_weight - 1) * target + 1
        return (1 - target) * input + weight_t * softplus_neg

    @staticmethod
    def backward(ctx, grad):
        x, t, pos_weight = ctx.saved_tensors
        weight_t = 1 if pos_weight is None else (pos_weight - 1) * t + 1
        grad_x = grad_t = grad_pw = None
        if ctx.needs_input_grad[0]:
            grad_x = grad * ((1 - t) - weight_t * (-x).sigmoid())
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            softplus_neg = (-x.abs()).exp().log1p() + (-x).relu()
            if ctx.needs_input_grad[1]:
                grad_t = grad * (-x if pos_weight is None else (pos_weight - 1) * softplus_neg - x)
            if ctx.needs_input_grad[2]:
                grad_pw = _sum_to(grad * t * softplus_neg, tuple(pos_weight.shape))
        return grad_x, grad_t, grad_pw


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as torch's."""
    if is_autocast_enabled(input.device.type):
        raise RuntimeError(
            "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
            "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
            "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
            "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
            "safe to autocast."
        )
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({list(target.shape)}) that is different to the input size "
            f"({list(input.shape)}) is deprecated. Please ensure they have the same size."
        )
    if input.numel() and ((input < 0) | (input > 1)).any().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    return _reduce(_weighted(_BinaryCrossEntropy.apply(input, target), weight), reduction)


@autocast_policy("float32")
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """BCE of sigmoid(input), computed stably from the logits; pos_weight weighs the positive term."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size ({list(input.shape)})")
    loss = _BinaryCrossEntropyWithLogits.apply(input, target, pos_weight)
    return _reduce(_weighted(loss, weight), reduction)


@autocast_policy("float32")
def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Pointwise t (log t - input) (input holds log-probabilities; 0 where t = 0), or with log_target
    exp(t) (t - input). "batchmean" divides the sum by the batch size (the KL divergence proper)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
            stacklevel=2,
        )
    if log_target:
        loss = target.exp() * (target - input)
    else:
        positive = target > 0
        loss = target * target.where(positive, 1.0).log() - target * input  # xlogy(t, t) - t input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)
