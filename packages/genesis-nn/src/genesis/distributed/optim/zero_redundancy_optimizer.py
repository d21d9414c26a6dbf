"""ZeroRedundancyOptimizer: ZeRO stage 1, optimizer state sharded over the ranks (torch's class and semantics).

Every rank sees the same parameters and, after DistributedDataParallel's backward, the same averaged
gradients. The parameters are split between the ranks once, greedily by size (torch's partition: each
group's parameters largest first, each to the rank with the fewest elements so far), and each rank builds
the wrapped optimizer over its share only, so it keeps the state (Adam's moments...) of its share alone.
``step()`` steps the local share, then every rank broadcasts the parameters it owns, so all ranks end
the step with identical parameters. The saved state is the ordinary optimizer layout with global
parameter indices: ``consolidate_state_dict(to)`` gathers the shards on one rank, ``state_dict()`` there
returns it, and ``load_state_dict`` on every rank keeps only its own share.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import genesis_autograd as ag
from genesis_autograd import Tensor, float32, int64, tensor, uint8, zeros

from ...optim.optimizer import Optimizer
from ..collectives import broadcast
from ..process_group import ProcessGroup, default_group


class _Portable:
    """A tensor of a state_dict on its way through pickle (genesis tensors do not pickle): numpy values
    (bfloat16 as float32, which holds every bfloat16 exactly) and the dtype to restore."""

    def __init__(self, t: Tensor) -> None:
        self.dtype = t.dtype.name
        self.values = (t.to(float32) if t.dtype.name == "bfloat16" else t).detach().cpu().numpy().copy()

    def restore(self) -> Tensor:
        return tensor(self.values).to(getattr(ag, self.dtype))


def _convert(obj: Any, leaf: Callable[[Any], Any], kind: type) -> Any:
    """``obj`` with every ``kind`` inside dicts, lists and tuples replaced by ``leaf(it)``."""
    if isinstance(obj, kind):
        return leaf(obj)
    if isinstance(obj, dict):
        return {k: _convert(v, leaf, kind) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_convert(v, leaf, kind) for v in obj)
    return obj


def _broadcast_object(obj: Any, src: int, group: ProcessGroup) -> Any:
    """``obj`` of global rank ``src`` on every rank of ``group``: its pickle's length, then its bytes, as cpu
    tensors (a cpu tensor goes through gloo in an nccl group too, as torch's object collectives allow)."""
    mine = src == group.ranks[group.rank()]
    payload = pickle.dumps(_convert(obj, _Portable, Tensor)) if mine else b""
    length = tensor([len(payload)], dtype=int64)
    broadcast(length, src, group=group)
    data = tensor(np.frombuffer(payload, dtype=np.uint8)) if mine else zeros(int(length.item()), dtype=uint8)
    broadcast(data, src, group=group)
    return _convert(pickle.loads(data.numpy().tobytes()), _Portable.restore, _Portable)


def _sync_param_groups(src: list[dict[str, Any]], dst: list[dict[str, Any]]) -> None:
    """Copy every hyper-parameter (not ``params``) of the groups in ``src`` to those of ``dst``."""
    for src_group, dst_group in zip(src, dst):
        dst_group.update({k: v for k, v in src_group.items() if k != "params"})


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap ``optimizer_class`` so that each rank of ``process_group`` keeps the optimizer state of its
    share of the parameters only (ZeRO-1), as torch.distributed.optim.ZeroRedundancyOptimizer.

    Use it with DistributedDataParallel (or gradients otherwise equal on every rank): ``step()`` updates
    this rank's share with the wrapped optimizer, then broadcasts each share from its owner.

    Args:
        params: an iterable of tensors, or of parameter-group dicts.
        optimizer_class: the optimizer to run on each share, e.g. ``genesis.optim.AdamW``.
        process_group: the ranks sharing the state (default: the world).
        parameters_as_bucket_view: pack each rank's parameters into one flat buffer per device (each
            parameter's ``.data`` a view of it), so a share goes out in one broadcast instead of one per
            parameter.
        overlap_with_ddp: torch overlaps the step with DDP's gradient communication; genesis does not
            (True raises NotImplementedError).
        **defaults: the wrapped optimizer's arguments (``lr=...``).
    """

    def __init__(
        self,
        params: Iterable[Any],
        optimizer_class: type[Optimizer],
        process_group: ProcessGroup | None = None,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults: Any,
    ) -> None:
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported by genesis: "
                "call step() after backward (overlap_with_ddp=False)"
            )
        groups = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        self.initialized = False  # add_param_group, called by Optimizer.__init__, partitions only once built
        super().__init__(groups, defaults)
        self.process_group = default_group(process_group)
        self.world_size = self.process_group.size()
        self.rank = self.process_group.rank()
        self.global_rank = self.process_group.ranks[self.rank]
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self._overlap_with_ddp = overlap_with_ddp
        self._all_state_dicts: list[dict[str, Any]] = []
        self._clear_cache()
        self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        _sync_param_groups(self.optim.param_groups, self.param_groups)  # the wrapped optimizer's defaults
        self.state = self.optim.state  # this rank's share of the state, and nothing else
        if parameters_as_bucket_view:
            self._build_param_buckets()
        self.initialized = True

    # ------------------------------------------------------------------ checks (torch's messages)
    def _verify_and_init_params(self, params: Any) -> list[Any]:
        if isinstance(params, Tensor):
            raise TypeError(f"params argument should be an iterable of Tensors, but got {type(params).__name__}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError(
                f"params argument should be an iterable of Tensors or dicts, but got {type(params).__name__}"
            ) from e
        if not all_params:
            raise ValueError("ZeroRedundancyOptimizer did not receive any parameters")
        if all(isinstance(p, Tensor) for p in all_params):
            self._all_params = all_params
        elif all(isinstance(p, dict) for p in all_params):
            self._all_params = []
            for group in all_params:
                if "params" not in group:
                    raise ValueError(
                        "Each parameter group passed-in via `params` must have a 'params' key mapping to the "
                        "parameters in the group"
                    )
                self._all_params.extend(group["params"])
        else:
            raise TypeError("params argument should be an iterable of Tensors or dicts")
        return all_params

    def _verify_same_dense_param_type(self) -> None:
        def typename(p: Tensor) -> str:
            return f"{p.device.type} {p.dtype}"

        first = typename(self._all_params[0])
        for p in self._all_params[1:]:
            if typename(p) != first:
                raise ValueError(
                    "ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got "
                    f"both {first} and {typename(p)}"
                )

    # ------------------------------------------------------------------ the partition
    def _clear_cache(self) -> None:
        self._partition_parameters_cache: list[list[dict[str, Any]]] = []
        self._param_to_rank_cache: dict[int, int] = {}
        self._index_to_param_cache: list[Tensor] = []
        self._param_to_index_cache: dict[int, int] = {}

    def _partition_parameters(self) -> list[list[dict[str, Any]]]:
        """Per rank, a copy of every parameter group holding that rank's share of its parameters (possibly
        none). torch's greedy balance: within each group, largest parameter first, to the rank with the
        fewest elements so far (counted over all groups; ties to the lowest rank)."""
        if not self._partition_parameters_cache:
            self._partition_parameters_cache = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                shares: list[list[Tensor]] = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    rank = sizes.index(min(sizes))
                    shares[rank].append(p)
                    sizes[rank] += p.numel()
                for rank, share in enumerate(shares):
                    self._partition_parameters_cache[rank].append({**group, "params": share})
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self) -> dict[int, int]:
        """``id(parameter)`` -> the group rank that owns its state and broadcasts it."""
        if not self._param_to_rank_cache:
            for rank, groups in enumerate(self._partition_parameters()):
                for group in groups:
                    self._param_to_rank_cache.update((id(p), rank) for p in group["params"])
        return self._param_to_rank_cache

    @property
    def _index_to_param(self) -> list[Tensor]:
        """The parameters in global order (the indices of the state_dict)."""
        if not self._index_to_param_cache:
            self._index_to_param_cache = [p for group in self.param_groups for p in group["params"]]
        return self._index_to_param_cache

    @property
    def _param_to_index(self) -> dict[int, int]:
        if not self._param_to_index_cache:
            self._param_to_index_cache = {id(p): i for i, p in enumerate(self._index_to_param)}
        return self._param_to_index_cache

    def _build_param_buckets(self) -> None:
        """One flat buffer per rank (and device) holding that rank's parameters; each parameter's ``.data``
        becomes a view of it, so the share is broadcast in one call."""
        self._buckets: list[Tensor] = []  # per rank, in rank order (empty shares have none)
        self._bucket_owner: list[int] = []
        for rank, groups in enumerate(self._partition_parameters()):
            params = [p for group in groups for p in group["params"]]
            for device in dict.fromkeys(str(p.device) for p in params):
                on_device = [p for p in params if str(p.device) == device]
                total = sum(p.numel() for p in on_device)
                bucket = zeros(total, dtype=on_device[0].dtype, device=on_device[0].device)
                offset = 0
                for p in on_device:
                    view = bucket[offset : offset + p.numel()]
                    view.copy_(p.detach().reshape(-1))
                    p.data = view.view(p.shape).data  # genesis: .data is the NDArray, as Module._apply sets it
                    offset += p.numel()
                self._buckets.append(bucket)
                self._bucket_owner.append(rank)

    # ------------------------------------------------------------------ stepping
    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        """Step this rank's share (hyper-parameters set on ``param_groups``, e.g. by a scheduler, apply),
        then broadcast every share from its owner: all ranks end with the same parameters."""
        _sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else self.optim.step(closure=closure, **kwargs)
        _sync_param_groups(self.optim.param_groups, self.param_groups)
        self._sync_params()
        return loss

    def _sync_params(self) -> None:
        group, works = self.process_group, []
        if self.parameters_as_bucket_view:
            for bucket, rank in zip(self._buckets, self._bucket_owner):
                works.append(broadcast(bucket, group.ranks[rank], group=group, async_op=True))
        else:
            for rank, groups in enumerate(self._partition_parameters()):
                for g in groups:
                    for p in g["params"]:
                        works.append(broadcast(p.detach(), group.ranks[rank], group=group, async_op=True))
        for work in works:
            assert work is not None
            work.wait()

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group; its parameters are shared out as at construction (the earlier groups keep their
        owners, so no rank's existing state moves)."""
        super().add_param_group(param_group)
        if self.initialized:
            self._clear_cache()
            shares = self._partition_parameters()
            self.optim.add_param_group(shares[self.rank][-1])
            _sync_param_groups(self.optim.param_groups[-1:], self.param_groups[-1:])
            if self.parameters_as_bucket_view:
                self._build_param_buckets()

    # ------------------------------------------------------------------ state_dict
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's share of the state on group rank ``to`` (every rank must call it); then
        ``state_dict()`` works there."""
        self._all_state_dicts = []
        group = self.process_group
        for rank in range(self.world_size):
            local = self.optim.state_dict() if rank == self.rank else None
            received = _broadcast_object(local, group.ranks[rank], group)
            if self.rank == to:
                self._all_state_dicts.append(received)  # a cpu copy, this rank's own included

    def state_dict(self) -> dict[str, Any]:
        """The whole optimizer's state_dict, global parameter indices (only after consolidate_state_dict on
        this rank)."""
        if not self._all_state_dicts:
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank. "
                f"Please call `consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                "save the global state."
            )
        state_dict = super().state_dict()
        state_dict["state"] = {}
        for rank, local in enumerate(self._all_state_dicts):
            global_groups = self._partition_parameters()[rank]
            for local_group, global_group in zip(local["param_groups"], global_groups):
                for local_index, param in zip(local_group["params"], global_group["params"]):
                    if local_index in local["state"]:
                        state_dict["state"][self._param_to_index[id(param)]] = local["state"][local_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a whole-optimizer state_dict (every rank calls it): each rank keeps the state of its own
        share, and every group's hyper-parameters."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        # global index -> the saved index at that place (a saved state_dict may number them otherwise)
        saved_index = [i for g in saved_groups for i in g["params"]]
        local_state, local_groups, local_index = {}, [], 0
        for saved, share in zip(saved_groups, self._partition_parameters()[self.rank]):
            indices = []
            for p in share["params"]:
                key = saved_index[self._param_to_index[id(p)]]
                if key in state_dict["state"]:
                    local_state[local_index] = state_dict["state"][key]
                indices.append(local_index)
                local_index += 1
            local_groups.append({**{k: v for k, v in saved.items() if k != "params"}, "params": indices})
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        _sync_param_groups(saved_groups, self.param_groups)
        self.state = self.optim.state
