"""CPU LayerNorm / RMSNorm over the last dim and their backward (torch's kernels where it has them).

Same contract as the cuda ops: mean / rstd have the input's leading shape, in float32 (float64 for
float64 inputs); a float32 weight / bias may go with a bfloat16 / float16 input.
"""

from __future__ import annotations

import torch

from .common import reg


def _acc(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


@reg("layer_norm")
def layer_norm(
    input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # 16-bit rows in float32 (torch's cpu kernel would keep its statistics in the input's dtype): the statistics
    # are float32 as on cuda, and the output is rounded once
    acc = _acc(input)
    x = input.to(acc)
    w = None if weight is None else weight.to(acc)
    b = None if bias is None else bias.to(acc)
    out, mean, rstd = torch.native_layer_norm(x, input.shape[-1:], w, b, eps)
    return out.to(input.dtype), mean.reshape(input.shape[:-1]), rstd.reshape(input.shape[:-1])


@reg("rms_norm")
def rms_norm(input: torch.Tensor, weight: torch.Tensor | None, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    x = input.to(_acc(input))
    rstd = torch.rsqrt((x * x).mean(-1) + eps)
    out = x * rstd.unsqueeze(-1)
    if weight is not None:
        out = out * weight.to(x.dtype)
    return out.to(input.dtype), rstd


@reg("layer_norm_backward")
def layer_norm_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    grad_weight: bool,
    grad_bias: bool,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    stats = input.shape[:-1] + (1,)
    mask = [True, grad_weight and weight is not None, grad_bias and bias is not None]
    acc = _acc(input)  # in float32 for 16-bit rows, as the forward: each gradient rounded once
    w = None if weight is None else weight.to(acc)
    b = None if bias is None else bias.to(acc)
    dx, dw, db = torch.ops.aten.native_layer_norm_backward(
        grad_output.to(acc), input.to(acc), input.shape[-1:], mean.reshape(stats), rstd.reshape(stats), w, b, mask
    )
    dw = dw.to(weight.dtype) if dw is not None and weight is not None else None
    db = db.to(bias.dtype) if db is not None and bias is not None else None
    return dx.to(input.dtype), dw, db


@reg("rms_norm_backward")
def rms_norm_backward(
    grad_output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor | None, rstd: torch.Tensor, grad_weight: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    acc = _acc(input)
    x, g, r = input.to(acc), grad_output.to(acc), rstd.unsqueeze(-1)
    xhat = x * r
    wg = g * weight.to(acc) if weight is not None else g
    dx = (wg - xhat * (xhat * wg).mean(-1, keepdim=True)) * r
    dw = None
    if grad_weight and weight is not None:
        dw = (g * xhat).reshape(-1, x.shape[-1]).sum(0).to(weight.dtype)
    return dx.to(input.dtype), dw
