"""broadcast_optim_state_dict: rank 0's full optimizer state dict as every rank's, each rank keeping only its
rows of the tensors shaped like a sharded parameter (set_optimizer_state_dict's ``broadcast_from_rank0``).

Rank 0 first sends the layout, JSON bytes: per parameter name and state key either a tensor's shape and
dtype or a plain value, and the param_groups. Then every tensor, one broadcast each in the layout's order:
each rank allocates the whole tensor, receives it and keeps a copy of its rows, so only one whole tensor
is alive at a time (the other ranks' optimizer state dicts are ignored, as torch's are).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

import genesis_autograd as ag
from genesis_autograd import Tensor

from ...nn.module import Module
from ..collectives import broadcast
from ..fsdp.sharded_tensor import local_rows_of
from ..process_group import default_group


def _broadcast_bytes(payload: bytes, src: int) -> bytes:
    """``payload`` of global rank ``src`` on every rank (its length first)."""
    length = ag.tensor([len(payload)], dtype=ag.int64)
    broadcast(length, src)
    buf = ag.zeros(int(length.item()), dtype=ag.uint8)
    if payload:
        buf.copy_(ag.tensor(np.frombuffer(payload, dtype=np.uint8).copy(), dtype=ag.uint8))
    broadcast(buf, src)
    return buf.numpy().tobytes()


def _layout(full: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's state dict without the tensors' data: what every rank needs to receive them."""
    state: dict[str, dict[str, Any]] = {}
    for name, entry in full["state"].items():
        state[name] = {}
        for key, value in entry.items():
            if isinstance(value, Tensor):
                state[name][key] = {"tensor": [list(value.shape), value.dtype.name]}
            else:
                state[name][key] = {"value": value}
    return {"state": state, "param_groups": full["param_groups"]}


def _group_from_json(group: dict[str, Any]) -> dict[str, Any]:
    """JSON turned the groups' tuples (e.g. AdamW's betas) into lists: back to tuples, ``params`` aside."""
    return {k: tuple(v) if isinstance(v, list) and k != "params" else v for k, v in group.items()}


def broadcast_optim_state_dict(model: Module, optim_state_dict: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's full ``optim_state_dict`` (get_optimizer_state_dict's layout, whole tensors) on every rank,
    with the tensors shaped like a sharded parameter cut to this rank's rows (a collective: every rank of
    the default group calls it; only rank 0's argument is read)."""
    group = default_group()
    src = group.ranks[0]
    is_src = group.rank() == 0
    payload = json.dumps(_layout(optim_state_dict)).encode() if is_src else b""
    layout = json.loads(_broadcast_bytes(payload, src))
    params = dict(model.named_parameters())
    state: dict[str, dict[str, Any]] = {}
    for name, entry in layout["state"].items():
        param = params.get(name)
        spec = getattr(param, "shard_spec", None)
        state[name] = {}
        for key, described in entry.items():
            if "value" in described:
                state[name][key] = described["value"]
                continue
            shape, dtype_name = described["tensor"]
            shaped = spec is not None and tuple(shape) == tuple(spec.global_shape)
            device = param.device if shaped and param is not None else ag.as_device("cpu")
            buf = ag.empty(tuple(shape), dtype=ag.as_dtype(dtype_name), device=device)
            if is_src:
                with ag.no_grad():
                    buf.copy_(optim_state_dict["state"][name][key].detach().to(device=device, dtype=buf.dtype))
            broadcast(buf, src)
            state[name][key] = local_rows_of(buf, spec).clone() if spec is not None and shaped else buf
    return {"state": state, "param_groups": [_group_from_json(g) for g in layout["param_groups"]]}
