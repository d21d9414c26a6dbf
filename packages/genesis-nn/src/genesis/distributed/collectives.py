"""The collectives and point-to-point ops, torch.distributed's signatures: each finds the group's backend
for the tensor's device (gloo for cpu, nccl for cuda) and returns a Work with ``async_op=True``, else
waits and returns None."""

from __future__ import annotations

from genesis_autograd import Tensor

from .process_group import ProcessGroup, default_group
from .reduce_op import ReduceOp
from .work import Work


def _run(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def _check_member(group: ProcessGroup, rank: int, what: str) -> None:
    if rank not in group.ranks:
        raise ValueError(f"{what} rank {rank} is not part of the group (global ranks {group.ranks})")


def all_reduce(
    tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None, async_op: bool = False
) -> Work | None:
    """Reduce ``tensor`` over the group's ranks with ``op``; every rank gets the result, in place."""
    g = default_group(group)
    return _run(g.backend_for(tensor).all_reduce(tensor, ReduceOp(op)), async_op)


def broadcast(tensor: Tensor, src: int, group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Copy ``tensor`` of global rank ``src`` into ``tensor`` on every other rank of the group."""
    g = default_group(group)
    _check_member(g, src, "src")
    return _run(g.backend_for(tensor).broadcast(tensor, src), async_op)


def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False
) -> Work | None:
    """Fill ``tensor_list[i]`` with group rank i's ``tensor``."""
    g = default_group(group)
    if len(tensor_list) != g.size():
        raise ValueError(f"tensor_list must have one tensor per rank ({g.size()}), got {len(tensor_list)}")
    return _run(g.backend_for(tensor).all_gather(list(tensor_list), tensor), async_op)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False
) -> Work | None:
    """Gather every rank's ``input_tensor`` into ``output_tensor``, concatenated along dim 0 in rank order
    (or stacked, when ``output_tensor`` has one dimension more)."""
    g = default_group(group)
    return _run(g.backend_for(input_tensor).all_gather_into_tensor(output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce ``input`` over the ranks and give group rank i the i-th of its ``size`` equal slices of dim 0."""
    g = default_group(group)
    return _run(g.backend_for(input).reduce_scatter_tensor(output, input, ReduceOp(op)), async_op)


def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes: list[int] | None = None,
    input_split_sizes: list[int] | None = None,
    group: ProcessGroup | None = None,
    async_op: bool = False,
) -> Work | None:
    """Split ``input`` along dim 0 (equally, or by ``input_split_sizes``) and send slice i to group rank i;
    ``output`` receives rank i's slice at its i-th place (equal, or ``output_split_sizes``)."""
    g = default_group(group)
    work = g.backend_for(input).all_to_all_single(output, input, output_split_sizes, input_split_sizes)
    return _run(work, async_op)


def isend(tensor: Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """Send ``tensor`` to global rank ``dst``; returns at once with a Work."""
    g = default_group(group)
    _check_member(g, dst, "dst")
    return g.backend_for(tensor).send(tensor, dst, tag)


def irecv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0) -> Work:
    """Receive into ``tensor`` from global rank ``src``; returns at once with a Work."""
    g = default_group(group)
    if src is not None:
        _check_member(g, src, "src")
    return g.backend_for(tensor).recv(tensor, src, tag)


def send(tensor: Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> None:
    """Send ``tensor`` to global rank ``dst`` and wait until it has left."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from global rank ``src`` (any rank when None); returns the sender's rank."""
    g = default_group(group)
    if src is None:
        return g.backend_for(tensor).recv_from_any(tensor, tag)
    irecv(tensor, src, g, tag).wait()
    return src


def barrier(
    group: ProcessGroup | None = None, async_op: bool = False, device_ids: list[int] | None = None
) -> Work | None:
    """Wait until every rank of the group has reached its barrier."""
    return _run(default_group(group).gloo.barrier(), async_op)


# torch 2.13's names for the two single-tensor collectives.
all_gather_single = all_gather_into_tensor
reduce_scatter_single = reduce_scatter_tensor
