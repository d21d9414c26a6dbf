"""Stateless neural-network functions, composed from autograd's primitives."""

from __future__ import annotations

from genesis_autograd import Tensor, arange, rand

from ..amp import cast_for_matmul


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    if x.shape[-1] != weight.shape[-1]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, x.shape))} and "
            f"{'x'.join(map(str, weight.mT.shape))})"
        )
    x, weight, bias = cast_for_matmul(x, weight, bias)
    out = x.matmul(weight.mT)
    return out + bias if bias is not None else out


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.relu_() if inplace else x.relu()


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def silu(x: Tensor) -> Tensor:
    return x * x.sigmoid()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if approximate == "tanh":
        return 0.5 * x * (1 + ((x + 0.044715 * x * x * x) * 0.7978845608028654).tanh())
    return 0.5 * x * (1 + _erf(x * 0.7071067811865476))


def _erf(x: Tensor) -> Tensor:
    """erf to 1.5e-7 absolute error (Abramowitz & Stegun 7.1.26), differentiable."""
    sign = x.sign()
    a = x.abs()
    t = 1 / (1 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1 - poly * (-(a * a)).exp())


def softmax(x: Tensor, dim: int) -> Tensor:
    return x.softmax(dim)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    return x.log_softmax(dim)


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0
    keep = (rand(*x.shape, dtype=x.dtype, device=x.device) >= p).to(x.dtype)
    return x * keep * (1.0 / (1.0 - p))


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def nll_loss(log_probs: Tensor, target: Tensor, reduction: str = "mean", ignore_index: int = -100) -> Tensor:
    """Negative log-likelihood of class indices ``target`` (N) under ``log_probs`` (N, C)."""
    if log_probs.ndim != 2:
        raise ValueError(f"Expected 2 dimensions for log_probs (got {log_probs.ndim})")
    if target.ndim != 1 or target.shape[0] != log_probs.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({log_probs.shape[0]}) to match target batch_size "
            f"({target.shape[0] if target.ndim else 0})."
        )
    if target.dtype.is_floating_point:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name}")
    if target.device != log_probs.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{log_probs.device} and {target.device}!"
        )
    n_classes = log_probs.shape[1]
    valid = target != ignore_index
    if ((target < 0).logical_and(valid).any().item() or (target >= n_classes).any().item()):
        raise IndexError(f"Target out of bounds: class indices must lie in [0, {n_classes - 1}]")
    classes = arange(n_classes, device=log_probs.device).reshape(1, n_classes)
    one_hot = (target.reshape(-1, 1) == classes).to(log_probs.dtype)
    picked = -(log_probs * one_hot).sum(1)
    if reduction == "mean":
        weight = valid.to(log_probs.dtype)
        return (picked * weight).sum() / weight.sum()
    return _reduce(picked * valid.to(log_probs.dtype), reduction)


def cross_entropy(logits: Tensor, target: Tensor, reduction: str = "mean", ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> Tensor:
    log_probs = logits.log_softmax(1)
    loss = nll_loss(log_probs, target, reduction=reduction, ignore_index=ignore_index)
    if label_smoothing > 0.0:
        # The uniform part of the target, over the rows that are not ignored (as torch).
        valid = (target != ignore_index).to(log_probs.dtype)
        smooth = -log_probs.mean(1) * valid
        if reduction == "mean":
            smooth = smooth.sum() / valid.sum()
        else:
            smooth = _reduce(smooth, reduction)
        loss = (1 - label_smoothing) * loss + label_smoothing * smooth
    return loss


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return _reduce((input - target).abs(), reduction)
