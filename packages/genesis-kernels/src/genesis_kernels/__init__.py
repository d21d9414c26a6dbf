"""genesis_kernels: Triton kernels and their launchers over raw device buffers (no torch).

Every function takes buffers (``.ptr``, ``.shape``, ``.strides`` in elements, ``.dtype``),
writes into a caller-allocated ``out`` and launches on the raw CUDA stream ``stream``.
"""

from .buffer import DTYPES, Buffer, BufferLike
from .creation import arange, linspace
from .elementwise import addcdiv, addcmul, binary, clamp, copy, fill, lerp, unary, where
from .matmul import matmul
from .random import bernoulli, dropout, normal, rand, randint, randn, uniform
from .reduce import arg_reduce, logsumexp, reduce, std, var
from .softmax import softmax, softmax_backward

__all__ = [
    "DTYPES", "Buffer", "BufferLike", "addcdiv", "addcmul", "arange", "arg_reduce", "bernoulli", "binary",
    "clamp", "copy", "dropout", "fill", "lerp", "linspace", "logsumexp", "matmul", "normal", "rand", "randint",
    "randn", "reduce", "softmax", "softmax_backward", "std", "uniform", "unary", "var", "where",
]
