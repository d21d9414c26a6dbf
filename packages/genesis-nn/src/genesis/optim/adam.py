"""Adam: bias-corrected moment estimates, amsgrad, L2 or decoupled weight decay, maximize (torch's rule)."""

from __future__ import annotations

from genesis_autograd import Tensor, advance_counters_, full_like, multi_tensor_adam_, zeros_like

from .optimizer import Optimizer, _multi_tensor, _new_step, _to_float, _use_grad_for_differentiable


class Adam(Optimizer):
    """Adam: steps from bias-corrected running averages of the gradient and of its square.

    Args:
        params: the parameters to optimise (an iterable of tensors), or dicts of parameter groups with their
            own options.
        lr: the learning rate (a float, or a one-element tensor).
        betas: the decay rates of the two running averages.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient (or, with decoupled_weight_decay, AdamW's decay).
        amsgrad: use the maximum of the past squared averages (AMSGrad).
        capturable: keep the step counter on the device, so that a step reads nothing back to the host.
        decoupled_weight_decay: shrink the parameters directly by lr * weight_decay (AdamW).
        foreach, fused: the multi-tensor path (one fused launch for the whole group on CUDA), taken when
            either is True or, by default, when every parameter is on a CUDA device; False: per tensor.
            fused (like capturable) keeps the step counters on the device: no host read per step.
        differentiable: record the step itself in the autograd graph.
        maximize: maximise the objective instead of minimising it.
    """

    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if fused and differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _init_group(self, group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps) -> None:
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if not state:  # lazy state, created on the first step a parameter has a gradient
                state["step"] = _new_step(p, group["capturable"] or group["fused"])
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            steps.append(state["step"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        self._cuda_graph_capture_health_check(fused_counts=True)
        loss = self._evaluate(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], [], [], []
            self._init_group(group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps)
            beta1, beta2 = group["betas"]
            if _multi_tensor(group, params, grads):
                _multi_tensor_adam(group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps)
                continue
            adam(
                params,
                grads,
                exp_avgs,
                exp_avg_sqs,
                max_exp_avg_sqs,
                steps,
                amsgrad=group["amsgrad"],
                beta1=beta1,
                beta2=beta2,
                lr=group["lr"],
                weight_decay=group["weight_decay"],
                eps=group["eps"],
                maximize=group["maximize"],
                capturable=group["capturable"],
                foreach=group["foreach"],
                fused=group["fused"],
                decoupled_weight_decay=group["decoupled_weight_decay"],
            )
        return loss


def _multi_tensor_adam(group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps) -> None:
    """A group's step as one multi-tensor update (torch's fused rule). Step counters on the parameters'
    device are advanced by the kernel; cpu counters (foreach without capturable) are advanced here and
    the parameters launched by count (one launch when, as usual, they all agree)."""
    beta1, beta2 = group["betas"]
    options = dict(
        lr=_to_float(group["lr"]),
        beta1=beta1,
        beta2=beta2,
        eps=group["eps"],
        weight_decay=group["weight_decay"],
        decoupled=group["decoupled_weight_decay"],
        maximize=group["maximize"],
    )
    device = params[0].data.device
    on_device = True
    for s in steps:  # (a loop over NDArray attributes: every step, over every parameter)
        d = s.data.device
        if d is not device and d != device:
            on_device = False
            break
    if on_device:
        states = max_exp_avg_sqs if group["amsgrad"] else None
        multi_tensor_adam_(params, grads, exp_avgs, exp_avg_sqs, states, steps=steps, **options)
        return
    by_count: dict[float, list[int]] = {}
    for i, count in enumerate(advance_counters_(steps)):  # cpu counters: one call, no device synchronisation
        by_count.setdefault(count, []).append(i)
    for count, idx in by_count.items():
        multi_tensor_adam_(
            [params[i] for i in idx],
            [grads[i] for i in idx],
            [exp_avgs[i] for i in idx],
            [exp_avg_sqs[i] for i in idx],
            [max_exp_avg_sqs[i] for i in idx] if group["amsgrad"] else None,
            step=count,
            **options,
        )


def adam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    max_exp_avg_sqs: list[Tensor],
    state_steps: list[Tensor],
    *,
    amsgrad: bool,
    beta1: float,
    beta2: float,
    lr: float | Tensor,
    weight_decay: float,
    eps: float,
    maximize: bool,
    capturable: bool = False,
    foreach: bool | None = None,
    fused: bool | None = None,
    decoupled_weight_decay: bool = False,
) -> None:
    """One Adam / AdamW step over a group's lists, in place.

    The multi-tensor seam: a fused kernel over the whole lists may replace this loop. Per tensor the
    operations are torch's single-tensor ones in torch's order, so float64 results agree with torch.
    With ``capturable`` (or ``fused``) the step counter lives on the device and the bias corrections
    are computed there as tensors (no host read of ``step``).
    """
    lr = _to_float(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        if amsgrad:
            max_exp_avg_sqs[i].copy_(max_exp_avg_sqs[i].maximum(exp_avg_sq))
            second = max_exp_avg_sqs[i]
        else:
            second = exp_avg_sq
        if capturable or fused:  # the step counter is on the device: keep the arithmetic there
            # float64 bias corrections (float32 ones would cost ~1e-7 relative). Scalars enter as float64
            # tensors: a Python float on the left of a Tensor op is rounded to float32 by genesis_autograd.
            step = step_t.double()
            bias_correction1: Tensor | float = 1 - full_like(step, beta1) ** step  # a float in the else branch
            bias_correction2 = 1 - full_like(step, beta2) ** step
            step_size_neg = (full_like(step, lr) / bias_correction1).neg()
            denom = second.sqrt() / (bias_correction2.sqrt() * step_size_neg)
            denom.add_(full_like(step, eps) / step_size_neg)
            param.addcdiv_(exp_avg, denom)
        else:
            count = step_t.item()  # a cpu scalar: no device synchronisation
            bias_correction1 = 1 - beta1**count
            bias_correction2_sqrt = (1 - beta2**count) ** 0.5
            denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-(lr / bias_correction1))
