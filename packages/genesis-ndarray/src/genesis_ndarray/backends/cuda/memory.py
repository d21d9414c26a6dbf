"""Memory ops on CUDA: metadata, casts and copies, clone / contiguous / fill_, transfers between host and
device, item / tolist / numpy, DLPack and the CUDA Array Interface."""

from __future__ import annotations

import math
import sys

import numpy as np
import torch

import genesis_kernels as gk
import genesis_storage as gs

from ...device import Device, cuda_device
from ...dtypes import DType, dtype_of_torch
from ...shape import broadcast_shapes
from .common import (
    RANGE_UPLOAD_LIMIT,
    View,
    dtype_of,
    expand_to,
    forget_range,
    new,
    reg,
    set_range,
    stream_of,
    value_range,
)

reg("dtype_of")(dtype_of)
reg("strides")(lambda input: input.strides)
reg("storage_offset")(lambda input: input.offset)
reg("is_contiguous")(View.is_contiguous)  # (the method itself: no frame of ours around it)


@reg("data_ptr")
def data_ptr(input: View) -> int:
    forget_range(input)  # whoever holds the address may write through it (NCCL, ctypes, ...)
    return input.ptr


@reg("exclusive")
def exclusive(input: View) -> bool:
    """Whether ``input`` is dense and is the only view of its storage, held by one array only.

    Counted by references: the caller's array and this call hold the view (plus getrefcount's
    argument), and the view holds its storage. Any other view of the memory, any other holder of this
    view, raises a count.
    """
    return sys.getrefcount(input) <= 3 and sys.getrefcount(input.storage) <= 2 and input.is_contiguous()


reg("dlpack_device")(lambda input: input.__dlpack_device__())
# Version 3 of the CUDA Array Interface, with the current stream: genesis_storage's view describes itself.
reg("cuda_array_interface")(lambda input: input.__cuda_array_interface__)


@reg("to_dlpack")
def to_dlpack(input: View, stream, max_version, dl_device, copy):
    return input.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


@reg("from_dlpack")
def from_dlpack(obj) -> tuple[View, Device]:
    v = gs.from_dlpack(obj)
    return v, cuda_device(v.device)


@reg("fill_")
def fill_(input: View, value) -> None:
    forget_range(input)
    if math.prod(input.shape):
        gk.fill(input, value, stream=stream_of(input))


def _host_bytes(t: torch.Tensor) -> np.ndarray:
    """A C-contiguous numpy array holding exactly t's bytes (bfloat16 as raw uint16)."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy()


def _forbid_readback(op: str) -> None:
    gk.capture.forbid_readback(op, "the data must reach the host, which waits for the stream")


_RANGED = ("int64", "int32")  # the index dtypes (and casts between them)


@reg("from_cpu")
def from_cpu(input: torch.Tensor, device: Device, non_blocking: bool = False) -> View:
    # Capture-safe: during a capture genesis_storage stages the bytes in pinned memory the graph owns.
    out = new(tuple(input.shape), dtype_of_torch(input.dtype), device)
    if input.numel():
        host = _host_bytes(input).reshape(-1)
        out.storage.copy_from_host(host)
        if out.dtype in _RANGED and host.size <= RANGE_UPLOAD_LIMIT:
            # The host has the values now: their bounds cost a min and a max, and spare each index op
            # that reads them the sync of its bounds check (exact: both bounds are values held).
            set_range(out, int(host.min()), int(host.max()), True)
    return out


@reg("to_cpu")
def to_cpu(input: View, non_blocking: bool = False) -> torch.Tensor:
    _forbid_readback("copying a cuda tensor to the cpu")
    return _read(input)


def _read(input: View) -> torch.Tensor:
    """``input``'s values as a cpu tensor (waits for the stream: callers have called _forbid_readback)."""
    host = gs.to_numpy(input)
    gk.sampling_check.raise_pending()  # the stream has run: a multinomial check queued before reports here
    t = torch.from_numpy(np.ascontiguousarray(host))
    if input.dtype == "bfloat16":
        t = t.view(torch.bfloat16)
    return t.reshape(input.shape)


@reg("to_numpy")
def to_numpy(input: View) -> np.ndarray:
    _forbid_readback("numpy()")
    host = gs.to_numpy(input)
    gk.sampling_check.raise_pending()
    return np.ascontiguousarray(host).reshape(input.shape)


@reg("value_range")
def known_value_range(input: View) -> tuple[int, int, bool] | None:
    """Host-known (lowest, highest, exact) bounds of an integer array's values, or None (common.value_range)."""
    return value_range(input)


@reg("item")
def item(input: View):
    _forbid_readback("item()")
    return _read(input).item()


@reg("tolist")
def tolist(input: View):
    _forbid_readback("tolist()")
    return _read(input).tolist()


@reg("cast")
def cast(input: View, dtype: DType) -> View:
    out = gs.empty(input.shape, dtype.name, input.device)
    if math.prod(input.shape):
        gk.copy(input, out, stream=stream_of(input))
        known = value_range(input)
        if known is not None:  # the same values, where the new dtype holds them all (set_range checks)
            set_range(out, *known)
    return out


@reg("clone")
def clone(input: View) -> View:
    return cast(input, dtype_of(input))


@reg("contiguous")
def contiguous(input: View) -> View:
    return input if input.is_contiguous() else clone(input)


@reg("copy_")
def copy_(input: View, src: View) -> None:
    forget_range(input)
    if broadcast_shapes(input.shape, src.shape) != tuple(input.shape):
        raise RuntimeError(
            f"output with shape {list(input.shape)} doesn't match the broadcast shape "
            f"{list(broadcast_shapes(input.shape, src.shape))}"
        )
    if src.device != input.device:
        src = from_cpu(to_cpu(src), cuda_device(input.device))
    if math.prod(input.shape):
        gk.copy(expand_to(src, input.shape), input, stream=stream_of(input))


# Host-memory state of device memory: never pinned host memory; always shareable (torch's is_shared is True
# for CUDA tensors, and share_memory_ leaves them as they are).
reg("is_pinned")(lambda input: False)
reg("is_shared")(lambda input: True)
reg("share_memory")(lambda input: None)


@reg("pin_memory")
def pin_memory(input: View) -> View:
    raise RuntimeError("cannot pin 'cuda' memory: only dense CPU tensors can be pinned")


@reg("record_stream")
def record_stream(input: View, stream) -> None:
    """The storage keeps its memory from reuse until the work queued on ``stream`` has run."""
    input.storage.record_stream(stream)
