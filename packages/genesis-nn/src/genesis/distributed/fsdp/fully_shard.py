"""fully_shard and FSDPModule: torch's FSDP2 front end.

``fully_shard(module)`` shards the parameters the module owns (those not already owned by a fully_shard-ed
submodule) over the mesh's last dimension, installs the hooks of state.py, and changes the module's class
to a dynamic subclass of (FSDPModule, its class), ``FSDP<Name>``, so that ``isinstance(m, FSDPModule)``
holds and the FSDPModule methods are there. Apply it bottom-up, e.g. to each transformer block and then to
the whole model, which owns the rest (embeddings, final norm, head).
"""

from __future__ import annotations

import warnings
from typing import Any, NoReturn

import genesis_autograd as ag

from ...nn.module import Module
from ...nn.parameter import Parameter
from ..device_mesh import DeviceMesh, init_device_mesh
from ..process_group import GroupMember, ProcessGroup, default_group, new_group
from .param_group import FSDPParamGroup
from .policies import MixedPrecisionPolicy, OffloadPolicy
from .state import FSDPState

_fsdp_classes: dict[type, type] = {}
# torch's defaults, one object each (frozen / never mutated): the defaults of fully_shard's signature
_NO_MIXED_PRECISION = MixedPrecisionPolicy()
_NO_OFFLOAD = OffloadPolicy()


class UnshardHandle:
    """What ``FSDPModule.unshard(async_op=True)`` returns: ``wait()`` finishes the all-gather."""

    def __init__(self, state: FSDPState | None) -> None:
        self._state = state

    def wait(self) -> None:
        """Block until the unsharded parameters may be used (for NCCL: the current stream is ordered after)."""
        if self._state is not None and self._state.group is not None:
            self._state.group.wait_for_unshard()
        self._state = None


class FSDPModule:
    """The methods a fully_shard-ed module gains (its class becomes a subclass of FSDPModule and its own)."""

    _fsdp_state: FSDPState

    def _states(self, recurse: bool) -> list[FSDPState]:
        module: Any = self
        if not recurse:
            return [self._fsdp_state]
        return [m._fsdp_state for m in module.modules() if isinstance(m, FSDPModule)]

    def reshard(self) -> None:
        """Free the unsharded parameters and register the sharded ones (no-op when sharded)."""
        if self._fsdp_state.group is not None:
            self._fsdp_state.group.reshard()

    def unshard(self, async_op: bool = False) -> UnshardHandle | None:
        """All-gather the parameters now; ``async_op=True`` returns an UnshardHandle to wait on (the next
        forward waits by itself)."""
        state = self._fsdp_state
        if state.group is not None:
            state.group.unshard(async_op=True)
        handle = UnshardHandle(state)
        if async_op:
            return handle
        handle.wait()
        return None

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True) -> None:
        """Whether backward reduce-scatters gradients (True) or accumulates them unsharded, unreduced, for a
        later synchronising backward (False: gradient accumulation without communication)."""
        for state in self._states(recurse):
            if state.group is not None:
                state.group.requires_gradient_sync = requires_gradient_sync

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True) -> None:
        """Whether the parameters are freed after forward (and all-gathered again for backward)."""
        if not isinstance(reshard_after_forward, bool):
            raise ValueError(f"reshard_after_forward should be a bool, got {type(reshard_after_forward)}")
        for state in self._states(recurse):
            state.auto_reshard = False
            state.reshard_after_forward = reshard_after_forward
            if state.group is not None:  # a bool replaces an int's post-forward resharding
                state.group.post_forward_group = None

    def set_reshard_after_backward(self, reshard_after_backward: bool, *, recurse: bool = True) -> None:
        """Whether the parameters are freed after backward (False keeps them for the next forward, e.g.
        between micro-batches of an accumulation)."""
        for state in self._states(recurse):
            state.reshard_after_backward = reshard_after_backward

    def set_modules_to_forward_prefetch(self, modules: list[FSDPModule]) -> None:
        """All-gather these modules' parameters as this module's forward starts (instead of the recorded order)."""
        _check_fsdp_modules(modules)
        self._fsdp_state.forward_prefetch = [m._fsdp_state for m in modules]

    def set_modules_to_backward_prefetch(self, modules: list[FSDPModule]) -> None:
        """All-gather these modules' parameters as this module's backward starts (instead of the recorded order)."""
        _check_fsdp_modules(modules)
        self._fsdp_state.backward_prefetch = [m._fsdp_state for m in modules]

    def set_is_last_backward(self, is_last_backward: bool) -> None:
        """Accepted for torch's API; genesis frees and reduces the same way either way."""

    def __deepcopy__(self, memo: dict) -> NoReturn:
        raise AssertionError("FSDP does not support deepcopy. Please use state dict for serialization.")


def _check_fsdp_modules(modules: list[Any]) -> None:
    for module in modules:
        if not isinstance(module, FSDPModule):
            raise ValueError(f"Expects FSDPModule but got {type(module)}: {module}")


def _default_mesh() -> DeviceMesh:
    world = default_group()
    device_type = "cuda" if world.backend == "nccl" else "cpu"
    return init_device_mesh(device_type, (world.size(),))


def _device(mesh: DeviceMesh) -> ag.Device:
    if mesh.device_type == "cuda":
        return ag.as_device(f"cuda:{ag.cuda.current_device()}")
    return ag.as_device(mesh.device_type)


def _managed_params(module: Module) -> list[tuple[list[tuple[Module, str]], Parameter]]:
    """The parameters ``module`` owns: its own and its submodules', except below fully_shard-ed submodules;
    a parameter registered in several places (tied) once, with every place."""
    found: dict[int, tuple[list[tuple[Module, str]], Parameter]] = {}
    stack = [module]
    while stack:
        m = stack.pop()
        for name, p in m._parameters.items():
            if p is None:
                continue
            found.setdefault(id(p), ([], p))[0].append((m, name))
        children = [c for c in m._modules.values() if c is not None and not isinstance(c, FSDPModule)]
        stack.extend(reversed(children))
    return list(found.values())


def _order_by_registration(module: Module, params: list[tuple[list[tuple[Module, str]], Parameter]]) -> list:
    """The parameters in ``module.named_parameters()`` order (so every rank lays the flat shard out alike)."""
    rank = {id(p): i for i, p in enumerate(module.parameters())}
    return sorted(params, key=lambda item: rank.get(id(item[1]), len(rank)))


def _resolve_reshard_after_forward(value: bool | int | None, shard_size: int) -> tuple[bool | None, int | None]:
    """torch's reading of ``reshard_after_forward``: (the bool or None, the int N of a post-forward
    resharding to N ranks or None). N must divide the shard dimension; N == 1 is False, N == size True."""
    if value is None or isinstance(value, bool):
        return value, None
    if not isinstance(value, int):
        raise ValueError(
            f"reshard_after_forward should be a bool or an int representing the group size to reshard to, not {value}"
        )
    if value < 1 or value > shard_size or shard_size % value != 0:
        raise ValueError(
            f"If passing reshard_after_forward as an int, it should be a factor of {shard_size}, not {value}"
        )
    if value == 1:
        warnings.warn(
            "reshard_after_forward=1 (int) means resharding parameters to world size 1, "
            "instead of reshard_after_forward=True (bool)",
            stacklevel=3,
        )
        return False, None
    if value == shard_size:
        return True, None
    return True, value


# (default group, the mesh's ranks, N) -> this rank's post-forward group: every fully_shard with the same
# mesh and N shares one set of groups (new_group is collective; every rank makes them in the same order)
_post_forward_groups: dict[tuple[Any, tuple[int, ...], int], ProcessGroup] = {}


def _post_forward_group(mesh: DeviceMesh, n: int) -> ProcessGroup:
    """This rank's group of N consecutive ranks: the mesh's ranks viewed as ``(-1, N)``, rows the groups
    (torch's post-forward mesh; for HSDP the replicate dimension is flattened in)."""
    ranks = tuple(mesh.mesh.reshape(-1).tolist())
    key = (default_group(), ranks, n)
    if key not in _post_forward_groups:
        for row in mesh.mesh.reshape(-1, n).tolist():  # every rank makes every row's group, in order
            group = new_group(row)
            if group is not GroupMember.NON_GROUP_MEMBER:
                _post_forward_groups[key] = group
    return _post_forward_groups[key]


def fully_shard(
    module: Module,
    *,
    mesh: DeviceMesh | None = None,
    reshard_after_forward: bool | int | None = None,
    mp_policy: MixedPrecisionPolicy = _NO_MIXED_PRECISION,
    offload_policy: OffloadPolicy = _NO_OFFLOAD,
) -> Module:
    """Shard ``module``'s parameters over ``mesh`` (FSDP2): all-gathered around its forward and backward,
    gradients reduce-scattered, each rank keeping 1/world of parameters, gradients and optimizer state.

    Args:
        module: the module to shard (its class becomes ``FSDP<Class>``, a subclass of FSDPModule).
        mesh: a 1-D mesh (shard over it) or 2-D (replicate over dim 0, shard over dim 1: HSDP); default:
            every rank, on cuda with an NCCL group, else cpu.
        reshard_after_forward: free the parameters after forward (True: less memory, one more all-gather
            in backward); None: True, except for the root module; an int N (a divisor of the shard
            dimension's size): keep them sharded over N consecutive ranks after forward, so backward
            all-gathers over those N only (e.g. inside a node); 1 is False, the shard size True.
        mp_policy: the dtypes of compute, reduction and outputs.
        offload_policy: ``CPUOffloadPolicy()`` keeps the shards (and so the optimizer state) in host memory.

    Returns:
        ``module`` itself.
    """
    if type(module).forward is Module.forward:
        raise ValueError(f"fully_shard does not support containers that do not implement forward: {module}")
    mesh = mesh or _default_mesh()
    if mesh.ndim not in (1, 2):
        raise ValueError(f"fully_shard expects a 1D or 2D DeviceMesh but got {mesh}")
    if mesh.ndim == 2 and mesh.mesh_dim_names is None:
        raise AssertionError("Please init the 2D mesh for HSDP with mesh_dim_names specified")
    shard_size = mesh.size(mesh.ndim - 1)
    reshard_after_forward, post_forward_size = _resolve_reshard_after_forward(reshard_after_forward, shard_size)
    if isinstance(module, FSDPModule):
        raise RuntimeError(f"fully_shard was already applied to {type(module).__name__}")
    device = _device(mesh)
    params = _order_by_registration(module, _managed_params(module))
    group = FSDPParamGroup(params, mesh, device, mp_policy, offload_policy) if params else None
    if group is not None and post_forward_size is not None:
        group.post_forward_group = _post_forward_group(mesh, post_forward_size)
    with ag.no_grad():  # buffers go to the device, as torch's fully_shard moves them
        for sub in module.modules():
            for name, buf in list(sub._buffers.items()):
                if buf is not None and buf.device != device:
                    sub._buffers[name] = buf.to(device)
    object.__setattr__(module, "_fsdp_state", FSDPState(module, group, mp_policy, reshard_after_forward))
    cls = type(module)
    fsdp_cls = _fsdp_classes.get(cls)
    if fsdp_cls is None:
        fsdp_cls = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
        _fsdp_classes[cls] = fsdp_cls
    module.__class__ = fsdp_cls
    return module
