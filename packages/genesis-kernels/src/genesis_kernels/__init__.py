"""genesis_kernels: Triton kernels and their launchers over raw device buffers (no torch)."""

from .buffer import DTYPES, Buffer, BufferLike
from .elementwise import addcdiv, addcmul, binary, clamp, copy, fill, lerp, unary, where
from .reduce import logsumexp, reduce, std, var

__all__ = [
    "DTYPES", "Buffer", "BufferLike", "addcdiv", "addcmul", "binary", "clamp", "copy", "fill", "lerp",
    "logsumexp", "reduce", "std", "unary", "var", "where",
]
