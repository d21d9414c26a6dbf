"""Factories: arrays from data, constants, ranges and random numbers, on any device."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from . import device as _devices
from . import dtypes as _dtypes
from . import registry
from .device import Device, as_device, cpu, resolve_device
from .dtypes import DType, as_dtype, get_default_dtype
from .ndarray import NDArray, _shape_args


def _device(device) -> Device:
    """The device a factory's argument names (default: the default device, cpu unless set; a bare "cuda" is
    the current CUDA device)."""
    if device is None:
        device = _devices._default
        return device if device is cpu else resolve_device(device)
    return resolve_device(device)


def _float_dtype(dtype) -> DType:
    return get_default_dtype() if dtype is None else as_dtype(dtype)


def _make(op: str, device: Device, dtype: DType, *args) -> NDArray:
    return NDArray(registry.table(device.type)[op](*args, dtype, device), device, dtype)


# The factories' resolved arguments: (class and value of the device argument, of the dtype argument, the
# default device, the default dtype) -> (the device, or None for this thread's current CUDA device; the
# dtype; the device type's op table). A call with arguments seen before resolves them with one lookup
# instead of parsing both and finding the table (empty / zeros / ones / full, the *_like forms); the
# classes keep 0 and False apart. An argument that cannot be a key (unhashable) takes the general path.
_FACTORY_ARGS: dict[tuple, tuple[Device | None, DType, registry.OpTable]] = {}
_FACTORY_ARGS_MAX = 256


def _factory_args(device, dtype) -> tuple[Device, DType, registry.OpTable]:
    """(device, dtype, op table) of a factory's ``device=`` and floating ``dtype=`` arguments."""
    # (a Device and the default device enter as their (type, index) keys: Device.__hash__ is a Python call)
    named = device._key if device.__class__ is Device else device
    key = (device.__class__, named, dtype.__class__, dtype, _devices._default._key, _dtypes._default_dtype)
    try:
        entry = _FACTORY_ARGS.get(key)
    except TypeError:  # an unhashable argument: resolved every time
        resolved = _device(device)
        return resolved, _float_dtype(dtype), registry.table(resolved.type)
    if entry is None:
        resolved = _device(device)
        argument = _devices._default if device is None else device
        current = resolved.type == "cuda" and as_device(argument).index is None  # a bare "cuda": re-resolved per call
        entry = (None if current else resolved, _float_dtype(dtype), registry.table(resolved.type))
        if len(_FACTORY_ARGS) >= _FACTORY_ARGS_MAX:
            _FACTORY_ARGS.clear()
        _FACTORY_ARGS[key] = entry
        return resolved, entry[1], entry[2]
    fixed, dt, ops = entry
    if fixed is None:  # this thread's current CUDA device (resolve_device's reading of a bare "cuda")
        index = _devices.current_device()
        fixed = _devices._cuda.get(index) or _devices.cuda_device(index)
    return fixed, dt, ops


def empty(*shape, dtype=None, device=None) -> NDArray:
    device, dtype, ops = _factory_args(device, dtype)
    return NDArray(ops["empty"](_shape_args(shape), dtype, device), device, dtype, ops)


def full(shape, fill_value, dtype=None, device=None) -> NDArray:
    if dtype is None:
        dtype = as_dtype(type(fill_value)) if isinstance(fill_value, bool | int) else get_default_dtype()
    device, dtype, ops = _factory_args(device, dtype)
    return NDArray(ops["full"](tuple(shape), fill_value, dtype, device), device, dtype, ops)


def zeros(*shape, dtype=None, device=None) -> NDArray:
    device, dtype, ops = _factory_args(device, dtype)
    return NDArray(ops["full"](_shape_args(shape), 0, dtype, device), device, dtype, ops)


def ones(*shape, dtype=None, device=None) -> NDArray:
    device, dtype, ops = _factory_args(device, dtype)
    return NDArray(ops["full"](_shape_args(shape), 1, dtype, device), device, dtype, ops)


def from_torch(t: torch.Tensor, device=None) -> NDArray:
    """Wrap a torch CPU tensor (zero-copy on cpu; a copy onto another device). Default cpu, whatever the
    default device (torch.from_numpy's)."""
    device = cpu if device is None else resolve_device(device)
    dtype = as_dtype(t.dtype)
    return NDArray(registry.table(device.type)["from_cpu"](t, device, False), device, dtype)


def from_numpy(array: np.ndarray, device=None) -> NDArray:
    """Zero-copy on cpu (the array and the result share memory), a copy elsewhere."""
    return from_torch(torch.from_numpy(array), device)


_DLPACK_DEVICE_TYPES = {1: "cpu", 2: "cuda", 3: "cpu"}  # kDLCPU, kDLCUDA, kDLCUDAHost


def from_dlpack(obj) -> NDArray:
    """Zero-copy import of a DLPack producer (a torch tensor, a cupy / numpy array, ...);
    the result keeps the producer's memory alive. A bare capsule is taken as a cpu one."""
    kind = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else 1
    device_type = _DLPACK_DEVICE_TYPES.get(kind)
    if device_type is None:
        raise BufferError(f"from_dlpack: DLPack device type {kind} is not supported (cpu or cuda only)")
    ops = registry.table(device_type)
    native, device = ops["from_dlpack"](obj)
    return NDArray(native, device, ops["dtype_of"](native))


def array(data, dtype=None, device=None) -> NDArray:
    """Like torch.tensor: copy ``data`` (nested lists, numbers, numpy arrays, NDArrays)."""
    if isinstance(data, NDArray):
        out = data.to(device or data.device, dtype)
        return out.clone() if out is data else out
    if isinstance(data, np.ndarray):
        t = torch.from_numpy(np.array(data, copy=True))
    else:
        # With a dtype, torch reads the Python numbers straight into it (0.01 as float64 stays exact);
        # without one, floats take the default dtype.
        t = torch.tensor(data, dtype=as_dtype(dtype).torch) if dtype is not None else torch.tensor(data)
        if dtype is None and t.is_floating_point():
            t = t.to(get_default_dtype().torch)
    if dtype is not None:
        t = t.to(as_dtype(dtype).torch)
    return from_torch(t, _device(device))


def arange(start, end=None, step=1, dtype=None, device=None) -> NDArray:
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_int = all(isinstance(v, int) for v in (start, end, step))
        dtype = as_dtype("int64") if is_int else get_default_dtype()
    if step == 0:
        raise RuntimeError("step must be nonzero")
    device = _device(device)
    dtype = as_dtype(dtype)
    return NDArray(registry.table(device.type)["arange"](start, end, step, dtype, device), device, dtype)


def linspace(start, end, steps: int, dtype=None, device=None) -> NDArray:
    """``steps`` values from ``start`` to ``end`` inclusive, with torch's step and formula (integer dtypes
    truncate the ends first, as torch)."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    device = _device(device)
    return _make("linspace", device, _float_dtype(dtype), start, end, int(steps))


def eye(n: int, m: int | None = None, dtype=None, device=None) -> NDArray:
    """The (n, m) identity: ones on the main diagonal."""
    m = n if m is None else m
    for name, size in (("n", n), ("m", m)):
        if size < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {size}")
    device = _device(device)
    return _make("eye", device, _float_dtype(dtype), int(n), int(m))


def _random(op: str, shape: Sequence[int], dtype, device) -> NDArray:
    device = _device(device)
    dtype = _float_dtype(dtype)
    if not dtype.is_floating_point:
        raise TypeError(f"{op} needs a floating-point dtype, got {dtype.name}")
    return _make(op, device, dtype, _shape_args(shape))


def rand(*shape, dtype=None, device=None) -> NDArray:
    return _random("rand", shape, dtype, device)


def randn(*shape, dtype=None, device=None) -> NDArray:
    return _random("randn", shape, dtype, device)


def randint(low: int, high: int | None = None, size=(), dtype=None, device=None) -> NDArray:
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    device = _device(device)
    dtype = as_dtype("int64" if dtype is None else dtype)
    return NDArray(registry.table(device.type)["randint"](low, high, tuple(size), dtype, device), device, dtype)


def manual_seed(seed: int) -> None:
    """Seed the generators of every registered device type."""
    for device_type in registry.device_types():
        try:
            registry.lookup("manual_seed", device_type)(int(seed))
        except ImportError:  # a backend whose libraries are not installed has no generator to seed
            continue


def where(condition: NDArray, input, other) -> NDArray:
    """torch.where(condition, input, other): ``input`` where ``condition`` holds, else ``other`` (either may be a
    scalar, not both)."""
    if not isinstance(input, NDArray):
        if not isinstance(other, NDArray):
            raise TypeError("where needs at least one NDArray among input and other")
        input = full((), input, dtype=other.dtype, device=other.device)
    return input.where(condition, other)
