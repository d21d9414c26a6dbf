"""Model and optimizer state dicts of fully_shard-ed models, torch.distributed.checkpoint.state_dict's API.

Sharded (the default): values are each rank's rows, ``ShardedTensor``s that know their global shape, keyed
by the parameters' names (optimizer state too: ``{"state": {name: {"exp_avg": ...}}, "param_groups":
[{..., "params": [names]}]}``); genesis.distributed.checkpoint.save / load write and read them, resharding
for another world size. ``full_state_dict=True``: whole tensors, all-gathered (``cpu_offload=True``: on the
host and on rank 0 only, the other ranks get ``{}``). The set_* functions take either form; with
``broadcast_from_rank0=True`` only rank 0's full model / optimizer state dict is read and broadcast
(broadcast_optim.py), each rank keeping its rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import genesis_autograd as ag
from genesis_autograd import Tensor

from ...nn.module import Module
from ..collectives import broadcast
from ..fsdp.fully_shard import FSDPModule
from ..fsdp.sharded_tensor import ShardedParameter, ShardedTensor, ShardSpec, gather_full, local_rows_of
from ..process_group import default_group
from .broadcast_optim import broadcast_optim_state_dict


@dataclass
class StateDictOptions:
    """How the get_* / set_* functions shape the state dict (torch's fields and defaults).

    Attributes:
        full_state_dict: whole tensors (all-gathered) instead of each rank's shards.
        cpu_offload: values on the host; with full_state_dict, only rank 0 keeps them.
        ignore_frozen_params: leave out parameters that do not require grad.
        keep_submodule_prefixes: accepted for torch's API (genesis keeps the full names).
        strict: load_state_dict's strictness in set_model_state_dict.
        broadcast_from_rank0: set_*: only rank 0's full state dict is read; the others get it broadcast.
        flatten_optimizer_state_dict: accepted for torch's API (the nested layout is kept).
    """

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False


def _reshard_all(model: Module) -> None:
    """The sharded parameters registered everywhere (a root keeps its unsharded ones after a forward)."""
    for m in model.modules():
        if isinstance(m, FSDPModule):
            m.reshard()


def _export(value: Tensor, spec: ShardSpec | None, options: StateDictOptions) -> Tensor:
    """A state-dict value: this rank's rows as a ShardedTensor, or the whole tensor (full_state_dict)."""
    value = value.detach()
    if spec is not None:
        value = gather_full(value, spec) if options.full_state_dict else ShardedTensor(value, spec)
    if options.cpu_offload and value.device.type != "cpu":
        moved = value.cpu()
        value = ShardedTensor(moved, spec) if isinstance(value, ShardedTensor) and spec is not None else moved
    return value


def _keep_on_this_rank(options: StateDictOptions) -> bool:
    return not (options.full_state_dict and options.cpu_offload) or default_group().rank() == 0


def get_model_state_dict(
    model: Module, *, submodules: set[Module] | None = None, options: StateDictOptions | None = None
) -> dict[str, Any]:
    """The model's state dict: sharded values (ShardedTensor), or whole ones with ``full_state_dict``."""
    options = options or StateDictOptions()
    _reshard_all(model)
    frozen = {id(p) for p in model.parameters() if not p.requires_grad}
    out: dict[str, Any] = {}
    for name, value in model.state_dict(keep_vars=True).items():
        if options.ignore_frozen_params and id(value) in frozen:
            continue
        spec = value.shard_spec if isinstance(value, ShardedParameter) else None
        out[name] = _export(value, spec, options)
    return out if _keep_on_this_rank(options) else {}


def _local(value: Any, target: Tensor) -> Any:
    """What ``target`` (a parameter or state of this rank) takes from a state-dict value: this rank's rows
    as a plain tensor (the data's shape)."""
    if not isinstance(value, Tensor):
        return value
    spec = getattr(target, "shard_spec", None)
    if isinstance(value, ShardedTensor) or spec is None:
        return value.detach()
    if tuple(value.shape) == tuple(spec.global_shape):  # a whole tensor: this rank's rows of it
        return local_rows_of(value.detach(), spec)
    return value.detach()


def _for_module(value: Any, target: Tensor) -> Any:
    """What load_state_dict gets for ``target``: this rank's rows, as a ShardedTensor for a sharded
    parameter (which, like the parameter, reports the global shape that load_state_dict checks)."""
    local = _local(value, target)
    spec = getattr(target, "shard_spec", None)
    return ShardedTensor(local, spec) if spec is not None and isinstance(local, Tensor) else local


def set_model_state_dict(
    model: Module, model_state_dict: dict[str, Any], *, options: StateDictOptions | None = None
) -> Any:
    """Load a sharded or full state dict into the model's shards; returns load_state_dict's (missing,
    unexpected) keys. ``broadcast_from_rank0``: rank 0's full state dict is sent to every rank."""
    options = options or StateDictOptions()
    _reshard_all(model)
    targets = model.state_dict(keep_vars=True)
    if options.broadcast_from_rank0:
        model_state_dict = _broadcast_full(targets, model_state_dict)
    local = {k: _for_module(v, targets[k]) if k in targets else v for k, v in model_state_dict.items()}
    with ag.no_grad():
        return model.load_state_dict(local, strict=options.strict)


def _broadcast_full(targets: dict[str, Tensor], full: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's whole tensors, on every rank (each one broadcast in the targets' order)."""
    rank0 = default_group().ranks[0]
    out: dict[str, Any] = {}
    for name, target in targets.items():
        spec = getattr(target, "shard_spec", None)
        shape = spec.global_shape if spec is not None else tuple(target.shape)
        buf = ag.empty(*shape, dtype=target.dtype, device=target.device)
        if default_group().rank() == 0:
            buf.copy_(full[name].to(device=target.device, dtype=target.dtype))
        broadcast(buf, rank0)
        out[name] = buf
    return out


# ----------------------------------------------------------------------------- optimizers
def _as_list(optimizers: Any) -> list[Any]:
    return list(optimizers) if isinstance(optimizers, Iterable) else [optimizers]


def _init_optim_state(optim: Any) -> None:
    """Make a fresh optimizer's lazy state exist (torch's trick: one step of zero gradients at lr 0)."""
    if optim.state:
        return
    params = [p for group in optim.param_groups for p in group["params"]]
    if any(p.grad is not None for p in params):
        raise RuntimeError("get_optimizer_state_dict / set_optimizer_state_dict on a fresh optimizer need no grads")
    lrs = [group["lr"] for group in optim.param_groups]
    for p in params:
        if p.requires_grad:
            p.grad = ag.zeros_like(p)
    for group in optim.param_groups:
        group["lr"] = 0.0
    optim.step()
    for group, lr in zip(optim.param_groups, lrs):
        group["lr"] = lr
    optim.zero_grad(set_to_none=True)


def get_optimizer_state_dict(
    model: Module, optimizers: Any, *, submodules: set[Module] | None = None, options: StateDictOptions | None = None
) -> dict[str, Any]:
    """The optimizers' state keyed by parameter name: ``{"state": {name: {...}}, "param_groups": [...]}``,
    the per-parameter tensors shaped like a shard as ShardedTensors (whole with ``full_state_dict``)."""
    options = options or StateDictOptions()
    names = {id(p): n for n, p in model.named_parameters()}
    state: dict[str, Any] = {}
    groups: list[dict[str, Any]] = []
    for optim in _as_list(optimizers):
        _init_optim_state(optim)
        for group in optim.param_groups:
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": []})
            for p in group["params"]:
                name = names[id(p)]
                groups[-1]["params"].append(name)
                spec = getattr(p, "shard_spec", None)
                entry = {}
                for key, value in optim.state.get(p, {}).items():
                    if isinstance(value, Tensor):
                        local_shape = tuple(p.data.shape)  # the shard's (p.shape is the global one)
                        shaped = spec is not None and tuple(value.shape) == local_shape and value.ndim > 0
                        value = _export(value, spec if shaped else None, options)
                    entry[key] = value
                state[name] = entry
    out = {"state": state, "param_groups": groups}
    return out if _keep_on_this_rank(options) else {}


def set_optimizer_state_dict(
    model: Module, optimizers: Any, optim_state_dict: dict[str, Any], *, options: StateDictOptions | None = None
) -> None:
    """Load an optimizer state dict of get_optimizer_state_dict's layout (sharded or full) into the optimizers."""
    options = options or StateDictOptions()
    if options.broadcast_from_rank0:
        optim_state_dict = broadcast_optim_state_dict(model, optim_state_dict)
    names = {id(p): n for n, p in model.named_parameters()}
    saved_groups = {name: g for g in optim_state_dict["param_groups"] for name in g["params"]}
    for optim in _as_list(optimizers):
        _init_optim_state(optim)
        index, state, groups = 0, {}, []
        for group in optim.param_groups:
            ids = []
            for p in group["params"]:
                name = names[id(p)]
                saved = optim_state_dict["state"].get(name)
                if saved is not None:
                    state[index] = {
                        k: _local(v, p) if isinstance(v, Tensor) and v.ndim > 0 else v for k, v in saved.items()
                    }
                ids.append(index)
                index += 1
            first = names[id(group["params"][0])] if group["params"] else None
            options_of_group = {k: v for k, v in saved_groups.get(first, group).items() if k != "params"}
            groups.append({**options_of_group, "params": ids})
        optim.load_state_dict({"state": state, "param_groups": groups})


def get_state_dict(
    model: Module, optimizers: Any, *, submodules: set[Module] | None = None, options: StateDictOptions | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(get_model_state_dict, get_optimizer_state_dict)."""
    return get_model_state_dict(model, options=options), get_optimizer_state_dict(model, optimizers, options=options)


def set_state_dict(
    model: Module,
    optimizers: Any,
    *,
    model_state_dict: dict[str, Any],
    optim_state_dict: dict[str, Any],
    options: StateDictOptions | None = None,
) -> Any:
    """set_model_state_dict then set_optimizer_state_dict; returns the model's (missing, unexpected) keys."""
    keys = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return keys
