"""channel_shuffle: interleave the channels of ``groups`` groups (ShuffleNet), a reshape-transpose-reshape."""

from __future__ import annotations

from genesis_autograd import Tensor

__all__ = ["channel_shuffle", "native_channel_shuffle"]


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Split the C channels of (N, C, *) into ``groups`` groups and interleave them: output channel
    i * groups + g is channel g * (C / groups) + i of the input.

    Args:
        input: (N, C, *), more than 2 dims.
        groups: a positive divisor of C.
    """
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not {type(groups).__name__}")
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    batch, channels, *rest = input.shape
    if channels % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {channels} channels and {groups} groups."
        )
    out = input.reshape(batch, groups, channels // groups, *rest).transpose(1, 2)
    return out.reshape(batch, channels, *rest)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """:func:`channel_shuffle` (torch's name for the kernel without a fallback path)."""
    return channel_shuffle(input, groups)
