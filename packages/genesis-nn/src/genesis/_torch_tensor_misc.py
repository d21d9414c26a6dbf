"""torch.is_inference, the top-level spelling of Tensor.is_inference (is_nonzero, is_same_size, is_signed and
get_device are in _torch_runtime.py)."""

from __future__ import annotations

from genesis_autograd import Tensor


def is_inference(input: Tensor) -> bool:
    """Whether ``input`` is an inference tensor (never, in genesis: see Tensor.is_inference)."""
    return input.is_inference()


__all__ = ["is_inference"]
