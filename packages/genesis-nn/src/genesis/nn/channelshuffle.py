"""ChannelShuffle: interleave the channels of groups (ShuffleNet), a call of nn.functional."""

from __future__ import annotations

from genesis_autograd import Tensor

from . import functional as F
from .module import Module


class ChannelShuffle(Module):
    """Split the C channels of (N, C, *) into ``groups`` groups and interleave them.

    Args:
        groups: a positive divisor of C.
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """channel_shuffle of ``input``."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
