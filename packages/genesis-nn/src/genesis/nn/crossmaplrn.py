"""CrossMapLRN2d: torch's legacy cross-channel local response normalisation of (N, C, H, W) input.

torch keeps it as a hand-written autograd Function (torch/nn/modules/_functions.py) with two quirks that
genesis reproduces on purpose, since the point of the class is to give torch's numbers:

- the forward's running window never drops channel 0: once the window has slid past it, x[:, 0]**2 stays in
  every later channel's sum (the subtraction starts at channel 1);
- the backward is not the forward's true gradient: it sums ``grad * output / scale`` over an asymmetric
  window of ``size`` channels (``size - (size - 1) // 2`` channels behind, the rest ahead) and ignores the
  channel-0 term.

Both windows are 0/1 band matrices over the channels, so forward and backward are each one product over the
channel axis instead of torch's per-channel loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from genesis_autograd import Function, Tensor, tensor

from .module import Module

__all__ = ["CrossMapLRN2d"]


def _forward_window(channels: int, size: int) -> np.ndarray:
    """W[c, j] = 1 when x[:, j]**2 is in channel c's sum in torch's forward (channel 0 always is)."""
    pre_pad = int((size - 1) / 2 + 1)
    window = np.zeros((channels, channels))
    for c in range(channels):
        window[c, max(c - pre_pad + 1, 0) : min(c + pre_pad, channels)] = 1.0
    window[:, 0] = 1.0
    return window


def _backward_window(channels: int, size: int) -> np.ndarray:
    """B[c, j] = 1 when channel j's ratio enters channel c's accumulated ratio in torch's backward."""
    behind = int(size - (size - 1) / 2)
    window = np.zeros((channels, channels))
    for c in range(channels):
        window[c, max(c - behind, 0) : max(min(c + size - behind, channels), 0)] = 1.0
    return window


def _mix_channels(window: np.ndarray, x: Tensor) -> Tensor:
    """out[:, c] = sum_j window[c, j] * x[:, j] for (N, C, H, W) ``x``."""
    w = tensor(window, dtype=x.dtype, device=x.device)
    return w.matmul(x.movedim(1, -1).unsqueeze(-1)).squeeze(-1).movedim(-1, 1)


class _CrossMapLRN2dFunction(Function):
    """torch's legacy forward and its hand-written backward (see the module docstring)."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        x = input.detach()
        scale = _mix_channels(_forward_window(x.shape[1], size), x * x) * (alpha / size) + k
        output = scale.pow(-beta) * x
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.save_for_backward(x, output, scale)
        return output

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple[Tensor | None, None, None, None, None]:
        x, output, scale = ctx.saved_tensors
        g = grad_output.detach()
        accumulated = _mix_channels(_backward_window(x.shape[1], ctx.size), g * output / scale)
        grad = scale.pow(-ctx.beta) * g - (2 * ctx.alpha * ctx.beta / ctx.size) * x * accumulated
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """Cross-channel local response normalisation of (N, C, H, W) input, torch's legacy form:
    x / (k + alpha / size * sum of x**2 over the channel window) ** beta.

    Its values and gradients are torch's CrossMapLRN2d's, quirks included: channel 0's square stays in
    every window once passed, and the gradient is torch's hand-written one, which is not the forward's
    exact derivative (see genesis/nn/crossmaplrn.py). LocalResponseNorm is the exact, differentiable form.

    Args:
        size: the number of channels in the window.
        alpha: the multiplier of the sum of squares (divided by ``size``).
        beta: the exponent.
        k: the additive constant.

    Shape: (N, C, H, W) -> the same shape.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        """The normalised ``input``."""
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
