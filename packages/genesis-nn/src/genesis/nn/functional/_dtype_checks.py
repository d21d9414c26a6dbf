"""The dtype refusals torch's activation kernels make: they are compiled for floating dtypes only."""

from __future__ import annotations

from genesis_autograd import Tensor

from ._util import torch_type_name

__all__ = ["require_floating"]


def require_floating(op: str, input: Tensor) -> None:
    """Raise torch's NotImplementedError for an op that has no integer or bool kernel."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{torch_type_name(input.dtype)}'")
