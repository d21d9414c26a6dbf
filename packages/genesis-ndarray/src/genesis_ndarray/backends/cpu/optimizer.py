"""CPU multi-tensor optimizer steps: torch ops per tensor, the same arithmetic as the CUDA kernels.

The order of operations is torch's fused optimizers' (``torch._fused_adam_`` / ``_fused_sgd_``):
unscale by ``grad_scale`` (stored back into the gradient), negate for maximize, weight decay,
moments, update; a non-zero ``found_inf`` skips everything, step counters included.
"""

from __future__ import annotations

import math

import torch

from .common import reg


def _skipped(found_inf: torch.Tensor | None) -> bool:
    return found_inf is not None and bool(found_inf.item() != 0)  # a cpu tensor: no device to wait for


def _unscaled(grad: torch.Tensor, grad_scale: torch.Tensor | None, acc: torch.dtype) -> torch.Tensor:
    g = grad.to(acc)
    if grad_scale is not None:
        g = g * (1 / grad_scale.to(acc))
        grad.copy_(g)
    return g


def _acc(t: torch.Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


@reg("multi_tensor_adam_")
def multi_tensor_adam_(
    params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, step, masters,
    lr, beta1, beta2, eps, weight_decay, decoupled, maximize, grad_scale, found_inf,
) -> None:  # fmt: skip
    if _skipped(found_inf):
        return
    if steps is not None:
        torch._foreach_add_(steps, 1)
    for i, param in enumerate(params):
        acc = torch.float64 if torch.float64 in (param.dtype, exp_avgs[i].dtype) else torch.float32
        target = masters[i] if masters is not None else param
        p = target.to(acc)
        g = _unscaled(grads[i], grad_scale, acc)
        if maximize:
            g = -g
        if weight_decay != 0:
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        count = float(steps[i].item()) if steps is not None else float(step)
        m = exp_avgs[i].to(acc) * beta1 + (1 - beta1) * g
        v = exp_avg_sqs[i].to(acc) * beta2 + (1 - beta2) * g * g
        exp_avgs[i].copy_(m)
        exp_avg_sqs[i].copy_(v)
        if max_exp_avg_sqs is not None:
            v = torch.maximum(max_exp_avg_sqs[i].to(acc), v)
            max_exp_avg_sqs[i].copy_(v)
        bias_correction1 = 1 - beta1**count
        bias_correction2_sqrt = math.sqrt(1 - beta2**count)
        p = p - (lr / bias_correction1) * m / (v.sqrt() / bias_correction2_sqrt + eps)
        target.copy_(p)
        if masters is not None:
            param.copy_(p)


@reg("multi_tensor_sgd_")
def multi_tensor_sgd_(
    params, grads, momentum_buffers, first_step, masters,
    lr, momentum, dampening, weight_decay, nesterov, maximize, grad_scale, found_inf,
) -> None:  # fmt: skip
    if _skipped(found_inf):
        return
    for i, param in enumerate(params):
        acc = _acc(param)
        target = masters[i] if masters is not None else param
        p = target.to(acc)
        g = _unscaled(grads[i], grad_scale, acc)
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        if momentum != 0:
            buf = momentum_buffers[i]
            if first_step is not None and first_step[i]:
                b = g
            else:
                b = buf.to(acc) * momentum + (1 - dampening) * g
            buf.copy_(b)
            g = g + momentum * b if nesterov else b
        p = p - lr * g
        target.copy_(p)
        if masters is not None:
            param.copy_(p)


@reg("multi_tensor_norm")
def multi_tensor_norm(tensors: list[torch.Tensor], norm_type: float, dtype: str) -> torch.Tensor:
    acc = torch.float64 if any(t.dtype == torch.float64 for t in tensors) else torch.float32
    norms = torch.stack([torch.linalg.vector_norm(t, norm_type, dtype=acc) for t in tensors])
    return torch.linalg.vector_norm(norms, norm_type).to(getattr(torch, dtype))


@reg("multi_tensor_clip_")
def multi_tensor_clip_(tensors: list[torch.Tensor], total_norm: torch.Tensor, max_norm: float) -> None:
    coef = (torch.full_like(total_norm, max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    torch._foreach_mul_(tensors, coef)


@reg("advance_counters_")
def advance_counters_(counters: list[torch.Tensor]) -> list[float]:
    torch._foreach_add_(counters, 1)
    return torch.stack(counters).tolist()
