"""The gloo backend: collectives on genesis cpu tensors through torch.distributed's gloo process group.

A genesis cpu tensor holds a torch tensor; ``torch.from_dlpack`` gives a torch view of the same memory
(genesis' public DLPack export, no copy), so gloo reads and writes the genesis tensor in place.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as tdist

from genesis_autograd import Tensor

from .reduce_op import ReduceOp
from .work import Work

_TORCH_OPS = {
    ReduceOp.SUM: tdist.ReduceOp.SUM,
    ReduceOp.AVG: tdist.ReduceOp.AVG,
    ReduceOp.PRODUCT: tdist.ReduceOp.PRODUCT,
    ReduceOp.MIN: tdist.ReduceOp.MIN,
    ReduceOp.MAX: tdist.ReduceOp.MAX,
}


# torch 2.13 renamed the single-tensor forms (the old names warn); 2.11 and 2.12 have only the old ones.
_all_gather_single = getattr(tdist, "all_gather_single", None) or tdist.all_gather_into_tensor
_reduce_scatter_single = getattr(tdist, "reduce_scatter_single", None) or tdist.reduce_scatter_tensor


def _view(tensor: Tensor) -> torch.Tensor:
    """The torch tensor that shares ``tensor``'s memory."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"expected a genesis Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise RuntimeError(
            f"the gloo backend works on cpu tensors, got one on {tensor.device}; "
            "use init_process_group('nccl') for cuda tensors"
        )
    return torch.from_dlpack(tensor)


def _flat(tensor: Tensor) -> torch.Tensor:
    """A one-dimensional torch view of a contiguous tensor: gloo's single-tensor collectives take the
    stacked form (output of shape (world, *input.shape)) only as a flat concatenation."""
    if not tensor.is_contiguous():
        raise ValueError("Tensors must be contiguous")
    return _view(tensor).view(-1)


def _failed(error: RuntimeError, what: str, group: Any) -> RuntimeError:
    """``error`` (gloo's, a RuntimeError) again, saying which collective on which rank failed."""
    message = (
        f"genesis.distributed: {what} failed on rank {tdist.get_rank()} (rank {group.rank()} of a group of "
        f"{group.size()}): a peer died or did not join within the group's timeout. gloo: {error}"
    )
    try:
        return type(error)(message)  # torch's class (DistBackendError...)
    except Exception:
        return RuntimeError(message)


def _wrap(work: Any, what: str, group: Any) -> Work:
    def wait() -> None:
        try:
            work.wait()
        except RuntimeError as e:
            raise _failed(e, what, group) from e

    return Work(wait, work.is_completed)


class GlooBackend:
    """One torch gloo process group, seen through genesis tensors; ``src`` / ``dst`` are global ranks."""

    def __init__(self, group: Any) -> None:
        self._group = group  # a torch ProcessGroup

    @property
    def group(self) -> Any:
        if self._group is None:
            raise RuntimeError("Invalid process group specified: it has been destroyed (destroy_process_group)")
        return self._group

    def release(self) -> None:
        """Drop the reference to torch's group (destroy_process_group), so that torch frees it now."""
        self._group = None

    def all_reduce(self, tensor: Tensor, op: ReduceOp) -> Work:
        return _wrap(
            tdist.all_reduce(_view(tensor), op=_TORCH_OPS[op], group=self.group, async_op=True),
            "all_reduce",
            self.group,
        )

    def broadcast(self, tensor: Tensor, src: int) -> Work:
        return _wrap(tdist.broadcast(_view(tensor), src, group=self.group, async_op=True), "broadcast", self.group)

    def all_gather(self, tensor_list: list[Tensor], tensor: Tensor) -> Work:
        outputs = [_view(t) for t in tensor_list]
        return _wrap(
            tdist.all_gather(outputs, _view(tensor), group=self.group, async_op=True), "all_gather", self.group
        )

    def all_gather_into_tensor(self, output: Tensor, input: Tensor) -> Work:
        return _wrap(
            _all_gather_single(_flat(output), _flat(input), group=self.group, async_op=True),
            "all_gather_into_tensor",
            self.group,
        )

    def reduce_scatter_tensor(self, output: Tensor, input: Tensor, op: ReduceOp) -> Work:
        work = _reduce_scatter_single(_view(output), _view(input), op=_TORCH_OPS[op], group=self.group, async_op=True)
        return _wrap(work, "reduce_scatter_tensor", self.group)

    def all_to_all_single(
        self, output: Tensor, input: Tensor, output_split_sizes: list[int] | None, input_split_sizes: list[int] | None
    ) -> Work:
        work = tdist.all_to_all_single(
            _view(output), _view(input), output_split_sizes, input_split_sizes, group=self.group, async_op=True
        )
        return _wrap(work, "all_to_all_single", self.group)

    def send(self, tensor: Tensor, dst: int, tag: int) -> Work:
        return _wrap(tdist.isend(_view(tensor), dst, group=self.group, tag=tag), "send", self.group)

    def recv(self, tensor: Tensor, src: int | None, tag: int) -> Work:
        return _wrap(tdist.irecv(_view(tensor), src, group=self.group, tag=tag), "recv", self.group)

    def barrier(self) -> Work:
        return _wrap(tdist.barrier(group=self.group, async_op=True), "barrier", self.group)

    def recv_from_any(self, tensor: Tensor, tag: int) -> int:
        """Receive from whichever rank sends first; returns that rank."""
        return int(tdist.recv(_view(tensor), None, group=self.group, tag=tag))
