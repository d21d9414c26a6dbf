"""CPU softmax / log_softmax and their backward (given the forward's output)."""

from __future__ import annotations

import torch

from .common import reg


@reg("softmax")
def softmax(input: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    return torch.log_softmax(input, dim) if log else torch.softmax(input, dim)


@reg("softmax_backward")
def softmax_backward(output: torch.Tensor, grad_output: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    if log:
        return grad_output - torch.exp(output) * grad_output.sum(dim, keepdim=True)
    return output * (grad_output - (grad_output * output).sum(dim, keepdim=True))
