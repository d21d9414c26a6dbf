"""The CPU backend: torch CPU tensors, torch's own kernels and semantics.

Each function is registered under the op name NDArray dispatches on. Native
arrays here are torch.Tensor objects.
"""

from __future__ import annotations

import torch

from ..device import Device
from ..dtypes import DType, dtype_of_torch
from ..registry import register
from . import cpu_indexing  # noqa: F401  (registers gather, scatter_, sort, ... on cpu)

CPU = "cpu"


def _reg(name):
    return register(name, CPU)


_reg("dtype_of")(lambda t: dtype_of_torch(t.dtype))
_reg("strides")(lambda t: t.stride())
_reg("storage_offset")(lambda t: t.storage_offset())
_reg("is_contiguous")(lambda t: t.is_contiguous())
_reg("data_ptr")(lambda t: t.data_ptr())
_reg("item")(lambda t: t.item())
_reg("tolist")(lambda t: t.tolist())
_reg("to_numpy")(lambda t: t.numpy())
_reg("to_cpu")(lambda t, non_blocking=False: t)
_reg("from_cpu")(lambda t, device, non_blocking=False: t)


@_reg("to_dlpack")
def to_dlpack(t, stream, max_version, dl_device, copy):
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
    return t.__dlpack__(**kwargs)


_reg("dlpack_device")(lambda t: t.__dlpack_device__())
_reg("from_dlpack")(lambda obj: (torch.from_dlpack(obj), Device("cpu")))


@_reg("empty")
def empty(shape, dtype: DType, device: Device):
    return torch.empty(shape, dtype=dtype.torch)


@_reg("full")
def full(shape, value, dtype: DType, device: Device):
    return torch.full(shape, value, dtype=dtype.torch)


@_reg("from_torch")
def from_torch(t: torch.Tensor, device: Device):
    return t


@_reg("arange")
def arange(start, end, step, dtype: DType, device: Device):
    return torch.arange(start, end, step, dtype=dtype.torch)


# ------------------------------------------------------------------ elementwise
_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "floor_divide": torch.floor_divide, "remainder": torch.remainder, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
}
# These torch functions take no Python scalar; a 0-dim tensor promotes the same way.
_NEEDS_TENSOR = {"maximum", "minimum", "atan2", "logical_and", "logical_or", "logical_xor"}


@_reg("binary")
def binary(op: str, a, b):
    if not isinstance(a, torch.Tensor):
        a = torch.tensor(a)
    elif op in _NEEDS_TENSOR and not isinstance(b, torch.Tensor):
        b = torch.tensor(b)
    return _BINARY[op](a, b)


@_reg("binary_")
def binary_(op: str, a, b):
    getattr(a, f"{op}_")(b)


_UNARY = {
    "relu": torch.relu, "sigmoid": torch.sigmoid, "silu": torch.nn.functional.silu,
    "logical_not": torch.logical_not, "bitwise_not": torch.bitwise_not,
}


@_reg("unary")
def unary(op: str, t):
    fn = _UNARY.get(op) or getattr(torch, op)
    return fn(t)


@_reg("where")
def where(cond, a, b):
    return torch.where(cond, a, b)


@_reg("clamp")
def clamp(t, lo, hi):
    return torch.clamp(t, lo, hi)


# ------------------------------------------------------------------ reductions
@_reg("reduce")
def reduce(op: str, t, dim, keepdim: bool, dtype: DType | None):
    fn = getattr(torch, op)
    kwargs = {} if dtype is None else {"dtype": dtype.torch}
    if dim is None:
        if op == "logsumexp":
            return torch.logsumexp(t, dim=tuple(range(t.ndim)), keepdim=keepdim)
        if keepdim:
            return fn(t, dim=tuple(range(t.ndim)), keepdim=True, **kwargs)
        return fn(t, **kwargs)
    if op == "prod" and not isinstance(dim, int):
        raise TypeError("prod reduces over one dim at a time, as torch.prod")
    return fn(t, dim=dim, keepdim=keepdim, **kwargs)


@_reg("max_dim")
def max_dim(t, dim, keepdim):
    r = torch.max(t, dim=dim, keepdim=keepdim)
    return r.values, r.indices


@_reg("min_dim")
def min_dim(t, dim, keepdim):
    r = torch.min(t, dim=dim, keepdim=keepdim)
    return r.values, r.indices


_reg("argmax")(lambda t, dim, keepdim: torch.argmax(t, dim=dim, keepdim=keepdim))
_reg("argmin")(lambda t, dim, keepdim: torch.argmin(t, dim=dim, keepdim=keepdim))
_reg("var")(lambda t, dim, correction, keepdim: torch.var(t, dim=dim, correction=correction, keepdim=keepdim))
_reg("vector_norm")(lambda t, ord, dim, keepdim: torch.linalg.vector_norm(t, ord=ord, dim=dim, keepdim=keepdim))


# -------------------------------------------------------------- linear algebra
@_reg("matmul")
def matmul(a, b):
    # torch's batched message names neither operand; check first so both devices say the same.
    if a.ndim and b.ndim and a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        sa, sb = "x".join(map(str, a.shape)), "x".join(map(str, b.shape))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    return torch.matmul(a, b)


@_reg("softmax")
def softmax(t, dim: int, log: bool):
    return torch.log_softmax(t, dim) if log else torch.softmax(t, dim)


@_reg("softmax_backward")
def softmax_backward(y, dy, dim: int, log: bool):
    if log:
        return dy - torch.exp(y) * dy.sum(dim, keepdim=True)
    return y * (dy - (dy * y).sum(dim, keepdim=True))


# ------------------------------------------------------------------ views
_reg("reshape")(lambda t, shape: t.reshape(shape))
_reg("view")(lambda t, shape: t.view(shape))
_reg("permute")(lambda t, dims: t.permute(dims))
_reg("transpose")(lambda t, d0, d1: t.transpose(d0, d1))
_reg("expand")(lambda t, shape: t.expand(shape))
_reg("squeeze")(lambda t, dim: t.squeeze() if dim is None else t.squeeze(dim))
_reg("unsqueeze")(lambda t, dim: t.unsqueeze(dim))
_reg("flatten")(lambda t, s, e: t.flatten(s, e))
_reg("narrow")(lambda t, dim, start, length: t.narrow(dim, start, length))
_reg("contiguous")(lambda t: t.contiguous())
_reg("getitem")(lambda t, index: t[index])


@_reg("as_strided")
def as_strided(t, shape, strides, offset):
    return t.as_strided(shape, strides, t.storage_offset() if offset is None else offset)


@_reg("setitem")
def setitem(t, index, value):
    t[index] = value


@_reg("index_put_")
def index_put_(t, index, values, accumulate: bool):
    if not accumulate:
        t[index] = values
        return
    # Any index (basic, advanced or mixed) selects a set of flat positions; index_add_
    # over those positions accumulates repeated ones, which t[index] += v does not.
    base = t if t.is_contiguous() else t.contiguous()
    positions = torch.arange(base.numel()).view(base.shape)[index]
    values = torch.as_tensor(values, dtype=t.dtype).expand(positions.shape)
    base.view(-1).index_add_(0, positions.reshape(-1), values.reshape(-1))
    if base is not t:
        t.copy_(base)


# ------------------------------------------------------------------ copies
_reg("cast")(lambda t, dtype: t.to(dtype.torch))
_reg("clone")(lambda t: t.clone())
_reg("copy_")(lambda dst, src: dst.copy_(src))
_reg("fill_")(lambda t, value: t.fill_(value))


# ------------------------------------------------------------------ random
_generator = torch.Generator().manual_seed(0)


@_reg("manual_seed")
def manual_seed(seed: int) -> None:
    _generator.manual_seed(seed)


@_reg("rand")
def rand(shape, dtype: DType, device: Device):
    return torch.rand(shape, dtype=dtype.torch, generator=_generator)


@_reg("randn")
def randn(shape, dtype: DType, device: Device):
    return torch.randn(shape, dtype=dtype.torch, generator=_generator)


@_reg("randint")
def randint(low: int, high: int, shape, dtype: DType, device: Device):
    return torch.randint(low, high, shape, dtype=dtype.torch, generator=_generator)


_reg("get_rng_state")(lambda device: _generator.get_state())
_reg("set_rng_state")(lambda state, device: _generator.set_state(state))


# Further ops, registered into the tables above on import.
from . import (  # noqa: E402
    cpu_math,  # noqa: F401  (math ops)
    cpu_views_random,  # noqa: F401  (diagonal / unfold views, in-place random fills)
)
