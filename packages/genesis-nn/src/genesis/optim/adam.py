"""Adam and AdamW (decoupled weight decay), with torch's bias correction."""

from __future__ import annotations

from genesis_autograd import no_grad, zeros_like

from .optimizer import Optimizer


class Adam(Optimizer):
    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"Invalid beta parameters: {betas}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))

    @no_grad()
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state.setdefault(p, {})
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = zeros_like(p)
                state["step"] += 1
                if decay:
                    if self.decoupled:
                        p.mul_(1 - lr * decay)
                    else:
                        g = g + p * decay
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(b1).add_(g * (1 - b1))
                v.mul_(b2).add_(g * g * (1 - b2))
                t = state["step"]
                if group["amsgrad"]:
                    state["max_exp_avg_sq"].copy_(state["max_exp_avg_sq"].maximum(v))
                    v = state["max_exp_avg_sq"]
                denom = (v / (1 - b2**t)).sqrt() + eps
                p.sub_(m / denom * (lr / (1 - b1**t)))
        return loss


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)


