"""torch.X spellings of Tensor's queries: is_nonzero, is_same_size, is_signed, is_inference, get_device."""

from __future__ import annotations

from genesis_autograd import Tensor


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor (torch's RuntimeError for none or several elements)."""
    return input.is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    return input.is_same_size(other)


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype holds negative values."""
    return input.is_signed()


def is_inference(input: Tensor) -> bool:
    """Whether ``input`` is an inference tensor (never, in genesis: see Tensor.is_inference)."""
    return input.is_inference()


def get_device(input: Tensor) -> int:
    """The CUDA device index of ``input``, -1 on the cpu."""
    return input.get_device()


__all__ = ["get_device", "is_inference", "is_nonzero", "is_same_size", "is_signed"]
