"""genesis_kernels: Triton kernels and their launchers over raw device buffers (no torch).

Every function takes buffers (``.ptr``, ``.shape``, ``.strides`` in elements, ``.dtype``),
writes into a caller-allocated ``out`` and launches on the raw CUDA stream ``stream``.
"""

from .buffer import DTYPES, Buffer, BufferLike
from .elementwise import addcdiv, addcmul, binary, clamp, copy, fill, lerp, unary, where
from .matmul import matmul
from .random import bernoulli, dropout, normal, rand, randint, randn, uniform
from .reduce import logsumexp, reduce, std, var
from .softmax import softmax, softmax_backward

__all__ = [
    "DTYPES", "Buffer", "BufferLike", "addcdiv", "addcmul", "bernoulli", "binary", "clamp", "copy", "dropout",
    "fill", "lerp", "logsumexp", "matmul", "normal", "rand", "randint", "randn", "reduce", "softmax",
    "softmax_backward", "std", "uniform", "unary", "var", "where",
]
