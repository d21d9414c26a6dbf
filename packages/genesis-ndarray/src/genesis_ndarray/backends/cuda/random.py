"""Random numbers on CUDA: a counter-based (Philox) stream per device.

Each device keeps (seed, offset) (``philox.py``, which also handles draws inside a CUDA-graph
capture). A draw of n numbers uses counters offset .. offset+n-1 and advances the offset, so a seed
reproduces every result, whatever the launch configuration.
"""

from __future__ import annotations

import math

import numpy as np
import torch

import genesis_kernels as gk

from ...device import Device, cuda_device
from ...dtypes import DType, bool_, float32, int64
from .common import View, dtype_of, forget_range, index_of, new, reg, set_range, stream_of
from .elementwise import binary, unary
from .memory import cast, copy_, fill_
from .philox import Draw, reseed, state_of, take


@reg("manual_seed")
def manual_seed(seed: int) -> None:
    reseed(seed)


@reg("rand")
def rand(shape, dtype: DType, device: Device):
    out = new(shape, dtype, device)
    n = math.prod(shape)
    if n:
        d = take(device, n)
        gk.rand(out, d.seed, d.offset, stream=stream_of(out), rng_ptr=d.rng_ptr)
    return out


@reg("randn")
def randn(shape, dtype: DType, device: Device):
    out = new(shape, dtype, device)
    n = math.prod(shape)
    if n:
        d = take(device, n)
        gk.randn(out, d.seed, d.offset, stream=stream_of(out), rng_ptr=d.rng_ptr)
    return out


@reg("randint")
def randint(low: int, high: int, shape, dtype: DType, device: Device):
    out = new(shape, dtype, device)
    n = math.prod(shape)
    if n:
        d = take(device, n)
        gk.randint(out, low, high, d.seed, d.offset, stream=stream_of(out), rng_ptr=d.rng_ptr)
        set_range(out, low, high - 1, False)  # bounds, not values drawn
    return out


# ------------------------------------------------------------------ in-place fills
# Each draws numel(v) counters of v's device and writes straight through v's strides:
# element i (row-major logical index) gets counter offset + i, whatever the layout.
def _draw(v: View) -> Draw | None:
    forget_range(v)  # every caller writes v
    n = math.prod(v.shape)
    return take(cuda_device(v.device), n) if n else None


@reg("uniform_")
def uniform_(input: View, low: float, high: float) -> None:
    drawn = _draw(input)
    if drawn:
        gk.uniform(input, low, high, drawn.seed, drawn.offset, stream=stream_of(input), rng_ptr=drawn.rng_ptr)


@reg("normal_")
def normal_(input: View, mean: float, std: float) -> None:
    drawn = _draw(input)
    if drawn:
        gk.normal(input, mean, std, drawn.seed, drawn.offset, stream=stream_of(input), rng_ptr=drawn.rng_ptr)


@reg("exponential_")
def exponential_(input: View, lambd: float) -> None:
    """-log(1 - u) / lambd with u uniform in [0, 1), computed in float32 (float64 for float64)."""
    drawn = _draw(input)
    if drawn is None:
        return
    u = new(input.shape, dtype_of(input) if input.dtype == "float64" else float32, cuda_device(input.device))
    gk.rand(u, drawn.seed, drawn.offset, stream=stream_of(u), rng_ptr=drawn.rng_ptr)
    copy_(input, binary("mul", unary("log1p", unary("neg", u)), -1.0 / lambd))


@reg("bernoulli_")
def bernoulli_(input: View, p) -> None:
    """1 where a uniform draw is below p (a number, or a View of v's shape), else 0."""
    drawn = _draw(input)
    if drawn:
        gk.bernoulli(p, input, drawn.seed, drawn.offset, stream=stream_of(input), rng_ptr=drawn.rng_ptr)


# random_() with no bounds: [0, 2**digits] for floats (every integer the dtype holds exactly), [0, max] for
# integers (int64 stops one short: the kernel's bound is an int64 itself), as torch.
_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


@reg("random_")
def random_(input: View, low, high) -> None:
    dtype = dtype_of(input)
    if low is None:
        if dtype.is_floating_point:
            low, high = 0, 2 ** _FLOAT_DIGITS[input.dtype] + 1
        elif input.dtype == "bool":
            low, high = 0, 2
        else:
            low, high = 0, min(torch.iinfo(dtype.torch).max + 1, 2**63 - 1)
    elif not dtype.is_floating_point and input.dtype != "bool":
        info = torch.iinfo(dtype.torch)
        if not info.min <= low <= info.max:
            raise RuntimeError(f"from is out of bounds for {input.dtype}")
        if not info.min <= high - 1 <= info.max:
            raise RuntimeError(f"to - 1 is out of bounds for {input.dtype}")
    drawn = _draw(input)
    if drawn:
        gk.randint(input, int(low), int(high), drawn.seed, drawn.offset, stream=stream_of(input), rng_ptr=drawn.rng_ptr)


@reg("randperm")
def randperm(n: int, dtype: DType, device: Device) -> View:
    """argsort of n random 62-bit keys (a stable sort: a repeated key still yields a permutation)."""
    out = new((n,), dtype, device)
    if n == 0:
        return out
    keys = new((n,), int64, device)
    d = take(device, n)
    stream = stream_of(keys)
    gk.randint(keys, 0, 2**62, d.seed, d.offset, stream=stream, rng_ptr=d.rng_ptr)
    index = out if dtype is int64 else new((n,), int64, device)
    gk.argsort(keys, index, new((n,), int64, device), dim=0, stream=stream)
    set_range(index, 0, n - 1, True)  # a permutation of 0..n-1 (the cast keeps it)
    return out if index is out else cast(index, dtype)


# ------------------------------------------------------------------ dropout
@reg("dropout")
def dropout(input: View, p: float, train: bool) -> tuple[View, View]:
    """(input * mask / (1 - p), mask) with a bool keep-mask, as torch.native_dropout: one launch that
    writes both, drawing numel counters like any other fill."""
    device = cuda_device(input.device)
    out = new(input.shape, dtype_of(input), device)
    mask = new(input.shape, bool_, device)
    if not train:
        copy_(out, input)
        fill_(mask, True)
        return out, mask
    drawn = _draw(input)
    if drawn:
        gk.dropout(input, out, p, drawn.seed, drawn.offset, mask=mask, stream=stream_of(input), rng_ptr=drawn.rng_ptr)
    return out, mask


@reg("dropout_backward")
def dropout_backward(grad_output: View, mask: View, scale: float) -> View:
    """grad_output * mask * scale (torch.native_dropout_backward)."""
    return binary("mul", binary("mul", grad_output, mask), scale)


# ------------------------------------------------------------------ generator state
# The state of one device's generator is 16 bytes, as torch's CUDA generator state:
# the seed and the offset, two little-endian uint64.
def _state_of(device: Device) -> list[int]:
    return state_of(index_of(device))


@reg("get_rng_state")
def get_rng_state(device: Device) -> torch.Tensor:
    seed, offset = _state_of(device)
    return torch.from_numpy(np.array([seed, offset], dtype="<u8").view(np.uint8).copy())


@reg("set_rng_state")
def set_rng_state(state, device: Device) -> None:
    if isinstance(state, torch.Tensor):
        if state.numel() != 16:
            raise RuntimeError(f"a cuda generator state is 16 bytes (seed, offset), got {state.numel()}")
        seed, offset = (int(x) for x in state.contiguous().numpy().view("<u8"))
    else:
        seed, offset = state
    state_of(index_of(device))[:] = [int(seed), int(offset)]


@reg("initial_seed")
def initial_seed(device: Device) -> int:
    return _state_of(device)[0]
