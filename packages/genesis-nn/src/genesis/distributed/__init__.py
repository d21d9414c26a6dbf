"""genesis.distributed: process groups and collectives with torch.distributed's API.

    import genesis.distributed as dist
    dist.init_process_group("nccl")            # under torchrun: RANK, WORLD_SIZE, MASTER_ADDR/PORT
    dist.all_reduce(t, op=dist.ReduceOp.SUM)   # in place on every rank

Backends: ``gloo`` runs collectives on genesis cpu tensors through torch.distributed's gloo group
(zero-copy, through DLPack); ``nccl`` runs them on genesis cuda tensors through CuPy's NCCL binding,
on a stream of its own ordered by events against genesis' current stream. The rendezvous and the
stores are torch.distributed's (env://, tcp://, file://). ``genesis.distributed.optim`` has
ZeroRedundancyOptimizer (optimizer state sharded over the ranks); ``device_mesh`` has DeviceMesh /
init_device_mesh; ``genesis.distributed.fsdp`` has fully_shard (FSDP2: parameters, gradients and optimizer
state sharded), ``genesis.distributed.checkpoint`` its state dicts and sharded checkpoints (import them).

This is the one package of ``genesis`` that imports torch: torch.distributed is its transport and
store (pyproject.toml narrows the import contract for it).
"""

from . import device_mesh, optim
from .collectives import (
    all_gather,
    all_gather_into_tensor,
    all_gather_single,
    all_reduce,
    all_to_all_single,
    barrier,
    broadcast,
    irecv,
    isend,
    recv,
    reduce_scatter_single,
    reduce_scatter_tensor,
    send,
)
from .device_mesh import DeviceMesh, init_device_mesh
from .process_group import (
    GroupMember,
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_local_rank,
    get_node_local_rank,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_nccl_available,
    new_group,
)
from .reduce_op import ReduceOp
from .work import Work

group = GroupMember  # torch.distributed.group.WORLD

__all__ = [
    "DeviceMesh",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_single",
    "all_reduce",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "device_mesh",
    "get_backend",
    "get_local_rank",
    "get_node_local_rank",
    "get_rank",
    "get_world_size",
    "group",
    "init_device_mesh",
    "init_process_group",
    "irecv",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_nccl_available",
    "isend",
    "new_group",
    "optim",
    "recv",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "send",
]
