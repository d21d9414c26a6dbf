"""Tensor factories: genesis.tensor, zeros, randn, ... and their *_like forms."""

from __future__ import annotations

import genesis_ndarray as nd

from . import functions as F
from .functions.random import sample
from .tensor import Tensor


def _leaf(array: nd.NDArray, requires_grad: bool) -> Tensor:
    t = Tensor(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Copy ``data`` (lists, numbers, numpy arrays, Tensors) into a new leaf tensor."""
    if isinstance(data, Tensor):
        data = data.data
    return _leaf(nd.array(data, dtype=dtype, device=device), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like tensor(), but reuses ``data`` when it already is a Tensor of that dtype and device."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if hasattr(data, "__array_interface__") and device in (None, "cpu") and dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array) -> Tensor:
    """Shares memory with the numpy array (cpu)."""
    return Tensor(nd.from_numpy(array))


def from_dlpack(obj) -> Tensor:
    """Zero-copy import of a DLPack producer (e.g. a torch tensor), on cpu or cuda."""
    return Tensor(nd.from_dlpack(obj))


def zeros(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(nd.zeros(*shape, dtype=dtype, device=device), requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(nd.ones(*shape, dtype=dtype, device=device), requires_grad)


def empty(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(nd.empty(*shape, dtype=dtype, device=device), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(nd.full(tuple(size), fill_value, dtype=dtype, device=device), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(nd.arange(start, end, step, dtype=dtype, device=device), requires_grad)


def linspace(start, end, steps: int, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if steps == 1:
        return full((1,), start, dtype=dtype or nd.get_default_dtype(), device=device,
                    requires_grad=requires_grad)
    step = (end - start) / max(steps - 1, 1)
    idx = nd.arange(steps, dtype=dtype or nd.get_default_dtype(), device=device)
    return _leaf(idx * step + start, requires_grad)


def eye(n: int, m: int | None = None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    m = n if m is None else m
    rows = nd.arange(n, device=device).reshape(n, 1)
    cols = nd.arange(m, device=device).reshape(1, m)
    return _leaf((rows == cols).astype(dtype or nd.get_default_dtype()), requires_grad)


def rand(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(nd.rand(*shape, dtype=dtype, device=device), requires_grad)


def randn(*shape, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _leaf(nd.randn(*shape, dtype=dtype, device=device), requires_grad)


def randint(low, high=None, size=(), dtype=None, device=None) -> Tensor:
    return Tensor(nd.randint(low, high, size, dtype=dtype, device=device))


def normal(mean=0.0, std=1.0, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """normal(mean, std, size) with numbers; or mean and / or std Tensors (broadcast together, no size),
    whose gradient is zero, as torch's."""
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        if size is None:
            raise TypeError("normal() with a number mean and std needs a size")
        return _leaf(nd.randn(*size, dtype=dtype, device=device) * std + mean, requires_grad)
    like = mean if isinstance(mean, Tensor) else std
    m = mean.data if isinstance(mean, Tensor) else mean
    s = std.data if isinstance(std, Tensor) else std
    if isinstance(std, Tensor) and std.numel() and (s < 0).any().item():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = nd.shape.broadcast_shapes(mean.shape if isinstance(mean, Tensor) else (),
                                      std.shape if isinstance(std, Tensor) else ())
    values = nd.randn(*shape, dtype=like.dtype, device=like.device) * s + m
    return sample(values.astype(like.dtype), mean, std)


def randperm(n: int, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1 (int64 unless ``dtype`` says otherwise)."""
    return _leaf(nd.randperm(n, dtype=dtype, device=device), requires_grad)


def bernoulli(input: Tensor, p=None) -> Tensor:
    """0 / 1 in input's dtype, each 1 with the probability at its place in ``input`` (or with ``p``);
    the gradient to ``input`` is zero, as torch's."""
    return input.bernoulli(p)


def get_rng_state(device=None) -> Tensor:
    """The generator state of ``device`` (default cpu), a uint8 tensor on the cpu."""
    return Tensor(nd.get_rng_state(device))


def set_rng_state(state, device=None) -> None:
    """Restore a state from get_rng_state(device): the draws that followed it come again."""
    nd.set_rng_state(state.data if isinstance(state, Tensor) else state, device)


def seed() -> int:
    """Seed every device's generator with a non-deterministic number, and return it."""
    return nd.seed()


def initial_seed() -> int:
    """The seed last given to the generators (the cpu generator's initial seed, as torch.initial_seed)."""
    return nd.initial_seed()


def zeros_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(*t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def ones_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return ones(*t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def empty_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return empty(*t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def full_like(t: Tensor, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return full(t.shape, fill_value, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def rand_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return rand(*t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def randn_like(t: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return randn(*t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


def manual_seed(seed: int) -> None:
    nd.manual_seed(seed)


def where(condition: Tensor, x, y) -> Tensor:
    if not isinstance(x, Tensor):
        if not isinstance(y, Tensor):
            raise TypeError("where(): expected at least one of x and y to be a Tensor")
        x = full((), x, dtype=y.dtype, device=y.device)
    return F.Where.apply(condition, x, y)


def cat(tensors, dim: int = 0) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    return F.Cat.apply(dim, *tensors)


def stack(tensors, dim: int = 0) -> Tensor:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    d = dim if dim >= 0 else dim + len(first) + 1
    return cat([t.unsqueeze(d) for t in tensors], d)
