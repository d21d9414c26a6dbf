"""The tensors fully_shard leaves in a module: each rank's rows of a parameter, and what they are rows of.

A parameter of shape ``(D0, *rest)`` is split along dim 0 into ``world`` chunks of ``ceil(D0 / world)``
rows (torch.chunk's sizes, the last ones shorter or empty); rank r holds chunk r. ``ShardSpec`` says
which rows and of what global shape, over which group. ``ShardedParameter`` (what ``module.parameters()``
yields, what the optimizer steps) and ``ShardedTensor`` (a state-dict value: a parameter's shard, or an
optimizer state shaped like one) carry it; ``full_tensor()`` all-gathers the whole tensor. They stand in
for torch's DTensor with a ``Shard(0)`` placement, reduced to what FSDP needs: like a DTensor they report
the global ``shape`` / ``size()`` / ``numel()`` / ``dim()``, while their data (what every op reads, what
``to_local()`` returns, what the optimizer steps and its state is shaped like) is this rank's rows; code
that needs the data's shape reads ``t.data.shape`` (zeros_like, in-place ops). Unlike a DTensor, a
gradient is a plain tensor of the local shape. ``clip_grad_norm_`` reads ``shard_spec`` to know that a
gradient is one rank's part of a larger one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import genesis_autograd as ag
from genesis_autograd import Tensor

from ...nn.parameter import Parameter
from ..collectives import all_gather_into_tensor
from ..device_mesh import DeviceMesh
from ..process_group import ProcessGroup


@dataclass(frozen=True)
class ShardSpec:
    """Which rows of a tensor of ``global_shape`` this rank holds: ``chunk`` rows per rank, this rank's
    from ``row_start`` (``local_rows`` of them), split over ``group`` (the mesh's shard dimension). The derived
    sizes are computed once (a group's size and rank do not change): FSDP reads them per parameter per step."""

    global_shape: tuple[int, ...]
    group: ProcessGroup
    mesh: DeviceMesh | None = None

    @cached_property
    def world(self) -> int:
        """The number of ranks the rows are split over."""
        return self.group.size()

    @cached_property
    def chunk(self) -> int:
        """Rows per rank (the last ranks may hold fewer: padding)."""
        return -(-self.global_shape[0] // self.world)

    @cached_property
    def row_start(self) -> int:
        """The first global row this rank holds."""
        return min(self.group.rank() * self.chunk, self.global_shape[0])

    @cached_property
    def local_rows(self) -> int:
        """How many rows this rank holds (0 past the end)."""
        return max(0, min(self.chunk, self.global_shape[0] - self.group.rank() * self.chunk))

    @cached_property
    def row_numel(self) -> int:
        """Elements per row."""
        return math.prod(self.global_shape[1:])

    @cached_property
    def strides(self) -> tuple[int, ...]:
        """The row-major strides of the global shape (of the unsharded parameter, a view of a flat buffer)."""
        strides, step = [], 1
        for size in reversed(self.global_shape):
            strides.append(step)
            step *= size
        return tuple(reversed(strides))

    @cached_property
    def local_shape(self) -> tuple[int, ...]:
        """The shape of this rank's rows."""
        return (self.local_rows, *self.global_shape[1:])


def gather_full(local: Tensor, spec: ShardSpec) -> Tensor:
    """The whole tensor of ``spec.global_shape``, from every rank's ``local`` rows (a collective: every
    rank of the group calls it)."""
    rows, rest = spec.chunk, spec.global_shape[1:]
    padded = ag.zeros(rows, *rest, dtype=local.dtype, device=local.device)
    if spec.local_rows:
        padded[: spec.local_rows] = local.detach()
    out = ag.empty(spec.world * rows, *rest, dtype=local.dtype, device=local.device)
    all_gather_into_tensor(out, padded, group=spec.group)
    return out[: spec.global_shape[0]].contiguous() if spec.world * rows != spec.global_shape[0] else out


def local_rows_of(full: Tensor, spec: ShardSpec) -> Tensor:
    """This rank's rows of a whole tensor (a view)."""
    return full[spec.row_start : spec.row_start + spec.local_rows]


class _GlobalShape:
    """``shape`` / ``size()`` / ``numel()`` / ``dim()`` / ``ndim`` of the whole tensor, as torch's DTensor
    reports them; the data (what every op reads, what ``to_local()`` returns) is this rank's rows."""

    __slots__ = ()
    shard_spec: ShardSpec

    @property
    def shape(self) -> ag.Size:
        """The global shape (``to_local().shape``: this rank's rows)."""
        return ag.Size(self.shard_spec.global_shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shard_spec.global_shape)

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self.shard_spec.global_shape)

    def size(self, dim: int | None = None) -> Any:
        """The global shape, or with ``dim`` the global size of that dimension."""
        shape = self.shape
        return shape if dim is None else shape[dim]

    def numel(self) -> int:
        """The number of elements of the whole tensor (``to_local().numel()``: this rank's)."""
        return math.prod(self.shard_spec.global_shape)


class ShardedParameter(_GlobalShape, Parameter):
    """A parameter's rows on this rank (see the module docstring): it reports the global shape and numel,
    as torch's DTensor parameters do, while its data, gradient and optimizer state are the rows; a
    Parameter in every other respect."""

    __slots__ = {"shard_spec": "Which rows of which global shape this rank holds (ShardSpec)."}

    def __init__(self, data: Tensor, spec: ShardSpec, requires_grad: bool = True) -> None:
        super().__init__(data, requires_grad)
        self.shard_spec = spec

    def full_tensor(self) -> Tensor:
        """The whole parameter, all-gathered (every rank of the group must call it)."""
        return gather_full(self, self.shard_spec)

    def to_local(self) -> Tensor:
        """This rank's rows, as a plain tensor sharing memory."""
        return self.detach()

    def __repr__(self) -> str:
        return f"ShardedParameter(global_shape={list(self.shard_spec.global_shape)}, local=\n{self.detach()!r})"

    def __deepcopy__(self, memo: dict) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        out = ShardedParameter(self.detach().clone(), self.shard_spec, self.requires_grad)
        memo[id(self)] = out
        return out


class ShardedTensor(_GlobalShape, Tensor):
    """A state-dict value that is this rank's rows of a larger tensor (a parameter's, or an optimizer
    state shaped like the parameter's shard); it reports the global shape, as a DTensor does."""

    __slots__ = {"shard_spec": "Which rows of which global shape this rank holds (ShardSpec)."}

    def __init__(self, data: Tensor, spec: ShardSpec) -> None:
        super().__init__(data.data)
        self.shard_spec = spec

    def full_tensor(self) -> Tensor:
        """The whole tensor, all-gathered (every rank of the group must call it)."""
        return gather_full(self, self.shard_spec)

    def to_local(self) -> Tensor:
        """This rank's rows, as a plain tensor sharing memory."""
        return self.detach()
