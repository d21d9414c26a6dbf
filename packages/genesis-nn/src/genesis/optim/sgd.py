"""Stochastic gradient descent with momentum, dampening, Nesterov, weight decay and maximize (torch's rule)."""

from __future__ import annotations

from genesis_autograd import Tensor, empty_like, multi_tensor_sgd_

from .optimizer import Optimizer, _multi_tensor, _to_float, _use_grad_for_differentiable


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (torch's formulation: the velocity
    accumulates gradients, the learning rate scales the step), Nesterov momentum and weight decay.

    Args:
        params: the parameters to optimise (an iterable of tensors), or dicts of parameter groups with their
            own options.
        lr: the learning rate (a float, or a one-element tensor).
        momentum: the momentum factor.
        dampening: the dampening of the momentum (1 - dampening weighs the new gradient).
        weight_decay: L2 penalty, added to the gradient.
        nesterov: Nesterov momentum (needs momentum > 0 and dampening 0).
        foreach, fused: the multi-tensor path (one fused launch for the whole group on CUDA), taken when
            either is True or, by default, when every parameter is on a CUDA device; False: per tensor.
        differentiable: record the step itself in the autograd graph.
        maximize: maximise the objective instead of minimising it.
    """

    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if fused and differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad for p in params]
            with_momentum = group["momentum"] != 0
            buffers = [self.state[p].get("momentum_buffer") for p in params] if with_momentum else []
            if _multi_tensor(group, params, grads):
                first = [b is None for b in buffers]
                if with_momentum:  # a first step's buffer starts as the gradient, written by the kernel
                    buffers = [empty_like(p) if b is None else b for p, b in zip(params, buffers)]
                multi_tensor_sgd_(
                    params,
                    grads,
                    buffers if with_momentum else None,
                    first_step=first if with_momentum else None,
                    lr=_to_float(group["lr"]),
                    momentum=group["momentum"],
                    dampening=group["dampening"],
                    weight_decay=group["weight_decay"],
                    nesterov=group["nesterov"],
                    maximize=group["maximize"],
                )
            else:
                sgd(
                    params,
                    grads,
                    buffers,
                    weight_decay=group["weight_decay"],
                    momentum=group["momentum"],
                    lr=group["lr"],
                    dampening=group["dampening"],
                    nesterov=group["nesterov"],
                    maximize=group["maximize"],
                    foreach=group["foreach"],
                    fused=group["fused"],
                )
            if with_momentum:  # sgd created the buffers of a first step
                for p, buf in zip(params, buffers):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def sgd(
    params: list[Tensor],
    grads: list[Tensor],
    momentum_buffer_list: list[Tensor | None],
    *,
    weight_decay: float,
    momentum: float,
    lr: float | Tensor,
    dampening: float,
    nesterov: bool,
    maximize: bool,
    foreach: bool | None = None,
    fused: bool | None = None,
) -> None:
    """One SGD step over a group's lists, in place; a None buffer is created (and stored in the list).

    The multi-tensor seam: a fused kernel over the whole lists may replace this loop; the per-tensor
    order of operations is torch's, so float64 results agree with torch.optim.SGD.
    """
    lr = _to_float(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = grad.detach().clone()
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)
