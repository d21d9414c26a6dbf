"""What several functional families share: reduction arguments, torch's dtype names in error
messages and tuple arguments."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from genesis_autograd import Tensor

__all__ = ["legacy_reduction", "ntuple", "reduce", "torch_type_name"]

# torch's ScalarType names, which its error messages use ("expected ... Long ... but got Float").
_TORCH_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}


def torch_type_name(dtype) -> str:
    return _TORCH_NAMES.get(dtype.name, dtype.name)


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """torch's deprecated size_average / reduce arguments, as a reduction string."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.", stacklevel=3
    )
    return result


def reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def ntuple(value, n: int, name: str = "argument") -> tuple:
    """An int (or a one-element sequence) repeated n times, or a sequence of n values, as a tuple."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        value = tuple(value)
        if len(value) == 1:
            return value * n
        if len(value) != n:
            raise RuntimeError(f"{name} must be a single value or a sequence of {n} values, got {list(value)}")
        return value
    return (value,) * n
