"""Genesis: a deep-learning framework on cuda-python and Triton with a PyTorch-style API.

``import genesis`` is the full stack: tensors and autograd, nn, optim, the CUDA
runtime, data loading. Port a PyTorch script by changing its import.
"""

from importlib import metadata as _metadata
from pathlib import Path as _Path

from genesis_autograd import (
    DType,
    Function,
    Size,
    Tensor,
    arange,
    as_tensor,
    autocast,
    bfloat16,
    cat,
    empty,
    empty_like,
    enable_grad,
    eye,
    float16,
    float32,
    float64,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    get_autocast_dtype,
    get_default_dtype,
    get_float32_matmul_precision,
    get_rng_state,
    inference_mode,
    initial_seed,
    int8,
    int16,
    int32,
    int64,
    is_autocast_enabled,
    is_grad_enabled,
    linspace,
    manual_seed,
    no_grad,
    ones,
    ones_like,
    promote_types,
    rand_like,
    randn_like,
    seed,
    set_default_dtype,
    set_float32_matmul_precision,
    set_grad_enabled,
    set_rng_state,
    stack,
    tensor,
    uint8,
    where,
    zeros,
    zeros_like,
)
from genesis_autograd import as_device as device
from genesis_autograd import bool_ as bool
from genesis_autograd import float16 as half
from genesis_autograd import float32 as float
from genesis_autograd import float64 as double
from genesis_autograd import int32 as int
from genesis_autograd import int64 as long

from . import (
    _torch_composites,
    _torch_functions,
    _torch_indexing,
    _torch_math,
    _torch_nn_losses,
    _torch_nn_ops,
    _torch_nn_ops_more,
    _torch_nn_ops_spatial,
    _torch_products,
    _torch_runtime,
    _torch_sampling,
    _torch_segment,
    _torch_settings,
    _torch_shape,
    _torch_special,
    _torch_stats,
    _torch_tensor_misc,
    _torch_windows,
    amp,
    autograd,
    compiler,
    cuda,
    distributed,
    distributions,
    generation,
    linalg,
    nn,
    optim,
    special,
    utils,
)
from ._compile import compile
from ._torch_composites import *  # noqa: F403  (torch.X functions composed of other ops)
from ._torch_functions import *  # noqa: F403  (the torch.X functions; names in _torch_functions.__all__)
from ._torch_indexing import *  # noqa: F403  (indexing: names in _torch_indexing.__all__)
from ._torch_math import *  # noqa: F403  (elementwise math, comparisons, top-level in-place forms: its __all__)
from ._torch_nn_losses import *  # noqa: F403  (torch's top-level losses: names in _torch_nn_losses.__all__)
from ._torch_nn_ops import *  # noqa: F403  (torch's top-level activations, dropouts, distances: _torch_nn_ops.__all__)
from ._torch_nn_ops_more import *  # noqa: F403  (torch.embedding, convolution, grid_sampler, ...: its __all__)
from ._torch_nn_ops_spatial import *  # noqa: F403  (torch's top-level conv / pool / norm: names in its __all__)
from ._torch_products import *  # noqa: F403  (products and reductions: names in _torch_products.__all__)
from ._torch_runtime import *  # noqa: F403  (constants, dtype info, layouts, predicates: _torch_runtime.__all__)
from ._torch_sampling import *  # noqa: F403  (sampling and creation: names in _torch_sampling.__all__)
from ._torch_segment import *  # noqa: F403  (torch.segment_reduce: its __all__)
from ._torch_settings import *  # noqa: F403  (autocast state, threads, determinism, print options: its __all__)
from ._torch_shape import *  # noqa: F403  (shape, joining, splitting: names in _torch_shape.__all__)
from ._torch_special import *  # noqa: F403  (special functions and the math around them: its __all__)
from ._torch_stats import *  # noqa: F403  (order statistics, binning, integrals: its __all__)
from ._torch_tensor_misc import *  # noqa: F403  (Tensor queries: names in _torch_tensor_misc.__all__)
from ._torch_windows import *  # noqa: F403  (window functions: its __all__)
from .nn.functional.rnn import gru, gru_cell, lstm, lstm_cell, rnn_relu, rnn_relu_cell, rnn_tanh, rnn_tanh_cell
from .random import normal, rand, randint, randn, randperm
from .serialization import load, save
from .serialization_hf import estimate_checkpoint_bytes, load_hf_checkpoint
from .utils.data.generator import Generator


def _read_version() -> str:
    """The installed distribution's version; from pyproject.toml when run from a source tree."""
    try:
        return _metadata.version("genesis-nn")
    except _metadata.PackageNotFoundError:  # on PYTHONPATH from a checkout (tools/gpu-test): no metadata
        import tomllib

        with open(_Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])


__version__ = _read_version()

__all__ = [
    "Size",
    "randperm",
    "autocast",
    "get_autocast_dtype",
    "is_autocast_enabled",
    "DType",
    "Function",
    "Tensor",
    "amp",
    "arange",
    "as_tensor",
    "autograd",
    "compile",
    "compiler",
    "bfloat16",
    "bool",
    "cat",
    "cuda",
    "device",
    "distributed",
    "distributions",
    "double",
    "empty",
    "empty_like",
    "enable_grad",
    "eye",
    "float",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "get_default_dtype",
    "half",
    "inference_mode",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_grad_enabled",
    "linalg",
    "linspace",
    "long",
    "manual_seed",
    "nn",
    "no_grad",
    "normal",
    "ones",
    "ones_like",
    "optim",
    "promote_types",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "set_default_dtype",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "set_grad_enabled",
    "stack",
    "tensor",
    "uint8",
    "utils",
    "where",
    "zeros",
    "zeros_like",
    "get_rng_state",
    "initial_seed",
    "seed",
    "set_rng_state",
    "load",
    "save",
    "generation",
    "load_hf_checkpoint",
    "estimate_checkpoint_bytes",
    "Generator",
] + _torch_functions.__all__
__all__ += _torch_composites.__all__
__all__ += _torch_nn_ops.__all__
__all__ += _torch_nn_ops_more.__all__
__all__ += _torch_segment.__all__
__all__ += _torch_nn_ops_spatial.__all__
__all__ += _torch_nn_losses.__all__
__all__ += _torch_shape.__all__
__all__ += _torch_indexing.__all__
__all__ += _torch_sampling.__all__
__all__ += _torch_tensor_misc.__all__
__all__ += _torch_math.__all__
__all__ += _torch_products.__all__
__all__ += _torch_runtime.__all__
__all__ += _torch_settings.__all__
__all__ += _torch_special.__all__ + ["special"]
__all__ += _torch_stats.__all__ + _torch_windows.__all__
__all__ += ["gru", "gru_cell", "lstm", "lstm_cell", "rnn_relu", "rnn_relu_cell", "rnn_tanh", "rnn_tanh_cell"]
