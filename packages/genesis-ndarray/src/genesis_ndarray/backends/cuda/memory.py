"""Allocation, constants and transfers between the host and CUDA devices."""

from __future__ import annotations

import math

import numpy as np
import torch

import genesis_kernels as gk
import genesis_storage as gs

from ...device import Device
from ...dtypes import DType, dtype_of_torch
from ...shape import broadcast_shapes
from .common import View, dtype_of, expand_to, new, reg, stream_of

reg("dtype_of")(dtype_of)
reg("strides")(lambda v: v.strides)
reg("storage_offset")(lambda v: v.offset)
reg("is_contiguous")(lambda v: v.is_contiguous())
reg("data_ptr")(lambda v: v.ptr)


reg("dlpack_device")(lambda v: v.__dlpack_device__())


@reg("to_dlpack")
def to_dlpack(v: View, stream, max_version, dl_device, copy):
    return v.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


@reg("from_dlpack")
def from_dlpack(obj) -> tuple[View, Device]:
    v = gs.from_dlpack(obj)
    return v, Device("cuda", v.device)


@reg("empty")
def empty(shape, dtype: DType, device: Device) -> View:
    return new(shape, dtype, device)


@reg("full")
def full(shape, value, dtype: DType, device: Device) -> View:
    out = new(shape, dtype, device)
    if math.prod(out.shape):
        gk.fill(out, value, stream=stream_of(out))
    return out


@reg("fill_")
def fill_(v: View, value) -> None:
    if math.prod(v.shape):
        gk.fill(v, value, stream=stream_of(v))


@reg("arange")
def arange(start, end, step, dtype: DType, device: Device) -> View:
    n = max(0, math.ceil((end - start) / step))
    out = new((n,), dtype, device)
    if n:
        gk.arange(out, start, step, stream=stream_of(out))
    return out


def _host_bytes(t: torch.Tensor) -> np.ndarray:
    """A C-contiguous numpy array holding exactly t's bytes (bfloat16 as raw uint16)."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy()


@reg("from_cpu")
def from_cpu(t: torch.Tensor, device: Device, non_blocking: bool = False) -> View:
    out = new(tuple(t.shape), dtype_of_torch(t.dtype), device)
    if t.numel():
        out.storage.copy_from_host(_host_bytes(t).reshape(-1))
    return out


@reg("to_cpu")
def to_cpu(v: View, non_blocking: bool = False) -> torch.Tensor:
    host = gs.to_numpy(v)
    t = torch.from_numpy(np.ascontiguousarray(host))
    if v.dtype == "bfloat16":
        t = t.view(torch.bfloat16)
    return t.reshape(v.shape)


@reg("to_numpy")
def to_numpy(v: View) -> np.ndarray:
    return np.ascontiguousarray(gs.to_numpy(v)).reshape(v.shape)


@reg("item")
def item(v: View):
    return to_cpu(v).item()


@reg("tolist")
def tolist(v: View):
    return to_cpu(v).tolist()


@reg("cast")
def cast(v: View, dtype: DType) -> View:
    out = gs.empty(v.shape, dtype.name, v.device)
    if math.prod(v.shape):
        gk.copy(v, out, stream=stream_of(v))
    return out


@reg("clone")
def clone(v: View) -> View:
    return cast(v, dtype_of(v))


@reg("contiguous")
def contiguous(v: View) -> View:
    return v if v.is_contiguous() else clone(v)


@reg("copy_")
def copy_(dst: View, src: View) -> None:
    if broadcast_shapes(dst.shape, src.shape) != tuple(dst.shape):
        raise RuntimeError(
            f"output with shape {list(dst.shape)} doesn't match the broadcast shape "
            f"{list(broadcast_shapes(dst.shape, src.shape))}"
        )
    if src.device != dst.device:
        src = from_cpu(to_cpu(src), Device("cuda", dst.device))
    if math.prod(dst.shape):
        gk.copy(expand_to(src, dst.shape), dst, stream=stream_of(dst))
