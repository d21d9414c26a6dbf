"""Process groups: init_process_group's rendezvous, the default (world) group, subgroups, and the
rank / size queries (torch.distributed's names and errors).

Rendezvous is torch.distributed's: ``env://`` (torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
``tcp://host:port`` or ``file:///path`` make a TCPStore / FileStore. Every group has a torch gloo
process group on that store (cpu tensors, barrier); with the nccl backend, also an NCCL communicator
(cuda tensors) whose unique id goes through the same store.
"""

from __future__ import annotations

import atexit
import os
from datetime import timedelta
from typing import Any

import torch.distributed as tdist

from genesis_autograd import Tensor
from genesis_autograd import cuda as _cuda

from .gloo import GlooBackend
from .nccl import NcclBackend, nccl_module

BACKENDS = ("gloo", "nccl")
_DEFAULT_TIMEOUT = timedelta(minutes=10)  # torch's default for both backends


class ProcessGroup:
    """Ranks that run collectives together. ``rank()`` / ``size()`` are this process' place in it."""

    def __init__(
        self, backend: str, torch_group: Any, ranks: list[int], store: Any, key: str, timeout: timedelta
    ) -> None:
        self.backend = backend
        self.ranks = ranks  # global ranks, in group-rank order
        self._gloo = GlooBackend(torch_group)  # gloo times out by itself; NCCL through a watchdog
        seconds = timeout.total_seconds()
        self._nccl = NcclBackend(store, key, ranks, tdist.get_rank(), seconds) if backend == "nccl" else None

    def rank(self) -> int:
        return self.ranks.index(tdist.get_rank())

    def size(self) -> int:
        return len(self.ranks)

    def backend_for(self, tensor: Tensor) -> Any:
        """gloo for cpu tensors; nccl for cuda tensors (nccl groups only)."""
        if tensor.device.type == "cuda":
            if self._nccl is None:
                raise RuntimeError(
                    f"No backend type associated with device type cuda (this group's backend is {self.backend!r}; "
                    "init_process_group('nccl') runs collectives on cuda tensors)"
                )
            return self._nccl
        return self._gloo

    @property
    def gloo(self) -> GlooBackend:
        return self._gloo

    def destroy(self, abort: bool = False) -> None:
        """Release this group's communicators now, not whenever the object is collected: the NCCL
        communicator (``abort``: without waiting for work in flight, as at exit after an error), and the
        reference to torch's gloo group, which torch's destroy_process_group then frees."""
        if self._nccl is not None:
            self._nccl.abort() if abort else self._nccl.destroy()
            self._nccl = None
        self._gloo.release()

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks})"


class _World:
    """The default group and what init_process_group learnt (one per process)."""

    group: ProcessGroup | None = None
    store: Any = None
    groups: list[ProcessGroup] = []
    timeout = _DEFAULT_TIMEOUT  # the default group's: new_group's default, as torch's
    exit_handler = False
    generation = 0  # init_process_group calls so far in this process: keeps each init's store keys apart


class GroupMember:
    """torch's names: ``GroupMember.WORLD`` is the default group once made; ``NON_GROUP_MEMBER`` is what
    new_group returns on the ranks outside the new group."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


def is_available() -> bool:
    """Whether the distributed package can be used (torch.distributed's gloo is here)."""
    return tdist.is_available()


def is_initialized() -> bool:
    """Whether init_process_group has made the default group."""
    return _World.group is not None


def is_nccl_available() -> bool:
    try:
        nccl_module()
    except RuntimeError:
        return False
    return True


def is_gloo_available() -> bool:
    return tdist.is_gloo_available()


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
) -> None:
    """Join the default process group: every rank calls it, and it returns once all have.

    Args:
        backend: ``"gloo"`` (cpu tensors) or ``"nccl"`` (cuda tensors; cpu tensors still go through gloo);
            default ``"nccl"`` where a GPU is present, else ``"gloo"``.
        init_method: ``"env://"`` (the default: torchrun's variables), ``"tcp://host:port"`` or
            ``"file:///path"``; exclusive with ``store``.
        timeout: how long a collective or the rendezvous may wait for the other ranks (10 minutes).
        world_size, rank: the number of processes and this one's place; from the environment with env://.
        store: a torch.distributed Store already agreed on (then world_size and rank are required).
    """
    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    if backend is None:
        backend = "nccl" if _cuda.is_available() else "gloo"
    backend = str(backend).lower()
    if backend not in BACKENDS:
        raise ValueError(f"Invalid backend: {backend!r}; genesis.distributed supports {', '.join(BACKENDS)}")
    if backend == "nccl":
        if not _cuda.is_available():
            raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
        nccl_module()
    timeout = _DEFAULT_TIMEOUT if timeout is None else timeout
    if store is None:
        store, rank, world_size = next(tdist.rendezvous(init_method or "env://", rank, world_size, timeout=timeout))
        store.set_timeout(timeout)
    elif init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    elif rank < 0 or world_size <= 0:
        raise ValueError("world_size and rank must be given with a store")
    tdist.init_process_group("gloo", store=store, rank=rank, world_size=world_size, timeout=timeout)
    # torchrun's store outlives a destroy_process_group: a later init must not read this one's NCCL ids
    # (every rank inits the same number of times, so the generation agrees across ranks)
    _World.generation += 1
    _World.store, _World.timeout = tdist.PrefixStore(f"genesis/{_World.generation}", store), timeout
    _World.group = ProcessGroup(backend, tdist.group.WORLD, list(range(world_size)), _World.store, "nccl/0", timeout)
    _World.groups = [_World.group]
    GroupMember.WORLD = _World.group
    if not _World.exit_handler:
        atexit.register(_destroy_at_exit)  # after torch's import: runs before torch's own exit handlers
        _World.exit_handler = True


def default_group(group: ProcessGroup | None = None) -> ProcessGroup:
    """``group``, or the default group; torch's error before init_process_group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        raise RuntimeError("this rank is not a member of the group")
    if group is not None:
        return group
    if _World.group is None:
        raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
    return _World.group


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None, backend: str | None = None) -> Any:
    """A subgroup of ``ranks`` (all ranks by default). Every rank calls it, in the same order; the ranks
    outside get ``GroupMember.NON_GROUP_MEMBER``."""
    world = default_group()
    backend = world.backend if backend is None else str(backend).lower()
    if backend not in BACKENDS:
        raise ValueError(f"Invalid backend: {backend!r}; genesis.distributed supports {', '.join(BACKENDS)}")
    ranks = sorted(ranks) if ranks is not None else list(world.ranks)
    torch_group = tdist.new_group(ranks, timeout=timeout, backend="gloo")
    key = f"nccl/{len(_World.groups)}"  # the same on every rank: all ranks call new_group in the same order
    group = ProcessGroup(backend, torch_group, ranks, _World.store, key, timeout or _World.timeout)
    _World.groups.append(group)
    return group if tdist.get_rank() in ranks else GroupMember.NON_GROUP_MEMBER


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave ``group``, or (the default) every group and the default one: init_process_group may run again."""
    if group is not None and group is not _World.group:
        group.destroy()
        if group in _World.groups:
            _World.groups.remove(group)
        return
    default_group()  # torch's error when nothing is initialized
    _destroy_all(abort=False)


def _destroy_all(abort: bool) -> None:
    for g in _World.groups:
        g.destroy(abort)
    tdist.destroy_process_group()
    _World.group, _World.store, _World.groups = None, None, []
    GroupMember.WORLD = None


def _destroy_at_exit() -> None:
    """Tear down what a process leaves initialized (no destroy_process_group, or an exception) while the
    interpreter is whole.

    Left to interpreter teardown, torch's gloo group dies in whatever order the finalizer frees objects:
    its worker and store threads may still hold work and tensors whose release needs the GIL, and a
    C++ thread that asks for the GIL after finalization has begun is ended with pthread_exit, whose
    unwinding through a noexcept frame is std::terminate ("terminate called without an active
    exception", about one exit in five before this handler). Nothing here talks to the other ranks,
    so a rank exiting on an error does not wait for them."""
    if _World.group is not None:
        _destroy_all(abort=True)


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process' rank in ``group`` (default: the world); -1 outside the group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return default_group(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes in ``group`` (default: the world); -1 outside the group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return default_group(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend name of ``group`` (default: the world)."""
    return default_group(group).backend


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process' rank on its host: torchrun's LOCAL_RANK, else ``fallback_rank`` (torch's)."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow `get_node_local_rank` "
        "to work, assuming you are not running in a multi-device context and want the code to run locally instead."
    )


def get_local_rank() -> int:
    """(genesis) The rank on this host, e.g. the cuda device to use: LOCAL_RANK (torchrun), else the
    global rank (processes started on one host without torchrun), else 0."""
    return get_node_local_rank(fallback_rank=get_rank() if is_initialized() else 0)
