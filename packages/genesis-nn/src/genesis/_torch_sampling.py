"""torch.X sampling and creation functions: multinomial, poisson, binomial (with ``generator=``), logspace,
range (deprecated, end included), scalar_tensor, empty_strided, empty_permuted, randint_like, asarray and
frombuffer.

The draws are genesis_autograd's (functions/sampling.py: transformations of the device's own uniform,
exponential and normal streams); the factories compose genesis_autograd's.
"""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import genesis_autograd as _ag
from genesis_autograd import Tensor, as_dtype, as_tensor, empty, from_numpy, get_default_dtype, tensor
from genesis_autograd.functions.sampling import binomial as _binomial
from genesis_autograd.functions.sampling import poisson as _poisson
from genesis_autograd.memory_format import preserve_format

from .utils.data.generator import Generator


def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator: Generator | None = None
) -> Tensor:
    """``num_samples`` category indices drawn from each row of weights of ``input`` (1-d or 2-d)."""
    return input.multinomial(num_samples, replacement, generator=generator)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson draws with the rates in ``input``."""
    return _poisson(input, generator)


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Binomial draws of ``count`` trials with success probability ``prob``."""
    return _binomial(count, prob, generator)


def _leaf(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_(True) if requires_grad else t


def logspace(
    start: float,
    end: float,
    steps: int,
    base: float = 10.0,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` values ``base ** x`` for x evenly spaced from ``start`` to ``end`` (both included)."""
    exponents = _ag.linspace(start, end, steps, dtype=_ag.float64, device=device)
    out = (exponents * math.log(base)).exp() if base > 0 else tensor(float(base), dtype=_ag.float64) ** exponents
    target = get_default_dtype() if dtype is None else as_dtype(dtype)
    if not target.is_floating_point:
        out = out.round() if base > 0 else out
    return _leaf(out.to(target).detach(), requires_grad)


def range(
    start: float = 0,
    end: float | None = None,
    step: float = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Deprecated torch.range: ``start, start + step, ...`` up to and including ``end``, in the default
    (floating) dtype unless given; warns as torch does. Use ``arange``, which leaves ``end`` out."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use torch.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = math.floor((end - start) / step) + 1
    values = _ag.arange(count, dtype=_ag.float64, device=device) * step + start
    return _leaf(values.to(get_default_dtype() if dtype is None else as_dtype(dtype)), requires_grad)


def scalar_tensor(
    s: float | int | bool, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A 0-d tensor holding ``s``, in the default dtype unless given (an int gives a float, as torch)."""
    return tensor(s, dtype=get_default_dtype() if dtype is None else dtype, device=device, requires_grad=requires_grad)


def empty_strided(
    size: Sequence[int], stride: Sequence[int], *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements)."""
    return empty(0, dtype=dtype, device=device).new_empty_strided(size, stride, requires_grad=requires_grad)


def empty_permuted(
    size: Sequence[int],
    physical_layout: Sequence[int],
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """An uninitialised tensor of ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first): ``empty_permuted((2, 3, 4, 5), (0, 2, 3, 1))`` is channels-last."""
    size, layout = tuple(size), tuple(physical_layout)
    if len(layout) != len(size):
        raise RuntimeError(
            "Number of dimensions in size does not match the length of the physical_layout; "
            f"{len(size)} vs {len(layout)}"
        )
    if sorted(layout) != list(builtins.range(len(size))):
        raise RuntimeError(f"physical_layout {list(layout)} is not a permutation of the dims")
    physical = empty([size[d] for d in layout], dtype=dtype, device=device)
    inverse = [layout.index(d) for d in builtins.range(len(size))]
    return _leaf(physical.permute(*inverse).detach(), requires_grad)


def randint_like(
    input: Tensor,
    low: int = 0,
    high: int | None = None,
    *,
    dtype: Any = None,
    device: Any = None,
    memory_format: _ag.memory_format.memory_format = preserve_format,
) -> Tensor:
    """Integers uniform on [low, high) (``randint_like(x, high)`` draws from [0, high)) in ``input``'s shape,
    dtype and device unless given; laid out as ``memory_format`` (by default ``input``'s layout when dense)."""
    if high is None:
        low, high = 0, low
    dtype = input.dtype if dtype is None else dtype
    device = input.device if device is None else device
    draws = _ag.randint(low, high, tuple(input.shape), dtype=dtype, device=device)
    if memory_format is preserve_format and input.is_contiguous():
        return draws
    return _ag.empty_like(input, dtype=dtype, device=device, memory_format=memory_format).copy_(draws)


def asarray(
    obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None, requires_grad: bool = False
) -> Tensor:
    """``obj`` as a tensor, sharing its memory where it can (a Tensor of the right dtype and device, a numpy
    array on the cpu): ``copy=True`` always copies, ``copy=False`` refuses to."""
    if isinstance(obj, Tensor):
        out = obj.to(dtype=dtype, device=device)
        shared = out is obj
    elif isinstance(obj, np.ndarray) and (device is None or str(device) == "cpu"):
        out = from_numpy(obj) if dtype is None else from_numpy(obj).to(dtype)
        shared = dtype is None or out.dtype.numpy == obj.dtype
    else:
        out = as_tensor(obj, dtype=dtype, device=device)
        shared = False
    if copy is False and not shared:
        raise ValueError("can't alias the object: a copy is needed (copy=False)")
    if copy and shared:
        out = out.clone()
    return _leaf(out, requires_grad) if requires_grad or out is obj else _leaf(out.detach(), False)


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-d cpu tensor sharing the memory of an object with the buffer protocol (bytes, bytearray,
    array.array, mmap), read as ``dtype`` from byte ``offset``: ``count`` elements, or all (-1)."""
    dt = as_dtype(dtype)
    if dt.numpy is None:
        raise TypeError(f"frombuffer: {dt.name} has no numpy counterpart to read the buffer with")
    view = memoryview(buffer)
    if view.nbytes == 0:
        raise ValueError("both buffer length (0) and count (-1) must not be 0")
    if offset < 0 or offset >= view.nbytes:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({view.nbytes} bytes) "
            "minus 1"
        )
    if count <= 0 and count != -1:
        raise ValueError(f"count must be positive or -1, got {count}")
    if count == -1 and (view.nbytes - offset) % dt.itemsize:
        raise ValueError(
            f"buffer length ({view.nbytes - offset} bytes) after offset ({offset} bytes) must be a multiple of "
            f"element size ({dt.itemsize})"
        )
    if view.readonly:
        warnings.warn(
            "The given buffer is not writable, and PyTorch does not support non-writable tensors. This means you "
            "can write to the underlying (supposedly non-writable) buffer using the tensor.",
            UserWarning,
            stacklevel=2,
        )
    array = np.frombuffer(buffer, dtype=dt.numpy, count=count, offset=offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the non-writable warning was given above, in torch's words
        return _leaf(from_numpy(array), requires_grad)


__all__ = [
    "asarray",
    "binomial",
    "empty_permuted",
    "empty_strided",
    "frombuffer",
    "logspace",
    "multinomial",
    "poisson",
    "randint_like",
    "range",
    "scalar_tensor",
]
