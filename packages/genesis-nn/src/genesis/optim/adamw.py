"""AdamW: Adam with decoupled weight decay (the parameters shrink by lr * weight_decay each step)."""

from __future__ import annotations

from genesis_autograd import Tensor

from .adam import Adam


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (each step shrinks the parameters by
    lr * weight_decay, apart from the gradient).

    Args:
        params: the parameters to optimise (an iterable of tensors), or dicts of parameter groups with their
            own options.
        lr: the learning rate (a float, or a one-element tensor).
        betas: the decay rates of the two running averages.
        eps: added to the denominator for numerical stability.
        weight_decay: the decoupled weight decay (default 0.01).
        amsgrad: use the maximum of the past squared averages (AMSGrad).
        capturable: keep the step counter on the device, so that a step reads nothing back to the host.
        foreach, fused: accepted for torch's signature: one per-tensor implementation serves every choice
            (fused also keeps a step counter on the device, as capturable).
        differentiable: record the step itself in the autograd graph.
        maximize: maximise the objective instead of minimising it.
    """

    def __init__(
        self,
        params,
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
