"""genesis_kernels: Triton kernels and their launchers over raw device buffers (no torch).

Every function takes buffers (``.ptr``, ``.shape``, ``.strides`` in elements, ``.dtype``),
writes into a caller-allocated ``out`` and launches on the raw CUDA stream ``stream``.
"""

from importlib import metadata as _metadata
from pathlib import Path as _Path

from . import (
    capture,  # what launchers do under CUDA-graph capture: forbid_readback, graph error flags
    chunk_cat,  # FSDP's chunked row layout: chunk_cat.chunk_cat / chunk_split, one launch for many tensors
    optimizer,  # multi-tensor optimizer steps: optimizer.adam / sgd / total_norm / clip_by_total_norm
    sampling_check,  # multinomial's probabilities validated on the device: no host wait, capturable
    sync_debug,  # torch.cuda.set_sync_debug_mode: warn / raise on each implicit host wait
)
from .activation import activation_backward, gated_backward, gated_forward
from .add_norm import add_norm_backward, add_norm_forward
from .attention import MAX_HEAD_DIM as ATTENTION_MAX_HEAD_DIM
from .attention import attention_backward, attention_forward
from .buffer import DTYPES, Buffer, BufferLike
from .creation import arange, eye, linspace, tril, triu
from .cross_entropy import check_targets, cross_entropy, cross_entropy_backward
from .elementwise import (
    addcdiv,
    addcmul,
    binary,
    binary_dense_plan,
    clamp,
    copy,
    fill,
    lerp,
    unary,
    unary_dense_plan,
    where,
)
from .getitem import index_put
from .index import (
    embedding,
    embedding_backward,
    gather,
    index_add,
    index_select,
    masked_fill,
    masked_select,
    nonzero,
    nonzero_count,
    scatter,
    scatter_add,
)
from .kv_cache import kv_cache_write
from .matmul import matmul, matmul_plan
from .normalization import norm_backward, norm_forward
from .random import bernoulli, dropout, normal, rand, randint, randn, uniform, write_rng_state
from .reduce import arg_reduce, norm, reduce
from .reduce_online import logsumexp, std, var
from .rnn import (
    cell_plan,
    gru_cell,
    gru_cell_backward,
    lstm_cell,
    lstm_cell_backward,
    rnn_cell,
    rnn_cell_backward,
)
from .rope import rope
from .scan import cumprod, cumsum
from .search import searchsorted
from .softmax import softmax, softmax_backward
from .sort import argsort, sort, topk


def _read_version() -> str:
    """The installed distribution's version; from pyproject.toml when run from a source tree."""
    try:
        return _metadata.version("genesis-kernels")
    except _metadata.PackageNotFoundError:  # on PYTHONPATH from a checkout (tools/gpu-test): no metadata
        import tomllib

        with open(_Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])


__version__ = _read_version()


__all__ = [
    "DTYPES",
    "Buffer",
    "BufferLike",
    "activation_backward",
    "add_norm_backward",
    "add_norm_forward",
    "addcdiv",
    "addcmul",
    "arange",
    "arg_reduce",
    "argsort",
    "ATTENTION_MAX_HEAD_DIM",
    "attention_backward",
    "attention_forward",
    "bernoulli",
    "binary",
    "binary_dense_plan",
    "capture",
    "cell_plan",
    "chunk_cat",
    "clamp",
    "copy",
    "check_targets",
    "cross_entropy",
    "cross_entropy_backward",
    "cumprod",
    "cumsum",
    "dropout",
    "embedding",
    "embedding_backward",
    "eye",
    "fill",
    "gated_backward",
    "gated_forward",
    "gather",
    "gru_cell",
    "gru_cell_backward",
    "index_add",
    "index_put",
    "index_select",
    "kv_cache_write",
    "lerp",
    "linspace",
    "logsumexp",
    "lstm_cell",
    "lstm_cell_backward",
    "masked_fill",
    "masked_select",
    "matmul",
    "matmul_plan",
    "nonzero",
    "nonzero_count",
    "norm",
    "norm_backward",
    "norm_forward",
    "normal",
    "optimizer",
    "rand",
    "randint",
    "randn",
    "reduce",
    "rnn_cell",
    "rnn_cell_backward",
    "rope",
    "sampling_check",
    "scatter",
    "scatter_add",
    "searchsorted",
    "softmax",
    "softmax_backward",
    "sort",
    "sync_debug",
    "std",
    "topk",
    "tril",
    "triu",
    "uniform",
    "unary",
    "unary_dense_plan",
    "var",
    "where",
    "write_rng_state",
]
