"""The CUDA backend: genesis_storage StridedViews computed on by genesis_kernels.

One module per op family (the same names as ``backends/cpu`` and ``genesis_kernels``), plus
``common`` (registration, dtypes, allocation, streams). Importing this package registers every
op under the device type "cuda".
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
    linear_cross_entropy,
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
    "linear_cross_entropy",
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
