"""What genesis' checkpoint readers and writers share: the safetensors dtype codes, the error a bad file
raises, and a tensor's bytes in and out (serialization.py for genesis' own format, serialization_torch*.py
for PyTorch's zips, serialization_hf.py for Hugging Face folders)."""

from __future__ import annotations

import ctypes

import numpy as np

from genesis_autograd import DType, Tensor, bfloat16, empty, from_numpy

# genesis dtype name <-> safetensors dtype code
DTYPE_CODES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}
DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}


class CorruptCheckpointError(RuntimeError):
    """The file is truncated, corrupted, or not a checkpoint genesis can read."""


def tensor_bytes(t: Tensor) -> bytes:
    """The tensor's elements, C order, little-endian, exactly as stored (bit for bit)."""
    host = t.detach().cpu().contiguous()
    if host.dtype is bfloat16:  # numpy has no bfloat16: read the raw host memory of the cpu tensor
        n = host.numel() * 2
        return ctypes.string_at(host.data_ptr(), n) if n else b""
    return np.ascontiguousarray(host.numpy()).tobytes()


def tensor_from_bytes(data: bytes, dtype: DType, shape: list[int]) -> Tensor:
    """A new cpu tensor holding ``data`` bit for bit."""
    if dtype is bfloat16:
        out = empty(*shape, dtype=bfloat16)
        if data:
            ctypes.memmove(out.data_ptr(), data, len(data))
        return out
    return from_numpy(np.frombuffer(data, dtype=dtype.numpy).reshape(shape).copy())
