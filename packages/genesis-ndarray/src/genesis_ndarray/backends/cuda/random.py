"""Random numbers on CUDA: a counter-based (Philox) stream per device.

Each device keeps (seed, offset). A draw of n numbers uses counters
offset .. offset+n-1 and advances the offset, so a seed reproduces every
result, whatever the launch configuration.
"""

from __future__ import annotations

import math

import genesis_kernels as gk

from ...device import Device
from ...dtypes import DType
from .common import new, reg, stream_of

_state: dict[int, list[int]] = {}
_default_seed = [0]


def _take(device: Device, n: int) -> tuple[int, int]:
    state = _state.setdefault(device.index, [_default_seed[0], 0])
    seed, offset = state
    # Philox yields four numbers per counter; keep draws on whole counters.
    state[1] = offset + (n + 3) // 4 * 4
    return seed, offset


@reg("manual_seed")
def manual_seed(seed: int) -> None:
    _default_seed[0] = seed
    _state.clear()


@reg("rand")
def rand(shape, dtype: DType, device: Device):
    out = new(shape, dtype, device)
    n = math.prod(shape)
    if n:
        seed, offset = _take(device, n)
        gk.rand(out, seed, offset, stream=stream_of(out))
    return out


@reg("randn")
def randn(shape, dtype: DType, device: Device):
    out = new(shape, dtype, device)
    n = math.prod(shape)
    if n:
        seed, offset = _take(device, n)
        gk.randn(out, seed, offset, stream=stream_of(out))
    return out


@reg("randint")
def randint(low: int, high: int, shape, dtype: DType, device: Device):
    out = new(shape, dtype, device)
    n = math.prod(shape)
    if n:
        seed, offset = _take(device, n)
        gk.randint(out, low, high, seed, offset, stream=stream_of(out))
    return out


@reg("get_rng_state")
def get_rng_state(device: Device):
    return tuple(_state.setdefault(device.index, [_default_seed[0], 0]))


@reg("set_rng_state")
def set_rng_state(state, device: Device) -> None:
    seed, offset = state
    _state[device.index] = [int(seed), int(offset)]
