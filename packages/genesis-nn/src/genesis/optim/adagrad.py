"""Adagrad: per-coordinate step sizes from the running sum of squared gradients, with lr decay."""

from __future__ import annotations

from genesis_autograd import Tensor, full_like
from genesis_autograd.cuda import is_current_stream_capturing

from .optimizer import Optimizer, _new_step, _to_float, _use_grad_for_differentiable


class Adagrad(Optimizer):
    """Adagrad: per-coordinate step sizes lr / sqrt(sum of squared gradients).

    Args:
        params: the parameters to optimise (an iterable of tensors), or dicts of parameter groups with their
            own options.
        lr: the learning rate (a float, or a one-element tensor).
        lr_decay: the learning rate decays as lr / (1 + (step - 1) * lr_decay).
        weight_decay: L2 penalty, added to the gradient.
        initial_accumulator_value: the starting value of the sum of squares.
        eps: added to the denominator for numerical stability.
        foreach, fused: accepted for torch's signature: one per-tensor implementation serves every choice
            (fused also keeps a step counter on the device, as capturable).
        differentiable: record the step itself in the autograd graph.
        maximize: maximise the objective instead of minimising it.
    """

    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if fused and differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)
        # torch creates Adagrad's state up front (the accumulator starts at initial_accumulator_value)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p: Tensor, group: dict) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = _new_step(p, bool(group["fused"]))
            state["sum"] = full_like(p, group["initial_accumulator_value"])
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        if is_current_stream_capturing():  # its learning rate decay reads the step count on the host
            raise RuntimeError(
                "Attempting CUDA graph capture of step() for an instance of Adagrad, whose step reads its "
                "step count back to the host: it cannot be captured (use Adam, AdamW, RMSprop with "
                "capturable=True, or SGD)."
            )
        loss = self._evaluate(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            states = [self._init_state(p, group) for p in params]  # params added later by add_param_group
            adagrad(
                params,
                [p.grad for p in params],
                [s["sum"] for s in states],
                [s["step"] for s in states],
                lr=group["lr"],
                weight_decay=group["weight_decay"],
                lr_decay=group["lr_decay"],
                eps=group["eps"],
                maximize=group["maximize"],
                foreach=group["foreach"],
                fused=group["fused"],
            )
        return loss


def adagrad(
    params: list[Tensor],
    grads: list[Tensor],
    state_sums: list[Tensor],
    state_steps: list[Tensor],
    *,
    lr: float | Tensor,
    weight_decay: float,
    lr_decay: float,
    eps: float,
    maximize: bool,
    foreach: bool | None = None,
    fused: bool | None = None,
) -> None:
    """One Adagrad step over a group's lists, in place (the multi-tensor seam; torch's per-tensor order)."""
    lr = _to_float(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        step = step_t.item()
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)
