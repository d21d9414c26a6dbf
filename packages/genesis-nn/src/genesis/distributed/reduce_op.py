"""ReduceOp: how a reduction combines the ranks' tensors (torch.distributed.ReduceOp's members)."""

from __future__ import annotations

import enum


class ReduceOp(enum.Enum):
    """SUM, AVG, MAX, MIN, PRODUCT: ``dist.all_reduce(t, op=dist.ReduceOp.MAX)``.

    AVG divides the sum by the group's size (integer tensors: NCCL's truncating division).
    """

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"
