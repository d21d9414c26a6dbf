"""IndexPlan: any index torch accepts, parsed once into a plan a backend can execute.

An index is split in two steps, as torch does it:

1. a *view* of the array (ints, slices, None, Ellipsis; every advanced position kept
   as a full slice): zero-copy, the geometry of ``shape.basic_index``;
2. the *advanced* indices (integer arrays, bool masks) over dims of that view. Masks
   are turned into one integer array per dim they cover (their nonzero coordinates);
   then all integer arrays broadcast to one shape B.

The result of x[index] has B where the advanced dims were when they are adjacent,
and B first when other dims separate them (torch's / numpy's placement rule);
``Layout`` computes that placement. Executing the plan (the gather, the scatter) is
the backend's business; nothing here touches data.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .shape import broadcast_shapes


class IndexKind(Enum):
    VIEW = "view"  # ints, slices, None, Ellipsis: a view, no copy
    GATHER = "gather"  # advanced indices read: a new array
    SCATTER = "scatter"  # advanced indices written: index_put
    COPY = "copy"  # an array written through a view
    FILL = "fill"  # a scalar written through a view


_INT_DTYPES = frozenset({"int64", "int32", "int16", "int8"})
_MASK_DTYPES = frozenset({"bool", "uint8"})
_GATHER_DTYPES = frozenset({"int64", "int32"})


def dtype_name(array: Any) -> str:
    """'int64', 'bool', ... for a native array of any backend (torch, numpy, genesis_storage)."""
    return str(array.dtype).removeprefix("torch.")


def is_array(item: Any) -> bool:
    return hasattr(item, "shape") and hasattr(item, "dtype") and not isinstance(item, int | float | bool)


@dataclass(frozen=True)
class Advanced:
    """One advanced index: an integer array for dim ``dim`` of the view, or a bool mask
    covering dims ``dim .. dim + mask.ndim - 1``. ``array`` may also be a Python list of ints
    (what a bool scalar turns into: [0] for True, [] for False)."""

    dim: int
    array: Any
    is_mask: bool = False


@dataclass(frozen=True)
class IndexPlan:
    kind: IndexKind
    view: tuple  # basic index (ints, slices, None) giving the viewed array
    advanced: tuple[Advanced, ...] = ()


def normalize(index: Any) -> tuple:
    """The index as a tuple of items (a list holding slices, None, ... or arrays counts as a tuple)."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and any(
        i is None or i is Ellipsis or isinstance(i, slice | list) or is_array(i) for i in index
    ):
        return tuple(index)  # numpy's old rule, which torch keeps: such a list is a tuple
    return (index,)


def _as_int(item: Any) -> int | None:
    if isinstance(item, bool):
        return None
    try:
        return operator.index(item)
    except TypeError:
        return None


def parse(shape: tuple[int, ...], index: Any, *, write: bool = False, value_is_array: bool = False) -> IndexPlan:
    """The plan of x[index] (``write``: of x[index] = value) for an array of ``shape``.

    ``index`` holds Python ints, bools, slices, None, Ellipsis and native arrays (lists and
    0-d arrays converted by the backend beforehand). Raises IndexError as torch does.
    """
    items = normalize(index)
    ndim = len(shape)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = 0
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, bool):
            continue
        if is_array(item) and dtype_name(item) in _MASK_DTYPES:
            consumed += len(item.shape)
        else:
            consumed += 1
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    view: list = []
    advanced: list[Advanced] = []
    src_dim = 0  # dim of x the next item consumes
    view_dim = 0  # dim of the viewed array the next item lands on
    for item in items:
        if item is Ellipsis:
            n = ndim - consumed
            view.extend([slice(None)] * n)
            src_dim += n
            view_dim += n
        elif item is None:
            view.append(None)
            view_dim += 1
        elif isinstance(item, bool):  # torch: a new dim of size 1, then indexed by [0] or []
            view.append(None)
            advanced.append(Advanced(view_dim, [0] if item else []))
            view_dim += 1
        elif isinstance(item, slice):
            view.append(item)
            src_dim += 1
            view_dim += 1
        elif is_array(item):
            name = dtype_name(item)
            if name in _MASK_DTYPES:
                k = len(item.shape)
                for j, size in enumerate(item.shape):
                    if size != shape[src_dim + j]:
                        raise IndexError(
                            f"The shape of the mask {list(item.shape)} at index {j} does not match the shape "
                            f"of the indexed tensor {list(shape)} at index {src_dim + j}"
                        )
                view.extend([slice(None)] * k)
                advanced.append(Advanced(view_dim, item, is_mask=True))
                src_dim += k
                view_dim += k
            elif name in _INT_DTYPES:
                view.append(slice(None))
                advanced.append(Advanced(view_dim, item))
                src_dim += 1
                view_dim += 1
            else:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        else:
            i = _as_int(item)
            if i is None:
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                    "valid indices (got " + type(item).__name__ + ")"
                )
            view.append(i)
            src_dim += 1
    if advanced:
        kind = IndexKind.SCATTER if write else IndexKind.GATHER
    elif write:
        kind = IndexKind.COPY if value_is_array else IndexKind.FILL
    else:
        kind = IndexKind.VIEW
    return IndexPlan(kind, tuple(view), tuple(advanced))


@dataclass(frozen=True)
class Layout:
    """Where the broadcast index shape B lands in the result of x[index].

    ``dims``: the indexed dims of the view, one per integer array (masks expanded), increasing;
    ``rest``: the other dims of the view, in order; ``at``: how many rest dims come before B.
    The result is rest_shape[:at] + B + rest_shape[at:].
    """

    dims: tuple[int, ...]
    rest: tuple[int, ...]
    bshape: tuple[int, ...]
    at: int
    shape: tuple[int, ...]

    def to_result(self) -> tuple[int, ...]:
        """Permutation taking a B-first array (B + rest_shape) to the result's dim order."""
        nb, at = len(self.bshape), self.at
        order = list(range(nb, nb + at)) + list(range(nb)) + list(range(nb + at, nb + len(self.rest)))
        return tuple(order)

    def to_b_first(self) -> tuple[int, ...]:
        """Permutation taking the result's dim order to B + rest_shape."""
        nb, at = len(self.bshape), self.at
        return tuple(range(at, at + nb)) + tuple(range(at)) + tuple(range(at + nb, nb + len(self.rest)))


def layout(view_shape: tuple[int, ...], dims: tuple[int, ...], index_shapes: list[tuple[int, ...]]) -> Layout:
    """The Layout of advanced integer indices of ``index_shapes`` over ``dims`` of the view."""
    bshape: tuple[int, ...] = ()
    for s in index_shapes:
        try:
            bshape = broadcast_shapes(bshape, s)
        except RuntimeError:
            shapes = ", ".join(str(list(t)) for t in index_shapes)
            raise IndexError(
                f"shape mismatch: indexing tensors could not be broadcast together with shapes [{shapes}]"
            ) from None
    dims = tuple(dims)
    taken = set(dims)
    rest = tuple(d for d in range(len(view_shape)) if d not in taken)
    adjacent = dims == tuple(range(dims[0], dims[0] + len(dims)))
    at = dims[0] if adjacent else 0
    rest_shape = tuple(view_shape[d] for d in rest)
    return Layout(dims, rest, bshape, at, rest_shape[:at] + bshape + rest_shape[at:])


__all__ = ["Advanced", "IndexKind", "IndexPlan", "Layout", "dtype_name", "is_array", "layout", "normalize", "parse"]
