"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (torch's rule)."""

from __future__ import annotations

from genesis_autograd import no_grad

from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    @no_grad()
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            decay, nesterov = group["weight_decay"], group["nesterov"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad if not group["maximize"] else -p.grad
                if decay:
                    g = g + p * decay
                if momentum:
                    buf = self.state.setdefault(p, {}).get("momentum_buffer")
                    if buf is None:
                        buf = g.clone()
                        self.state[p]["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(g * (1 - dampening) if dampening else g)
                    g = g + buf * momentum if nesterov else buf
                p.sub_(g * lr)
        return loss
