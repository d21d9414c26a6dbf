"""Memory formats (torch.memory_format): the order in which a dense tensor's dims lie in memory.

``contiguous_format`` is row-major; ``channels_last`` (4-D) and ``channels_last_3d`` (5-D) put the
channel dim innermost (NHWC / NDHWC strides); ``preserve_format`` keeps a dense tensor's own order.
Every genesis op accepts any strides, so a format is only a layout choice: a tensor is put in one by
permuting its dims into the memory order, making that contiguous, and permuting back."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from .tensor import Tensor

_P = TypeVar("_P", bound="_Permutable")


class memory_format:
    """A dense tensor's order of dims in memory (torch.memory_format)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"genesis.{self._name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
legacy_contiguous_format = memory_format("legacy_contiguous_format")

# the channels-last formats: the rank they need and the order of dims in memory, outermost first
_CHANNELS_LAST = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def _check(fmt: object) -> memory_format:
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be a genesis.memory_format, not {type(fmt).__name__}")
    return fmt


def channels_last_order(fmt: memory_format, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The memory order of a channels-last format for a tensor of ``shape``; torch's error for a wrong rank."""
    rank, order = _CHANNELS_LAST[fmt]
    if len(shape) != rank:
        name = "channels_last" if rank == 4 else "channels_last_3d"
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return order


def _dense_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The order of dims in memory (outermost first) when ``strides`` lay ``shape`` out densely with no
    overlap (in some order), else None. Ties (size-1 dims) keep the logical order, as torch's."""
    order = sorted(range(len(shape)), key=lambda d: -strides[d])  # a stable sort: ties keep dim order
    expected = 1
    for d in reversed(order):
        if shape[d] != 1 and strides[d] != expected:
            return None
        expected *= shape[d]
    return tuple(order)


def memory_order(fmt: object, shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """The order of dims in memory, outermost first, that ``fmt`` asks of a tensor of ``shape`` and
    ``strides``: preserve_format keeps a dense tensor's own order (row-major for any other)."""
    fmt = _check(fmt)
    if fmt in _CHANNELS_LAST:
        return channels_last_order(fmt, shape)
    if fmt is preserve_format:
        dense = _dense_order(shape, strides)
        if dense is not None:
            return dense
        return memory_order(suggest_memory_format(shape, strides), shape, strides)  # torch's fallback
    return tuple(range(len(shape)))


def suggest_memory_format(shape: tuple[int, ...], strides: tuple[int, ...]) -> memory_format:
    """The format whose order of dims the strides follow (torch's suggest_memory_format): a channels-last
    one for a 4-D / 5-D tensor whose strides decrease in that order, else contiguous_format."""
    by_stride = tuple(sorted(range(len(shape)), key=lambda d: -strides[d]))
    for fmt, (rank, order) in _CHANNELS_LAST.items():
        if len(shape) == rank and by_stride == order and not is_in_format(shape, strides, contiguous_format):
            return fmt
    return contiguous_format


def inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``order``."""
    return tuple(order.index(d) for d in range(len(order)))


def strides_for(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """The dense strides of ``shape`` with its dims in memory in ``order`` (outermost first)."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def is_in_format(shape: tuple[int, ...], strides: tuple[int, ...], fmt: object) -> bool:
    """Whether a tensor of ``shape`` and ``strides`` is contiguous in ``fmt`` (size-1 dims' strides do
    not count, as torch's is_contiguous)."""
    fmt = _check(fmt)
    if fmt in _CHANNELS_LAST:
        rank, order = _CHANNELS_LAST[fmt]
        if len(shape) != rank:
            return False
    elif fmt in (contiguous_format, legacy_contiguous_format):
        order = tuple(range(len(shape)))
    else:
        raise RuntimeError(f"is_contiguous: unsupported memory format {fmt}")
    want = strides_for(shape, order)
    return all(n == 1 or s == w for n, s, w in zip(shape, strides, want))


def in_order(x: Tensor, order: tuple[int, ...], copy: bool = False) -> Tensor:
    """``x`` laid out densely with its dims in memory in ``order`` (outermost first), differentiably: a
    permute, contiguous and the inverse permute. ``x`` itself when it is already, unless ``copy``."""
    physical = x.permute(*order)
    packed = physical.contiguous()
    if packed is physical:  # already dense in this order: contiguous() made no copy
        if not copy:
            return x
        packed = physical.clone()  # a contiguous tensor's clone is contiguous
    return packed.permute(*inverse(order))


def laid_out(x: Tensor, fmt: object, copy: bool) -> Tensor:
    """``x`` with the layout ``fmt`` asks for (see :func:`in_order`); ``x`` itself when it has it already
    (size-1 dims' strides aside, as torch's is_contiguous), unless ``copy``."""
    shape, strides = tuple(x.shape), tuple(x.stride())
    if not copy and fmt is not preserve_format and is_in_format(shape, strides, fmt):
        return x
    return in_order(x, memory_order(fmt, shape, strides), copy)


class _Permutable(Protocol):
    def permute(self, *dims: int) -> Any: ...


def new_in_layout(
    make: Callable[[tuple[int, ...]], _P], like_shape: tuple[int, ...], like_strides: tuple[int, ...], fmt: object
) -> _P:
    """A new array of ``like_shape`` laid out as ``fmt`` asks of a tensor with ``like_strides``: ``make``
    builds it (a Tensor or an NDArray) from its physical shape, the dims in memory order; it is then
    permuted back."""
    order = memory_order(fmt, like_shape, like_strides)
    if order == tuple(range(len(like_shape))):
        return make(like_shape)
    return make(tuple(like_shape[d] for d in order)).permute(*inverse(order))
