"""Indexing on CUDA: x[index], x[index] = value and index_put_, executing the IndexPlan of
``genesis_ndarray.getitem`` with genesis_storage views and genesis_kernels.

VIEW (ints, slices, None, Ellipsis only): ``shape.basic_index`` geometry over the same storage. Masks become integer
indices through ``nonzero`` (a whole-array mask read goes straight to ``masked_select``).
GATHER: every index is bounds-checked and wrapped (``index_put`` into a zero-stride
dummy raises torch's IndexError), folded into one element offset per index position
(``sum index_j * stride_j``), and read with ``gather`` over a strided view of the
storage whose gathered dim steps one element. SCATTER: ``index_put`` over the view
permuted so the indexed dims lead, values permuted to match (accumulating with
atomics, so repeated indices add up).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

import genesis_kernels as gk
import genesis_storage as gs

from ...determinism import alert_not_deterministic
from ...dtypes import int64
from ...getitem import IndexKind, Layout, layout, normalize, parse
from ...shape import basic_index, broadcast_shapes
from .common import View, expand_to, forget_range, reg, stream_of, value_range
from .elementwise import binary, binary_
from .memory import cast, copy_, fill_

_MAX_PUT = 4  # index buffers gk.index_put takes at once
_SCALAR_INDEX = frozenset({"int64", "int32", "int16", "int8", "uint8", "bool"})


# ------------------------------------------------------------------ the index, on the device
def _scalar_of(a: View):
    gk.capture.forbid_readback("indexing with a 0-d integer tensor", "its value selects a view, on the host")
    value = gs.to_numpy(a).reshape(()).item()
    return bool(value) if a.dtype in ("bool", "uint8") else value


def _prepare(v: View, index) -> tuple:
    """The index's items, with lists / numpy / torch arrays copied to v's device and 0-d arrays
    read back as Python scalars (torch does the same: a 0-d integer index selects)."""
    items: list[Any] = []  # scalars, slices, None, Ellipsis and index views
    for item in normalize(index):
        if item is None or item is Ellipsis or isinstance(item, slice | bool | int):
            items.append(item)
            continue
        if isinstance(item, View):
            if item.device != v.device:
                raise RuntimeError(
                    f"indices should be either on cpu or on the same device as the indexed tensor (cuda:{v.device})"
                )
            items.append(_scalar_of(item) if not item.shape and item.dtype in _SCALAR_INDEX else item)
            continue
        if isinstance(item, np.generic):
            items.append(item.item())
            continue
        if isinstance(item, list | tuple | np.ndarray) or hasattr(item, "__array__"):
            host = np.asarray(item)
            if host.dtype == object:
                raise IndexError("an index list must hold integers or bools")
            if host.size == 0 and host.dtype.kind == "f":
                host = host.astype(np.int64)  # x[[]]: an empty integer index, as torch
            items.append(host.item() if host.ndim == 0 else _upload(host, v.device))
            continue
        try:
            items.append(operator.index(item))
        except TypeError:
            items.append(item)  # parse raises torch's IndexError
    return tuple(items)


def _upload(host: np.ndarray, device: int) -> View:
    """A host index (list, numpy array) on the device; during a capture genesis_storage stages it
    in pinned memory the graph owns, so every replay reads the same index."""
    return gs.from_numpy(host, device)


def _view(v: View, view_index: tuple) -> View:
    shape, strides, offset = basic_index(v.shape, v.strides, v.offset, view_index)
    return v.as_strided(shape, strides, offset)


def _nonzero(mask: View) -> View:
    n = gk.nonzero_count(mask, stream=stream_of(mask), op="indexing with a boolean mask")
    out = gs.empty((n, len(mask.shape)), "int64", mask.device)
    if n:
        gk.nonzero(mask, out, stream=stream_of(mask))
    return out


def _resolve(base: View, advanced) -> tuple[tuple[int, ...], list[View]]:
    """(indexed dims of base, one int64/int32 index array per dim): masks become nonzero columns."""
    dims: list[int] = []
    arrays: list[View] = []
    for adv in advanced:
        a = adv.array
        if isinstance(a, list):
            a = _upload(np.asarray(a, dtype=np.int64), base.device)
        if adv.is_mask:
            nz = _nonzero(a)
            n = nz.shape[0]
            for j in range(len(a.shape)):
                dims.append(adv.dim + j)
                arrays.append(nz.as_strided((n,), (nz.strides[0],), nz.offset + j if n else nz.offset))
        else:
            if a.dtype not in ("int64", "int32"):
                a = cast(a, int64)
            dims.append(adv.dim)
            arrays.append(a)
    return tuple(dims), arrays


def _permuted(v: View, order) -> View:
    return v.as_strided(tuple(v.shape[d] for d in order), tuple(v.strides[d] for d in order), v.offset)


def _check(base: View, dims, arrays: list[View], bshape) -> None:
    """IndexError (torch's message) for any index outside [-size, size) of its dim."""
    if not math.prod(bshape):
        return
    scratch = gs.empty((1,), "int64", base.device)
    for s in range(0, len(arrays), _MAX_PUT):
        group = arrays[s : s + _MAX_PUT]
        sizes = tuple(base.shape[d] for d in dims[s : s + _MAX_PUT])
        dummy = scratch.as_strided(sizes, (0,) * len(sizes), 0)  # every write lands on one scratch element
        gk.index_put(dummy, tuple(expand_to(a, bshape) for a in group), 0, stream=stream_of(base))


def _offsets(base: View, dims, arrays: list[View], bshape) -> View:
    """Element offsets (int64, shape B) of each index position within base's indexed dims."""
    _check(base, dims, arrays, bshape)
    total = None
    for d, a in zip(dims, arrays):
        a = a if a.dtype == "int64" else cast(a, int64)
        part = binary("mul", binary("remainder", a, base.shape[d]), base.strides[d])
        total = part if total is None else binary("add", total, part)
    return expand_to(total, bshape)


# ------------------------------------------------------------------ get
def _advanced_getitem(v: View, index) -> View:
    plan = parse(v.shape, _prepare(v, index))
    base = _view(v, plan.view)
    if plan.kind is IndexKind.VIEW:
        return base
    adv = plan.advanced
    if len(adv) == 1 and adv[0].is_mask and adv[0].array.dtype == "bool" and len(adv[0].array.shape) == len(base.shape):
        mask = adv[0].array
        n = gk.nonzero_count(mask, stream=stream_of(v), op="indexing with a boolean mask")
        out = gs.empty((n,), base.dtype, base.device)
        if out.shape[0]:
            gk.masked_select(base, mask, out, stream=stream_of(v))
        return out
    dims, arrays = _resolve(base, adv)
    lay = layout(base.shape, dims, [a.shape for a in arrays])
    return _gather(base, lay, arrays)


def _gather(base: View, lay: Layout, arrays: list[View]) -> View:
    out = gs.empty(lay.shape, base.dtype, base.device)
    if not math.prod(lay.shape):  # nothing to read: torch checks no index either
        return out
    offsets = _offsets(base, lay.dims, arrays, lay.bshape)
    nb, at = len(lay.bshape), lay.at
    sizes = tuple(base.shape[d] for d in lay.rest)
    strides = tuple(base.strides[d] for d in lay.rest)
    extent = 1 + sum((base.shape[d] - 1) * base.strides[d] for d in lay.dims)
    # x walks the rest dims as base does; along B it is one element-stepping dim (the last of B)
    # that the offsets pick from, the other B dims repeat it (stride 0).
    x = base.as_strided(
        sizes[:at] + lay.bshape[:-1] + (extent,) + sizes[at:],
        strides[:at] + (0,) * (nb - 1) + (1,) + strides[at:],
        base.offset,
    )
    idx = offsets.as_strided(lay.shape, (0,) * at + offsets.strides + (0,) * (len(sizes) - at), offsets.offset)
    gk.gather(x, at + nb - 1, idx, out, stream=stream_of(base))
    return out


# ------------------------------------------------------------------ set
def _advanced_setitem(v: View, index, value, accumulate: bool = False) -> None:
    """v[index] = value, or += with ``accumulate`` (repeated indices then add up)."""
    is_array = isinstance(value, View)
    plan = parse(v.shape, _prepare(v, index), write=True, value_is_array=is_array)
    base = _view(v, plan.view)
    if plan.kind is not IndexKind.SCATTER:
        if accumulate:  # a basic index selects each element once: an in-place add
            binary_("add", base, value)
        elif is_array:
            copy_(base, value)
        else:
            fill_(base, value)
        return
    if accumulate:  # atomics: repeated indices add up in a varying order
        alert_not_deterministic("index_put_cuda_ with accumulate=True")
    dims, arrays = _resolve(base, plan.advanced)
    lay = layout(base.shape, dims, [a.shape for a in arrays])
    values = value
    if is_array:
        if value.device != base.device:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"cuda:{base.device} and cuda:{value.device}!"
            )
        try:
            fits = broadcast_shapes(lay.shape, value.shape) == lay.shape
        except RuntimeError:
            fits = False
        if not fits:
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                f"indexing result of shape {list(lay.shape)}"
            )
        values = _permuted(expand_to(value, lay.shape), lay.to_b_first())
    if len(arrays) <= _MAX_PUT:
        target = _permuted(base, lay.dims + lay.rest)
        idx = tuple(expand_to(a, lay.bshape) for a in arrays)
        ranges = [value_range(a) for a in arrays]  # host-known index bounds (arange, clamp, ...): no wait
        gk.index_put(target, idx, values, accumulate=accumulate, ranges=ranges, stream=stream_of(base))
        return
    # More index arrays than index_put takes: one offset per position over a flat, element-stepping dim.
    if accumulate and base.dtype not in ("float32", "float64", "int32", "int64"):
        raise NotImplementedError(f"accumulating index_put_ with more than {_MAX_PUT} index arrays on {base.dtype}")
    offsets = _offsets(base, lay.dims, arrays, lay.bshape)
    extent = 1 + sum((base.shape[d] - 1) * base.strides[d] for d in lay.dims)
    flat = base.as_strided(
        (extent,) + tuple(base.shape[d] for d in lay.rest), (1,) + tuple(base.strides[d] for d in lay.rest), base.offset
    )
    gk.index_put(flat, (offsets,), values, accumulate=accumulate, stream=stream_of(base))


# ------------------------------------------------------------------ the registered ops
def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or (isinstance(i, int | slice) and not isinstance(i, bool)) for i in items)


@reg("getitem")
def getitem(input: View, index) -> View:
    if not _is_basic(index):  # advanced indices: the IndexPlan's gather
        return _advanced_getitem(input, index)
    shape, strides, offset = basic_index(input.shape, input.strides, input.offset, index)
    return input.as_strided(shape, strides, offset)


@reg("setitem")
def setitem(input: View, index, value) -> None:
    forget_range(input)
    if not _is_basic(index):
        _advanced_setitem(input, index, value)
        return
    target = getitem(input, index)
    if isinstance(value, View):
        copy_(target, value)
    else:
        fill_(target, value)


@reg("index_put_")
def index_put_(input: View, indices, values, accumulate: bool) -> None:
    forget_range(input)
    _advanced_setitem(input, indices, values, accumulate)


__all__ = ["getitem", "index_put_", "setitem"]
