"""The CPU backend: torch CPU tensors, torch's own kernels and semantics.

One module per op family (the same names as ``backends/cuda`` and ``genesis_kernels``);
importing this package registers every op under the device type "cpu". Each family
module registers its own functions through ``common.reg`` and imports no other family.
"""

from . import (
    activation,
    add_norm,
    attention,
    chunk_cat,
    creation,
    cross_entropy,
    elementwise,
    fused_pointwise,
    getitem,
    index,
    kv_cache,
    matmul,
    memory,
    normalization,
    optimizer,
    random,
    reduce,
    rnn,
    rope,
    sampling,
    scan,
    search,
    softmax,
    sort,
    views,
)

__all__ = [
    "activation",
    "add_norm",
    "attention",
    "chunk_cat",
    "creation",
    "cross_entropy",
    "elementwise",
    "fused_pointwise",
    "getitem",
    "index",
    "kv_cache",
    "matmul",
    "memory",
    "normalization",
    "optimizer",
    "random",
    "reduce",
    "rnn",
    "rope",
    "sampling",
    "scan",
    "search",
    "softmax",
    "sort",
    "views",
]
