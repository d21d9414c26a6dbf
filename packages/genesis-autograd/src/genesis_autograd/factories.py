"""Tensor factories: genesis.tensor, zeros, randn, ... and their *_like forms."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import genesis_ndarray as nd

from . import functions as F
from . import memory_format as mf
from .functions.random import sample
from .tensor import Tensor
from .tensor_base import Scalar

if TYPE_CHECKING:
    import numpy as np

# What the dtype and device arguments take (as_dtype and as_device also read torch and numpy dtypes, a torch
# device and Python types; these are the documented forms).
DTypeLike = nd.DType | str | None
DeviceLike = nd.Device | str | int | None


def _sizes(shape: tuple[int | Sequence[int], ...]) -> tuple[int | Sequence[int], ...]:
    """``shape`` as given (several ints or one sequence), refused as torch does when a size is
    negative; checked here so that every device raises the same error."""
    if len(shape) == 1 and shape[0].__class__ is int and shape[0] >= 0:  # one plain size: nothing to check
        return shape
    sizes = list(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else list(shape)
    for s in sizes:
        if isinstance(s, int) and s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {sizes}")
    return shape


def _check_arange(start: Scalar, end: Scalar, step: Scalar) -> None:
    """torch's checks of arange's bounds, before any device sees them."""
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError(
            f"upper bound and lower bound inconsistent with step sign (start={start}, end={end}, step={step})"
        )


def _leaf(array: nd.NDArray, requires_grad: bool) -> Tensor:
    t = Tensor(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor with a copy of ``data``.

    Args:
        data: a number, (nested) lists or tuples of numbers, a numpy array or a Tensor.
        dtype: the dtype; by default inferred from ``data``: Python floats give the default dtype,
            ints int64, bools bool; a numpy array keeps its dtype.
        device: the device (default: cpu).
        requires_grad: make the result a leaf that requires grad.
    """
    if isinstance(data, Tensor):
        data = data.data
    return _leaf(nd.array(data, dtype=dtype, device=device), requires_grad)


def as_tensor(data: Any, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """``data`` as a tensor, without a copy where possible: a Tensor of that dtype and device comes
    back as it is, a numpy array (to cpu, dtype unchanged) shares its memory; otherwise as tensor().
    """
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if hasattr(data, "__array_interface__") and device in (None, "cpu") and dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """Shares memory with the numpy array (cpu)."""
    return Tensor(nd.from_numpy(array))


def from_dlpack(obj: Any) -> Tensor:
    """Zero-copy import of a DLPack producer (e.g. a torch tensor), on cpu or cuda."""
    return Tensor(nd.from_dlpack(obj))


def zeros(
    *shape: int | Sequence[int], dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of zeros of the given shape (``zeros(2, 3)`` or ``zeros((2, 3))``).

    Args:
        shape: the sizes, as several ints or one sequence.
        dtype: the dtype (default: the default dtype, ``genesis.get_default_dtype()``).
        device: the device (default: cpu).
        requires_grad: make the result a leaf that requires grad.
    """
    return _leaf(nd.zeros(*_sizes(shape), dtype=dtype, device=device), requires_grad)


def ones(
    *shape: int | Sequence[int], dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of ones of the given shape (``ones(2, 3)`` or ``ones((2, 3))``).

    Args:
        shape: the sizes, as several ints or one sequence.
        dtype: the dtype (default: the default dtype, ``genesis.get_default_dtype()``).
        device: the device (default: cpu).
        requires_grad: make the result a leaf that requires grad.
    """
    return _leaf(nd.ones(*_sizes(shape), dtype=dtype, device=device), requires_grad)


def empty(
    *shape: int | Sequence[int],
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
    memory_format: mf.memory_format = mf.contiguous_format,
) -> Tensor:
    """A tensor of the given shape whose values are whatever the memory held.

    Args:
        shape: the sizes, as several ints or one sequence.
        dtype: the dtype (default: the default dtype, ``genesis.get_default_dtype()``).
        device: the device (default: cpu).
        requires_grad: make the result a leaf that requires grad.
        memory_format: the layout: row-major, or ``genesis.channels_last`` (4-D) / ``channels_last_3d`` (5-D).
    """
    sizes = _sizes(shape)
    if memory_format is mf.contiguous_format:
        return _leaf(nd.empty(*sizes, dtype=dtype, device=device), requires_grad)
    if memory_format is mf.preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    first = sizes[0] if sizes else ()
    flat = tuple(int(n) for n in first) if len(sizes) == 1 and isinstance(first, Sequence) else tuple(map(int, sizes))  # type: ignore[arg-type]
    row_major = mf.strides_for(flat, tuple(range(len(flat))))
    array = mf.new_in_layout(lambda s: nd.empty(*s, dtype=dtype, device=device), flat, row_major, memory_format)
    return _leaf(array, requires_grad)


def full(
    size: Sequence[int],
    fill_value: Scalar,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``.

    Args:
        size: the sizes.
        fill_value: the value; its type gives the dtype when none is given (bool, int64 for an int,
            the default dtype for a float).
        device: the device (default: cpu).
        requires_grad: make the result a leaf that requires grad.
    """
    _sizes((tuple(size),))
    return _leaf(nd.full(tuple(size), fill_value, dtype=dtype, device=device), requires_grad)


def arange(
    start: Scalar,
    end: Scalar | None = None,
    step: Scalar = 1,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """The 1-D tensor start, start + step, ... up to but excluding ``end``; ``arange(n)`` is 0 .. n-1.

    The dtype is int64 when all of start, end and step are ints, else the default dtype.
    """
    _check_arange(0 if end is None else start, start if end is None else end, step)
    return _leaf(nd.arange(start, end, step, dtype=dtype, device=device), requires_grad)


def linspace(
    start: float,
    end: float,
    steps: int,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (a 1-D tensor)."""
    return _leaf(nd.linspace(start, end, steps, dtype=dtype, device=device), requires_grad)


def eye(
    n: int, m: int | None = None, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """A 2-D tensor of n rows and m (default n) columns with ones on the diagonal and zeros elsewhere."""
    return _leaf(nd.eye(n, m, dtype=dtype, device=device), requires_grad)


def rand(
    *shape: int | Sequence[int], dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of numbers drawn uniformly from [0, 1), from the device's generator.

    Args:
        shape: the sizes, as several ints or one sequence.
        dtype: the dtype (default: the default dtype, ``genesis.get_default_dtype()``).
        device: the device (default: cpu).
        requires_grad: make the result a leaf that requires grad.
    """
    return _leaf(nd.rand(*_sizes(shape), dtype=dtype, device=device), requires_grad)


def randn(
    *shape: int | Sequence[int], dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of numbers drawn from the standard normal distribution, from the device's generator.

    Args:
        shape: the sizes, as several ints or one sequence.
        dtype: the dtype (default: the default dtype, ``genesis.get_default_dtype()``).
        device: the device (default: cpu).
        requires_grad: make the result a leaf that requires grad.
    """
    return _leaf(nd.randn(*_sizes(shape), dtype=dtype, device=device), requires_grad)


def randint(
    low: int = 0,
    high: int | Sequence[int] | None = None,
    size: Sequence[int] | None = None,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of shape ``size`` of integers drawn uniformly from [low, high); ``randint(high, size)``
    (and ``randint(high=h, size=s)``) draws from [0, high). The dtype is int64 unless given.
    """
    if high is not None and not isinstance(high, int) and not size:  # randint(high, size)
        size = tuple(high)
        low, high = 0, low
    elif high is None:  # randint(high, size=...)
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required argument: 'size'")
    if not isinstance(high, int):
        raise TypeError(f"randint(): high must be an int, got {type(high).__name__}")
    shape = tuple(size)
    _sizes((shape,))
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _leaf(nd.randint(low, high, shape, dtype=dtype, device=device), requires_grad)


def normal(
    mean: Tensor | float = 0.0,
    std: Tensor | float = 1.0,
    size: Sequence[int] | None = None,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """Numbers drawn from normal distributions N(mean, std^2).

    ``mean`` and ``std`` are numbers (then ``size`` gives the shape) or tensors, broadcast together
    (then no size); the gradient to tensor arguments is zero, as torch's.
    """
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        if size is None:
            raise TypeError("normal() with a number mean and std needs a size")
        return _leaf(nd.randn(*size, dtype=dtype, device=device) * std + mean, requires_grad)
    like = mean if isinstance(mean, Tensor) else std
    assert isinstance(like, Tensor)  # one of mean and std is a Tensor here
    m = mean.data if isinstance(mean, Tensor) else mean
    s = std.data if isinstance(std, Tensor) else std
    if isinstance(std, Tensor) and std.numel() and (std.data < 0).any().item():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = nd.shape.broadcast_shapes(
        mean.shape if isinstance(mean, Tensor) else (), std.shape if isinstance(std, Tensor) else ()
    )
    values = nd.randn(*shape, dtype=like.dtype, device=like.device) * s + m
    return sample(values.astype(like.dtype), mean, std)


def randperm(n: int, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 unless ``dtype`` says otherwise)."""
    return _leaf(nd.randperm(n, dtype=dtype, device=device), requires_grad)


def bernoulli(input: Tensor, p: Tensor | float | None = None) -> Tensor:
    """0 / 1 in input's dtype, each 1 with the probability at its place in ``input`` (or with ``p``);
    the gradient to ``input`` is zero, as torch's.
    """
    return input.bernoulli(p)


def get_rng_state(device: DeviceLike = None) -> Tensor:
    """The generator state of ``device`` (default cpu), a uint8 tensor on the cpu."""
    return Tensor(nd.get_rng_state(device))


def set_rng_state(state: Tensor, device: DeviceLike = None) -> None:
    """Restore a state from get_rng_state(device): the draws that followed it come again."""
    nd.set_rng_state(state.data if isinstance(state, Tensor) else state, device)


def seed() -> int:
    """Seed every device's generator with a non-deterministic number, and return it."""
    return nd.seed()


def initial_seed() -> int:
    """The seed last given to the generators (the cpu generator's initial seed, as torch.initial_seed)."""
    return nd.initial_seed()


def _like(
    t: Tensor,
    make: Callable[..., nd.NDArray],
    dtype: DTypeLike,
    device: DeviceLike,
    requires_grad: bool,
    memory_format: mf.memory_format,
) -> Tensor:
    """A new leaf shaped like ``t`` (its dtype and device unless given), laid out as ``memory_format``
    asks of ``t`` (preserve: ``t``'s own strides when it is dense); ``make(shape, dtype, device)`` builds
    the NDArray from its physical shape."""
    dt, dev = dtype or t.dtype, device or t.device
    shape = tuple(t.data.shape)  # the data's: a sharded parameter reports its global shape, holds its shard
    if memory_format is mf.preserve_format and t.is_contiguous():  # the common call: row-major
        return _leaf(make(shape, dt, dev), requires_grad)
    array = mf.new_in_layout(lambda s: make(s, dt, dev), shape, tuple(t.data.stride()), memory_format)
    return _leaf(array, requires_grad)


def zeros_like(
    t: Tensor,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
    memory_format: mf.memory_format = mf.preserve_format,
) -> Tensor:
    """A tensor of zeros shaped like ``t``, with its dtype and device unless given (``memory_format``:
    the layout; by default ``t``'s own when it is dense)."""
    return _like(t, lambda s, dt, dev: nd.zeros(*s, dtype=dt, device=dev), dtype, device, requires_grad, memory_format)


def ones_like(
    t: Tensor,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
    memory_format: mf.memory_format = mf.preserve_format,
) -> Tensor:
    """A tensor of ones shaped like ``t``, with its dtype and device unless given (``memory_format`` as
    :func:`zeros_like`)."""
    return _like(t, lambda s, dt, dev: nd.ones(*s, dtype=dt, device=dev), dtype, device, requires_grad, memory_format)


def empty_like(
    t: Tensor,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
    memory_format: mf.memory_format = mf.preserve_format,
) -> Tensor:
    """A tensor of uninitialised values shaped like ``t``, with its dtype and device unless given
    (``memory_format`` as :func:`zeros_like`)."""
    return _like(t, lambda s, dt, dev: nd.empty(*s, dtype=dt, device=dev), dtype, device, requires_grad, memory_format)


def full_like(
    t: Tensor,
    fill_value: Scalar,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
    memory_format: mf.memory_format = mf.preserve_format,
) -> Tensor:
    """A tensor filled with ``fill_value`` with ``t``'s shape, and its dtype and device unless given
    (``memory_format`` as :func:`zeros_like`)."""

    def make(shape: tuple[int, ...], dt: Any, dev: Any) -> nd.NDArray:
        return nd.full(shape, fill_value, dtype=dt, device=dev)

    return _like(t, make, dtype, device, requires_grad, memory_format)


def rand_like(
    t: Tensor,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
    memory_format: mf.memory_format = mf.preserve_format,
) -> Tensor:
    """Uniform draws from [0, 1) shaped like ``t``, with its dtype and device unless given
    (``memory_format`` as :func:`zeros_like`)."""
    return _like(t, lambda s, dt, dev: nd.rand(*s, dtype=dt, device=dev), dtype, device, requires_grad, memory_format)


def randn_like(
    t: Tensor,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
    memory_format: mf.memory_format = mf.preserve_format,
) -> Tensor:
    """Standard normal draws shaped like ``t``, with its dtype and device unless given
    (``memory_format`` as :func:`zeros_like`)."""
    return _like(t, lambda s, dt, dev: nd.randn(*s, dtype=dt, device=dev), dtype, device, requires_grad, memory_format)


def manual_seed(seed: int) -> None:
    """Seed the generators of every device with ``seed``: the draws that follow are reproducible."""
    nd.manual_seed(seed)


def where(condition: Tensor, x: Tensor | Scalar, y: Tensor | Scalar) -> Tensor:
    """``x`` where ``condition`` is True, else ``y``; the three broadcast together (torch's input, other).

    Args:
        condition: a bool tensor.
        x: the values where condition holds (a tensor or a number).
        y: the values elsewhere (a tensor or a number; at least one of x and y is a tensor).
    """
    if not isinstance(x, Tensor):
        if not isinstance(y, Tensor):
            raise TypeError("where(): expected at least one of x and y to be a Tensor")
        x = full((), x, dtype=y.dtype, device=y.device)
    return F.Where.apply(condition, x, y)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along the existing dimension ``dim``; their other sizes must match.

    The result has the promoted dtype of the inputs.
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    return F.Cat.apply(dim, *tensors)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors, all of one shape, joined along a new dimension inserted at ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != first:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    d = dim if dim >= 0 else dim + len(first) + 1
    return cat([t.unsqueeze(d) for t in tensors], d)
