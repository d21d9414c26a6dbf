"""The random-number API that is not a fill: randperm, bernoulli, the generators' state and seeds.

Each device type keeps one generator (cpu: a torch.Generator; cuda: a Philox
(seed, offset) per device). Its state travels as a uint8 array on the cpu, as
torch's does, so ``set_rng_state(get_rng_state(d), d)`` replays every later draw.
"""

from __future__ import annotations

import os

import torch

from . import registry
from .creation import _device, manual_seed
from .device import cpu
from .dtypes import as_dtype
from .ndarray import NDArray


def randperm(n: int, dtype=None, device=None) -> NDArray:
    """A random permutation of 0 .. n-1."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    device = _device(device)
    dtype = as_dtype("int64" if dtype is None else dtype)
    if dtype.is_floating_point:  # every value must be an integer the dtype holds exactly
        limit = 2 ** {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}[dtype.name] + 1
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {dtype.name} type.")
    elif dtype.name != "bool" and n - 1 > torch.iinfo(dtype.torch).max:
        raise RuntimeError(f"randperm: n - 1 = {n - 1} does not fit in {dtype.name}")
    return NDArray(registry.table(device.type)["randperm"](n, dtype, device), device, dtype)


def bernoulli(probs: NDArray, p=None) -> NDArray:
    """0 / 1 in probs' dtype, each 1 with the probability at its place in ``probs`` (or with ``p``)."""
    return probs.bernoulli(p)


def get_rng_state(device=None) -> NDArray:
    """The generator state of ``device`` (default cpu) as a uint8 array on the cpu."""
    device = cpu if device is None else _device(device)  # cpu's, whatever the default device
    state = registry.table(device.type)["get_rng_state"](device)
    return NDArray(state, cpu, as_dtype("uint8"))


def set_rng_state(state, device=None) -> None:
    """Restore a state returned by get_rng_state on the same device type."""
    device = cpu if device is None else _device(device)  # cpu's, whatever the default device
    if isinstance(state, NDArray):
        state = state.to("cpu").native
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8:
        raise TypeError(f"set_rng_state expects a uint8 tensor, got {type(state).__name__}")
    registry.table(device.type)["set_rng_state"](state.contiguous(), device)


def seed() -> int:
    """Seed every generator with a non-deterministic 64-bit number, and return it."""
    s = int.from_bytes(os.urandom(8), "little")
    manual_seed(s)
    return s


def initial_seed(device=None) -> int:
    """The seed the generator of ``device`` (default cpu) was last seeded with."""
    device = cpu if device is None else _device(device)  # cpu's, whatever the default device
    return int(registry.table(device.type)["initial_seed"](device))
