"""CPU memory ops: metadata, copies and casts, host / device transfers, item / tolist / numpy, DLPack.

A cpu native array is a torch CPU tensor, so a transfer to or from the host is the identity.
"""

from __future__ import annotations

import torch

from ...device import cpu
from ...dtypes import dtype_of_torch
from .common import reg

reg("dtype_of")(lambda input: dtype_of_torch(input.dtype))
reg("strides")(lambda input: input.stride())
reg("storage_offset")(lambda input: input.storage_offset())
reg("is_contiguous")(torch.Tensor.is_contiguous)  # (the method itself: no frame of ours around it)
reg("data_ptr")(lambda input: input.data_ptr())
# Whether nothing else can see the tensor's memory: torch shares storage behind views and foreign
# owners in ways Python references do not show, so cpu never claims it (autograd copies instead).
reg("exclusive")(lambda input: False)
reg("item")(lambda input: input.item())
reg("value_range")(lambda input: None)  # reading a cpu tensor costs no wait: nothing is tracked
reg("tolist")(lambda input: input.tolist())
reg("to_numpy")(lambda input: input.numpy())
reg("to_cpu")(lambda input, non_blocking=False: input)
reg("from_cpu")(lambda input, device, non_blocking=False: input)


@reg("to_dlpack")
def to_dlpack(input: torch.Tensor, stream, max_version, dl_device, copy):
    kwargs = {
        k: v
        for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device), ("copy", copy))
        if v is not None
    }
    return input.__dlpack__(**kwargs)


reg("dlpack_device")(lambda input: input.__dlpack_device__())


@reg("cuda_array_interface")
def cuda_array_interface(input: torch.Tensor) -> dict:
    # An AttributeError, so that hasattr(cpu_array, "__cuda_array_interface__") is False, as torch's.
    raise AttributeError("Can't get __cuda_array_interface__ of an array in host memory")


reg("from_dlpack")(lambda obj: (torch.from_dlpack(obj), cpu))

reg("contiguous")(lambda input: input.contiguous())
reg("cast")(lambda input, dtype: input.to(dtype.torch))
reg("clone")(lambda input: input.clone())
reg("copy_")(lambda input, src: input.copy_(src))
reg("fill_")(lambda input, value: input.fill_(value))

# Host-memory state: torch's own (pinning needs a CUDA-enabled torch and a GPU, as torch.Tensor.pin_memory).
reg("is_pinned")(lambda input: input.is_pinned())
reg("pin_memory")(lambda input: input.pin_memory())
reg("is_shared")(lambda input: input.is_shared())
reg("share_memory")(lambda input: input.share_memory_())


@reg("record_stream")
def record_stream(input: torch.Tensor, stream) -> None:
    raise RuntimeError("record_stream is only supported on CUDA tensors; this tensor is on the cpu")
