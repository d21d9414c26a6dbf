"""CPU matmul: torch.matmul, with the shape check done first so both devices give one message."""

from __future__ import annotations

import torch

from ...dtypes import DType
from .common import reg, resolver


@reg("matmul")
def matmul(input: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    # torch's batched message names neither operand; check first so both devices say the same.
    if input.ndim and other.ndim and input.shape[-1] != other.shape[-2 if other.ndim > 1 else 0]:
        sa, sb = "x".join(map(str, input.shape)), "x".join(map(str, other.shape))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    return torch.matmul(input, other)


@reg("linear_backward")
def linear_backward(
    grad: torch.Tensor,
    input: torch.Tensor | None,
    weight: torch.Tensor | None,
    need_input: bool,
    need_weight: bool,
    bias_dtype: DType | None,
    input_dtype: DType,
    weight_dtype: DType,
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    rows = grad.reshape(-1, grad.shape[-1])  # (NDArray.linear_backward checked what each part needs is given)
    dx = dw = db = None
    if need_input and weight is not None:
        dx = _product(rows, weight, input_dtype).reshape(*grad.shape[:-1], weight.shape[1])
    if need_weight and input is not None:
        dw = _product(rows.T, input.reshape(-1, input.shape[-1]), weight_dtype)
    if bias_dtype is not None:
        db = rows.sum(0, dtype=getattr(torch, bias_dtype.name))
    return dx, dw, db


def _product(a: torch.Tensor, b: torch.Tensor, dtype: DType) -> torch.Tensor:
    """``a @ b`` in ``dtype``: a 16-bit product wanted in float32 is computed in float32 (as the cuda kernel
    accumulates it), not rounded to 16 bits first."""
    wanted = getattr(torch, dtype.name)
    if a.dtype == wanted:
        return a @ b
    return a.to(wanted) @ b.to(wanted)


@resolver("matmul")
def resolve_matmul(op: str, dtype: DType, other: DType):
    """``(matmul, result dtype)``: two operands of one floating dtype give that dtype; others read it back."""
    return matmul, dtype if dtype is other and dtype.is_floating_point else None


_ACTIVATIONS = {
    "none": lambda x: x,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
}


@reg("linear")
def linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, activation: str) -> torch.Tensor:
    if bias is not None and bias.dtype != input.dtype:  # a float32 bias of a 16-bit product: as the cuda
        # kernel, the product and the bias meet in float32 and the result is rounded once
        wide = torch.nn.functional.linear(input.float(), weight.float(), bias)
        return _ACTIVATIONS[activation](wide).to(input.dtype)
    return _ACTIVATIONS[activation](torch.nn.functional.linear(input, weight, bias))
