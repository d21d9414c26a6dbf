"""FSDPParamGroup: the parameters one fully_shard call manages, sharded into one flat buffer per rank, so
that one all-gather unshards them all and one reduce-scatter reduces all their gradients.

Layout. Parameter i of global shape ``(D0, *rest)`` takes ``chunk_i = ceil(D0 / world)`` rows per rank,
``n_i = chunk_i * prod(rest)`` elements at offset ``off_i`` of each rank's flat shard of ``S = sum n_i``
elements (its rows, then padding). The sharded parameter is a view of its slot (only the rows this rank
holds), so the optimizer steps the flat buffer in place and, without a dtype cast, the flat buffer is the
all-gather's input as it is. The all-gather's output is ``world`` flat shards one after the other; each
unsharded parameter is a view of one buffer for the group, which one launch fills from the all-gather's
output (``NDArray.chunk_split``); the reduce-scatter's input is written from every gradient by one launch
too (``chunk_cat_``, torch's ``_chunk_cat``: it casts to the reduce dtype and zeroes the padding).

The unsharded parameters are Parameter objects made once: forward's autograd graph holds them, so freeing
one (reshard) swaps its data for an empty array and unsharding again (before backward) swaps fresh
all-gathered data in; a backward reads its saved parameters' data when it runs.

On cuda the collectives run on the NCCL backend's stream, ordered after the current stream by an event;
Work.wait() orders the current stream after them, and the Work keeps its buffers alive until then, so
memory is handed back only once the stream that reads it is ordered after the collective (what
record_stream gives torch). A group waits for its reduce-scatter before the root's end of backward.

Host cost. What runs for every parameter in every forward and backward (a GPT-2 large has 436) works on the
tensors' NDArrays (``.data``): views there record nothing and skip the Tensor layer's per-op cost. The
copies in and out are one launch per group each way, not one or two per parameter: per parameter, only
its view and its registration are left.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import genesis_autograd as ag
from genesis_autograd import Device, DType, NDArray, Tensor

from ...nn.module import Module
from ...nn.parameter import Parameter
from ..collectives import all_gather_into_tensor, all_reduce, reduce_scatter_tensor
from ..device_mesh import DeviceMesh
from ..process_group import ProcessGroup
from ..reduce_op import ReduceOp
from .policies import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy
from .sharded_tensor import ShardedParameter, ShardSpec


@dataclass
class ParamSlot:
    """One parameter of a group: where it is registered, its sharded and unsharded forms, its slot."""

    owners: list[tuple[Module, str]]  # (module, attribute name); a tied parameter has several
    spec: ShardSpec
    offset: int  # of its slot in the flat shard
    sharded: ShardedParameter
    unsharded: Parameter
    unsharded_offset: int  # of the unsharded parameter in the group's one unsharded buffer
    accumulated: Tensor | None = None  # gradients kept unsharded while synchronisation is off

    @property
    def padded_numel(self) -> int:
        """The slot's size: ``chunk`` rows."""
        return self.spec.chunk * self.spec.row_numel


@dataclass
class _Pending:
    """A collective in flight and the buffers it reads and writes (alive until it is waited for)."""

    work: Any
    buffers: list[Tensor] = field(default_factory=list)


def _rows_view(flat: NDArray, slot: ParamSlot, world: int, stride: int) -> NDArray:
    """The ``(world, chunk, row)`` view of ``slot``'s place in each of ``world`` flat shards of ``stride``
    (``flat`` starts its storage)."""
    spec = slot.spec
    return flat.as_strided((world, spec.chunk, spec.row_numel), (stride, spec.row_numel, 1), slot.offset)


def _copy_rows(dst: NDArray, src: NDArray, chunk: int, rows: int, into_chunks: bool, add: bool = False) -> None:
    """Copy between ``(rows, row)`` contiguous rows and their ``(world, chunk, row)`` chunked view, padding
    ignored: ``into_chunks`` writes ``dst`` (chunked) from ``src`` (rows), else the reverse. ``add`` adds."""
    full, rem = divmod(rows, chunk)
    chunked, plain = (dst, src) if into_chunks else (src, dst)
    pairs = []
    if full:
        whole = full == chunked.shape[0]  # (rows divide evenly: the views themselves, no slices)
        pairs.append(
            (chunked if whole else chunked[:full], (plain if not rem else plain[: full * chunk]).view(full, chunk, -1))
        )
    if rem:
        pairs.append((chunked[full, :rem], plain[full * chunk :]))
    for c, p in pairs:
        target, source = (c, p) if into_chunks else (p, c)
        if add:
            target.add_(source.astype(target.dtype))
        else:
            target.copy_(source)


class FSDPParamGroup:
    """The sharded parameters of one fully_shard call and their collectives."""

    def __init__(
        self,
        params: list[tuple[list[tuple[Module, str]], Parameter]],
        mesh: DeviceMesh,
        device: Device,
        mp_policy: MixedPrecisionPolicy,
        offload_policy: OffloadPolicy,
    ) -> None:
        self.mesh, self.device = mesh, device
        self.shard_group: ProcessGroup = mesh.get_group(mesh.ndim - 1)  # HSDP: shard inside, replicate across
        self.replicate_group: ProcessGroup | None = mesh.get_group(0) if mesh.ndim == 2 else None
        self.world = self.shard_group.size()
        self.offload = isinstance(offload_policy, CPUOffloadPolicy)
        dtypes = {p.dtype for _, p in params}
        if len(dtypes) > 1:
            raise AssertionError(f"FSDP expects uniform original parameter dtype but got {dtypes}")
        self.orig_dtype: DType = dtypes.pop()
        self.param_dtype: DType = mp_policy.param_dtype or self.orig_dtype
        self.reduce_dtype: DType = mp_policy.reduce_dtype or self.param_dtype
        self.shard_device = ag.as_device("cpu") if self.offload else device
        self.slots: list[ParamSlot] = []
        self._build(params, pin=self.offload and getattr(offload_policy, "pin_memory", False))
        self.is_unsharded = False
        self._unshard: _Pending | None = None
        self._reduce: _Pending | None = None
        self._reduced_slots: list[ParamSlot] = []
        self.requires_gradient_sync = True
        # reshard_after_forward=N (an int): after forward each rank keeps 1/N of the all-gather's output,
        # sharded over N consecutive ranks (``post_forward_group``), and backward all-gathers only over them
        self.post_forward_group: ProcessGroup | None = None
        self._gathered: Tensor | None = None  # the all-gather's output while unsharded (int mode only)
        self._kept: Tensor | None = None  # this rank's 1/N of it between forward and backward (int mode)
        self.on_all_grads_ready: Callable[[], None] | None = None  # set by the state: its post-backward
        self._ready: set[int] = set()
        self.trainable = sum(1 for s in self.slots if s.unsharded.requires_grad)
        self.has_frozen = self.trainable < len(self.slots)

    # ------------------------------------------------------------ construction
    def _build(self, params: list[tuple[list[tuple[Module, str]], Parameter]], pin: bool) -> None:
        specs = []
        offset = unsharded_at = 0
        for owners, p in params:
            if p.ndim == 0:
                name = owners[0][1]
                raise ValueError(
                    "fully_shard doesn't support scalar parameters. "
                    f"Change {name} to a 1D tensor with numel equal to 1."
                )
            spec = ShardSpec(tuple(p.shape), self.shard_group, self.mesh)
            specs.append((owners, p, spec, offset, unsharded_at))
            offset += spec.chunk * spec.row_numel
            unsharded_at += math.prod(spec.global_shape)
        self.numel = offset  # S: one rank's flat shard
        self.unsharded_numel = unsharded_at  # the group's unsharded parameters, one buffer
        with ag.no_grad():
            flat = ag.zeros(offset, dtype=self.orig_dtype, device=self.shard_device)
            if pin and ag.cuda.is_available():
                flat = flat.pin_memory()
            self.flat = flat
            for i, (owners, p, spec, off, at) in enumerate(specs):
                n = spec.local_rows * spec.row_numel
                local = flat[off : off + n]
                if n:
                    rows = p.detach()[spec.row_start : spec.row_start + spec.local_rows]
                    local.copy_(rows.reshape(-1).to(device=self.shard_device))
                sharded = ShardedParameter(local.view(spec.local_shape), spec, p.requires_grad)
                unsharded = Parameter(ag.empty(0, dtype=self.param_dtype, device=self.device), p.requires_grad)
                slot = ParamSlot(owners, spec, off, sharded, unsharded, at)
                if p.requires_grad:
                    unsharded.register_post_accumulate_grad_hook(self._grad_ready_hook(i))
                self.slots.append(slot)
                for module, name in owners:
                    module._parameters[name] = sharded

    def _grad_ready_hook(self, index: int) -> Callable[[Tensor], None]:
        def hook(param: Tensor) -> None:
            self._ready.add(index)
            if len(self._ready) == self.trainable and self.on_all_grads_ready is not None:
                self.on_all_grads_ready()

        return hook

    # ------------------------------------------------------------ unshard / reshard
    def unshard(self, async_op: bool = False) -> None:
        """All-gather the parameters (``async_op``: start it; ``wait_for_unshard`` finishes it)."""
        if self.is_unsharded or self._unshard is not None or not self.slots:
            if not async_op:
                self.wait_for_unshard()
            return
        with ag.no_grad():
            out = ag.empty(self.world * self.numel, dtype=self.param_dtype, device=self.device)
            if self._kept is not None:  # after a forward of reshard_after_forward=N: gather over the N ranks
                source, self._kept = self._kept, None
                group = self.post_forward_group
                work = all_gather_into_tensor(out, source, group=group, async_op=True)
            else:
                source = self.flat
                if source.device != self.device or source.dtype != self.param_dtype:
                    source = source.to(device=self.device, dtype=self.param_dtype)
                work = all_gather_into_tensor(out, source, group=self.shard_group, async_op=True)
        self._unshard = _Pending(work, [out, source])
        if not async_op:
            self.wait_for_unshard()

    def wait_for_unshard(self) -> None:
        """Finish an all-gather in flight: copy each parameter out and register the unsharded ones."""
        pending, self._unshard = self._unshard, None
        if pending is None:
            return
        pending.work.wait()
        gathered = pending.buffers[0]
        out = gathered.data
        # world 1: the output is the flat shard, and the parameters are views of it; else views of one new
        # buffer, which one launch fills from the output
        whole = self.world == 1
        buffer = out if whole else ag.empty(self.unsharded_numel, dtype=self.param_dtype, device=self.device).data
        views = []
        for slot in self.slots:
            spec = slot.spec
            view = buffer.as_strided(spec.global_shape, spec.strides, slot.offset if whole else slot.unsharded_offset)
            slot.unsharded.data = view
            views.append(view)
        if not whole:
            out.chunk_split(self.world, views)
        if self.post_forward_group is not None:
            self._gathered = gathered
        self._register(unsharded=True)
        self.is_unsharded = True

    def reshard_after_forward(self) -> None:
        """The end of a forward: free the unsharded parameters; with ``post_forward_group`` (an int
        reshard_after_forward), keep this rank's 1/N of the all-gathered flat shards for backward's
        all-gather over those N ranks. Rows ``[j * world / N, (j + 1) * world / N)`` of the output's
        ``world`` flat shards go to rank j of the N, so their all-gather in rank order is the output again."""
        group, gathered = self.post_forward_group, self._gathered
        if group is None or gathered is None or not self.is_unsharded:
            self.reshard()
            return
        per_rank = self.world // group.size() * self.numel
        j = group.rank()
        with ag.no_grad():
            kept = gathered[j * per_rank : (j + 1) * per_rank].clone()
        self.reshard()
        self._kept = kept

    def drop_kept(self) -> None:
        """Forget the 1/N kept after a forward (the next all-gather reads the flat shards again)."""
        self._kept = None

    def reshard(self) -> None:
        """Free the unsharded parameters (their data becomes empty) and register the sharded ones."""
        self._gathered = self._kept = None
        if self._unshard is not None:
            self._unshard.work.wait()  # never free a buffer a collective still writes
            self._unshard = None
        if not self.is_unsharded:
            return
        empty = ag.empty(0, dtype=self.param_dtype, device=self.device).data
        for slot in self.slots:
            slot.unsharded.data = empty
        self._register(unsharded=False)
        self.is_unsharded = False

    def _register(self, unsharded: bool) -> None:
        for slot in self.slots:
            param = slot.unsharded if unsharded else slot.sharded
            for module, name in slot.owners:
                module._parameters[name] = param

    # ------------------------------------------------------------ gradients
    def reset_backward(self) -> None:
        """Before a backward: no gradient seen yet."""
        self._ready = set()

    def reduce_grads(self) -> bool:
        """The gradients on the unsharded parameters: reduce-scattered into the sharded parameters' ``.grad``
        (averaged over the ranks, in ``reduce_dtype``), or, while synchronisation is off, added to the
        unsharded accumulators. Returns whether a reduce-scatter was started."""
        slots = [s for s in self.slots if s.unsharded.grad is not None or s.accumulated is not None]
        if not self.requires_gradient_sync:
            with ag.no_grad():
                for s in slots:
                    grad, s.unsharded.grad = s.unsharded.grad, None
                    if grad is not None:
                        grad = grad.to(self.reduce_dtype)
                        s.accumulated = grad if s.accumulated is None else s.accumulated.add_(grad)
            return False
        if not slots:
            return False
        self.finish_reduce()  # at most one reduce-scatter of this group in flight
        world, numel = self.world, self.numel
        with ag.no_grad():
            grads = self._plain_grads(slots)
            if grads is not None:  # the usual step: one launch writes the input from every gradient
                inp = ag.empty(world * numel, dtype=self.reduce_dtype, device=self.device)
                inp.data.chunk_cat_(grads, world)
            else:
                inp = self._copy_in(slots)
            out = ag.empty(numel, dtype=self.reduce_dtype, device=self.device)
            work = reduce_scatter_tensor(out, inp, ReduceOp.AVG, group=self.shard_group, async_op=True)
        self._reduce = _Pending(work, [out, inp])
        self._reduced_slots = slots
        return True

    def _copy_in(self, slots: list[ParamSlot]) -> Tensor:
        """The reduce-scatter's input written a parameter at a time: what the one-launch path does not take
        (gradients accumulated while synchronisation was off, added here; a missing gradient counts zero)."""
        world, numel = self.world, self.numel
        make = ag.empty if len(slots) == len(self.slots) else ag.zeros
        inp = make(world * numel, dtype=self.reduce_dtype, device=self.device)
        flat_inp = inp.data
        for s in slots:
            chunked = _rows_view(flat_inp, s, world, numel)
            rows = s.spec.global_shape[0]
            grad, s.unsharded.grad = s.unsharded.grad, None
            first = grad if grad is not None else s.accumulated
            assert first is not None
            _copy_rows(chunked, first.data.reshape(rows, -1).astype(self.reduce_dtype), s.spec.chunk, rows, True)
            if grad is not None and s.accumulated is not None:
                _copy_rows(chunked, s.accumulated.data.reshape(rows, -1), s.spec.chunk, rows, True, add=True)
            s.accumulated = None
        return inp

    def _plain_grads(self, slots: list[ParamSlot]) -> list[NDArray] | None:
        """Every parameter's gradient (taken off it), when each has one in one dtype and none accumulated while
        synchronisation was off; else None (and nothing is taken)."""
        if len(slots) != len(self.slots):
            return None
        grads: list[NDArray] = []
        for s in slots:
            grad = s.unsharded.grad
            if grad is None or s.accumulated is not None:
                return None
            data = grad.data
            if grads and data.dtype is not grads[0].dtype:
                return None
            grads.append(data)
        for s in slots:
            s.unsharded.grad = None
        return grads

    def finish_reduce(self) -> None:
        """Wait for the reduce-scatter in flight and add its averages to the sharded parameters' ``.grad``."""
        pending, self._reduce = self._reduce, None
        if pending is None:
            return
        pending.work.wait()
        out = pending.buffers[0]
        if self.replicate_group is not None:  # HSDP: the shards' averages across the replicas
            all_reduce(out, ReduceOp.AVG, group=self.replicate_group)
        flat = out.data
        cast = self.shard_device != self.device or self.reduce_dtype is not self.orig_dtype
        for s in self._reduced_slots:
            spec = s.spec
            grad = flat.as_strided(spec.local_shape, spec.strides, s.offset)
            if cast:
                grad = grad.to(device=self.shard_device, dtype=self.orig_dtype)
            if s.sharded.grad is None:
                s.sharded.grad = Tensor(grad)
            else:
                s.sharded.grad.data.add_(grad)
        self._reduced_slots = []

    def __repr__(self) -> str:
        shapes = [list(s.spec.global_shape) for s in self.slots]
        return f"FSDPParamGroup({len(self.slots)} params {shapes}, {math.prod((self.world,))} ranks)"
