"""The dtype table: names, sizes, and their spellings in numpy, the CUDA array interface and DLPack."""

from __future__ import annotations

import numpy as np

# name -> itemsize in bytes (the contract the ndarray layer is written against)
DTYPES: dict[str, int] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float64": 8,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "bool": 1,
}

# numpy has no bfloat16: its raw bits travel as uint16.
NUMPY_DTYPES: dict[str, np.dtype] = {name: np.dtype("uint16" if name == "bfloat16" else name) for name in DTYPES}
_FROM_NUMPY: dict[np.dtype, str] = {np.dtype(n): n for n in DTYPES if n != "bfloat16"}

# __cuda_array_interface__ typestr (little-endian); bfloat16 has no standard typestr.
TYPESTR: dict[str, str] = {
    "float32": "<f4",
    "float16": "<f2",
    "float64": "<f8",
    "int8": "|i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint8": "|u1",
    "bool": "|b1",
}
_FROM_TYPESTR: dict[str, str] = {v: k for k, v in TYPESTR.items()}

# DLPack DLDataTypeCode: kDLInt=0, kDLUInt=1, kDLFloat=2, kDLBfloat=4, kDLBool=6
DLPACK_CODE: dict[str, tuple[int, int]] = {
    "float32": (2, 32),
    "float16": (2, 16),
    "bfloat16": (4, 16),
    "float64": (2, 64),
    "int8": (0, 8),
    "int16": (0, 16),
    "int32": (0, 32),
    "int64": (0, 64),
    "uint8": (1, 8),
    "bool": (6, 8),
}
_FROM_DLPACK: dict[tuple[int, int], str] = {v: k for k, v in DLPACK_CODE.items()}


def itemsize(dtype: str) -> int:
    try:
        return DTYPES[dtype]
    except KeyError:
        raise TypeError(f"unknown dtype {dtype!r}; known: {sorted(DTYPES)}") from None


def from_numpy_dtype(dt: np.dtype) -> str:
    try:
        return _FROM_NUMPY[np.dtype(dt)]
    except KeyError:
        raise TypeError(f"numpy dtype {dt} has no genesis_storage dtype; known: {sorted(DTYPES)}") from None


def from_typestr(typestr: str) -> str:
    t = typestr.replace("=", "<")
    if t[1] in "bu i" and t.endswith("1"):
        t = "|" + t[1:]
    try:
        return _FROM_TYPESTR[t]
    except KeyError:
        raise TypeError(f"unsupported __cuda_array_interface__ typestr {typestr!r}") from None


def from_dlpack_code(code: int, bits: int, lanes: int) -> str:
    if lanes != 1:
        raise TypeError(f"DLPack dtype with {lanes} lanes is not supported")
    if (code, bits) == (1, 1):  # some producers describe bool as 1-bit unsigned
        return "bool"
    try:
        return _FROM_DLPACK[(code, bits)]
    except KeyError:
        raise TypeError(f"unsupported DLPack dtype code={code} bits={bits}") from None


def float32_to_bfloat16_bits(a: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16 (nearest even, NaN kept NaN) and return the raw uint16 bits."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    if nan.any():
        rounded[nan] = 0x7FC0
    return rounded


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
