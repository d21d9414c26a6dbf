"""bilinear: y = x1^T A x2 + b for every output feature, as one matmul and one product-sum."""

from __future__ import annotations

from genesis_autograd import Tensor

__all__ = ["bilinear"]

# torch's short dtype names in bilinear's dtype error.
_SHORT = {"float32": "float", "float64": "double", "float16": "half", "bfloat16": "c10::BFloat16"}


def _check(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for k in range(input1.ndim - 1):
        if input1.shape[k] != input2.shape[k]:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {k}: got {input1.shape[k]} and "
                f"{input2.shape[k]}"
            )
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got {weight.ndim}-D {list(weight.shape)}")
    for name, size, expected in (
        ("input1", input1.shape[-1], weight.shape[1]),
        ("input2", input2.shape[-1], weight.shape[2]),
    ):
        if size != expected:
            raise RuntimeError(
                f"bilinear(): {name} size does not match weight size: got {size} but expected {expected}"
            )
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected {weight.shape[0]}"
        )
    if len({input1.dtype, input2.dtype, weight.dtype}) > 1:
        names = [_SHORT.get(t.dtype.name, t.dtype.name) for t in (input1, input2, weight)]
        raise RuntimeError(
            f"All tensors must have the same dtype, got input1: {names[0]}, input2: {names[1]}, weight: {names[2]}"
        )


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o].

    Args:
        input1: (*, in1_features).
        input2: (*, in2_features), the same batch dims as input1.
        weight: (out_features, in1_features, in2_features).
        bias: (out_features,) or None.

    Shape: output (*, out_features).
    """
    _check(input1, input2, weight, bias)
    out_features, in1, in2 = weight.shape
    # input1 @ A, A = weight as (in1, out * in2): every output's x1^T W_o at once, then a product-sum with x2.
    left = input1 @ weight.permute(1, 0, 2).reshape(in1, out_features * in2)
    out = (left.reshape(*input1.shape[:-1], out_features, in2) * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias
