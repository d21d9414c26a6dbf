"""CPU: diagonal / unfold views and the in-place random fills, from torch and the backend's generator.

Imported by ``cpu.py``; each function registers itself under the op name NDArray
dispatches on. Every draw goes through the one ``torch.Generator`` of the CPU
backend, so ``manual_seed`` and ``set_rng_state`` replay it.
"""

from __future__ import annotations

import torch

from ..device import Device
from ..dtypes import DType
from ..registry import register
from .cpu import _generator


def _reg(name):
    return register(name, "cpu")


# ------------------------------------------------------------------ views
_reg("diagonal")(lambda t, offset, dim1, dim2: t.diagonal(offset, dim1, dim2))
_reg("unfold")(lambda t, dim, size, step: t.unfold(dim, size, step))


# ------------------------------------------------------------------ random
_reg("uniform_")(lambda t, low, high: t.uniform_(low, high, generator=_generator))
_reg("normal_")(lambda t, mean, std: t.normal_(mean, std, generator=_generator))
_reg("exponential_")(lambda t, lambd: t.exponential_(lambd, generator=_generator))
_reg("bernoulli_")(lambda t, p: t.bernoulli_(p, generator=_generator))


@_reg("random_")
def random_(t, low, high) -> None:
    if low is None:
        t.random_(generator=_generator)
    else:
        t.random_(low, high, generator=_generator)


@_reg("randperm")
def randperm(n: int, dtype: DType, device: Device):
    return torch.randperm(n, dtype=dtype.torch, generator=_generator)


@_reg("initial_seed")
def initial_seed(device: Device) -> int:
    return _generator.initial_seed()
