"""DeviceMesh: the ranks of a job laid out as an n-dimensional grid, with one process group per
row of each dimension (torch.distributed.device_mesh's names and errors).

    mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp_replicate", "dp_shard"))
    mesh["dp_shard"].get_group()      # the 4 ranks of this node that shard the parameters
    mesh.get_local_rank("dp_replicate")

Rank r sits at ``mesh[i, j, ...]`` in row-major order (rank = i * 4 + j above). Every rank calls
init_device_mesh in the same order, since the groups are made with ``new_group``, which every rank
must call; a mesh the size of the world reuses the default group for its single dimension.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import genesis_autograd as ag
from genesis_autograd import Tensor

from .process_group import GroupMember, ProcessGroup, default_group, new_group


class DeviceMesh:
    """An n-dimensional grid of global ranks and, for each dimension, this rank's process group along it.

    Args:
        device_type: ``"cuda"`` or ``"cpu"``: where the tensors of collectives over the mesh live.
        mesh: the global ranks, a nested list (or Tensor) whose shape is the mesh's.
        mesh_dim_names: a name per dimension (``mesh["dp_shard"]`` slices by name).
    """

    def __init__(
        self,
        device_type: str,
        mesh: Sequence | Tensor,
        *,
        mesh_dim_names: tuple[str, ...] | None = None,
        _groups: list[ProcessGroup] | None = None,
    ) -> None:
        ranks = mesh.tolist() if isinstance(mesh, Tensor) else mesh
        self.device_type = device_type
        self._ranks = ag.tensor(ranks, dtype=ag.int64)
        self._shape = tuple(self._ranks.shape)
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names is not None else None
        self._groups = _groups if _groups is not None else _make_groups(self._ranks)

    # ------------------------------------------------------------ torch's queries
    @property
    def mesh(self) -> Tensor:
        """The global ranks, shaped as the mesh."""
        return self._ranks

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each dimension."""
        return self._shape

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    def size(self, mesh_dim: int | None = None) -> int:
        """The number of ranks in the mesh, or along ``mesh_dim``."""
        return math.prod(self._shape) if mesh_dim is None else self._shape[mesh_dim]

    def get_group(self, mesh_dim: int | str | None = None) -> ProcessGroup:
        """This rank's process group along ``mesh_dim`` (required when the mesh has several dimensions)."""
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(
                f"Found the DeviceMesh have {self.ndim} dimensions",
                "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
            )
        return self._groups[self._dim(mesh_dim or 0)]

    def get_all_groups(self) -> list[ProcessGroup]:
        """This rank's process group along each dimension."""
        return list(self._groups)

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's index along ``mesh_dim`` (its rank in that dimension's group)."""
        if self.ndim > 1 and mesh_dim is None:
            raise RuntimeError(
                f"Found the DeviceMesh have {self.ndim} dimensions",
                "Optional kwarg `mesh_dim` needs to be specified when device_mesh.ndim > 1.",
            )
        return self._groups[self._dim(mesh_dim or 0)].rank()

    def get_rank(self) -> int:
        """This process' global rank."""
        return default_group().rank()

    def get_coordinate(self) -> tuple[int, ...] | None:
        """This rank's index along every dimension, or None when it is not in the mesh."""
        flat = self._ranks.reshape(-1).tolist()
        rank = self.get_rank()
        if rank not in flat:
            return None
        index, coordinate = flat.index(rank), []
        for size in reversed(self._shape):
            coordinate.append(index % size)
            index //= size
        return tuple(coordinate[::-1])

    def __getitem__(self, mesh_dim_names: str | tuple[str, ...]) -> DeviceMesh:
        """The submesh of the named dimensions that holds this rank (one name: a 1-D mesh)."""
        if self.mesh_dim_names is None:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if any(n not in self.mesh_dim_names for n in names):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names are {self.mesh_dim_names}.")
        dims = [self.mesh_dim_names.index(n) for n in names]
        if dims != sorted(dims):
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Mesh dim indices should be in ascending order.")
        if dims == list(range(self.ndim)):
            return self
        coordinate = self.get_coordinate() or (0,) * self.ndim
        index: list[int | slice] = [slice(None) if d in dims else coordinate[d] for d in range(self.ndim)]
        ranks = self._ranks[tuple(index)]
        return DeviceMesh(self.device_type, ranks, mesh_dim_names=names, _groups=[self._groups[d] for d in dims])

    def _dim(self, mesh_dim: int | str) -> int:
        if isinstance(mesh_dim, str):
            if self.mesh_dim_names is None or mesh_dim not in self.mesh_dim_names:
                raise KeyError(
                    f"Mesh dimension '{mesh_dim}' does not exist.",
                    f"Available mesh dimensions are: mesh_dim_names={self.mesh_dim_names}",
                )
            return self.mesh_dim_names.index(mesh_dim)
        return mesh_dim

    def __repr__(self) -> str:
        if self.mesh_dim_names:
            sizes = "(" + ", ".join(f"{n}={s}" for n, s in zip(self.mesh_dim_names, self._shape)) + ")"
        else:
            sizes = str(self._shape)
        return f"DeviceMesh({sizes}, '{self.device_type}')"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceMesh):
            return False
        return (
            self.device_type == other.device_type
            and self._shape == other._shape
            and self._ranks.tolist() == other._ranks.tolist()
            and self.mesh_dim_names == other.mesh_dim_names
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self._shape, str(self._ranks.tolist()), self.mesh_dim_names))


def _make_groups(ranks: Tensor) -> list[ProcessGroup]:
    """For each dimension, this rank's group along it. Every rank makes every row's group (new_group must
    be called by all ranks, in the same order) and keeps the one it is in."""
    world = default_group()
    shape = tuple(ranks.shape)
    me = world.rank()
    groups: list[ProcessGroup] = []
    for dim in range(len(shape)):
        rows = ranks.movedim(dim, -1).reshape(-1, shape[dim]).tolist()
        mine: ProcessGroup | None = None
        for row in rows:
            if sorted(row) == list(world.ranks):  # the whole world along this dimension: the default group
                group: object = world
            else:
                group = new_group(row)
            if me in row and group is not GroupMember.NON_GROUP_MEMBER:
                mine = group  # type: ignore[assignment]
        if mine is None:
            raise RuntimeError(f"rank {me} is not part of the mesh {ranks.tolist()}")
        groups.append(mine)
    return groups


def init_device_mesh(
    device_type: str, mesh_shape: tuple[int, ...], *, mesh_dim_names: tuple[str, ...] | None = None
) -> DeviceMesh:
    """A mesh of shape ``mesh_shape`` over the ranks 0..prod(mesh_shape)-1, row-major, with its process groups.

    Args:
        device_type: ``"cuda"`` or ``"cpu"`` (no index: the current device of each rank).
        mesh_shape: the size of each dimension, e.g. ``(world,)`` or ``(nodes, gpus_per_node)``.
        mesh_dim_names: a unique name per dimension.
    """
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if mesh_dim_names is not None:
        if len(set(mesh_dim_names)) != len(mesh_dim_names):
            raise RuntimeError(
                "Each mesh_dim_name must be unique. "
                f"Found repeated mesh_dim_name in mesh_dim_names {tuple(mesh_dim_names)}"
            )
        if len(mesh_shape) != len(mesh_dim_names):
            raise RuntimeError(
                "mesh_shape and mesh_dim_names should have same length! "
                f"Found len(mesh_dim_names): {len(mesh_dim_names)} and len(mesh_shape):{len(mesh_shape)}."
            )
    if ":" in device_type:
        raise RuntimeError(
            f"Device type with index is not supported but got {device_type}. ",
            "If you maintained a 'torch.device' object, it's recommended to pass in 'device.type'.",
        )
    world = default_group().size()
    total = math.prod(mesh_shape)
    if total > world:
        raise RuntimeError(f"Mesh should not be bigger than default world size {world}, but found {total} ranks!")
    ranks = ag.arange(total, dtype=ag.int64).reshape(*mesh_shape)
    return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names)
