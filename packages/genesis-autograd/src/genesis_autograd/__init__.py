"""genesis_autograd: Tensor, Function and the backward engine.

It sits on genesis_ndarray and re-exports what the layer above needs from it
(dtypes, devices, the CUDA runtime facade), so that genesis never reaches past it.
"""

from importlib import metadata as _metadata
from pathlib import Path as _Path

from genesis_ndarray import (
    ALL_DTYPES,
    Device,
    DType,
    NDArray,
    as_device,
    as_dtype,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    get_default_dtype,
    get_float32_matmul_precision,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    resolve_device,
    set_default_dtype,
    set_float32_matmul_precision,
    uint8,
)

from . import cuda, functions
from .autocast import autocast, autocast_policy, get_autocast_dtype, is_autocast_enabled
from .autograd_api import backward, grad
from .engine import queue_callback
from .factories import (
    arange,
    as_tensor,
    bernoulli,
    cat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    linspace,
    manual_seed,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)
from .function import Function, Node
from .functions.activation import geglu, glu, swiglu
from .functions.add_norm import add_layer_norm, add_rms_norm
from .functions.attention import fused_attention_supported, scaled_dot_product_attention
from .functions.cross_entropy import cross_entropy
from .functions.fused_pointwise import fused_pointwise
from .functions.kv_cache import kv_cache_write_
from .functions.linear_cross_entropy import linear_cross_entropy
from .functions.matmul import linear
from .functions.normalization import layer_norm, rms_norm
from .functions.optimizer import (
    advance_counters_,
    multi_tensor_adam_,
    multi_tensor_clip_,
    multi_tensor_norm,
    multi_tensor_norm_supported,
    multi_tensor_sgd_,
)
from .functions.rnn import fused_gru_cell, fused_lstm_cell, rnn_layer
from .functions.rope import apply_rotary_emb
from .functions.special import erfcx, i0e, i1, i1e, log_ndtr, ndtri, zeta
from .functions.special_bessel import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
)
from .functions.stats import searchsorted
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .size import Size
from .tensor import Tensor


def _read_version() -> str:
    """The installed distribution's version; from pyproject.toml when run from a source tree."""
    try:
        return _metadata.version("genesis-autograd")
    except _metadata.PackageNotFoundError:  # on PYTHONPATH from a checkout (tools/gpu-test): no metadata
        import tomllib

        with open(_Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])


__version__ = _read_version()

__all__ = [
    "add_layer_norm",
    "add_rms_norm",
    "apply_rotary_emb",
    "Size",
    "autocast",
    "autocast_policy",
    "get_autocast_dtype",
    "is_autocast_enabled",
    "ALL_DTYPES",
    "DType",
    "Device",
    "Function",
    "GradcheckError",
    "NDArray",
    "Node",
    "Tensor",
    "arange",
    "as_device",
    "as_dtype",
    "as_tensor",
    "resolve_device",
    "backward",
    "bfloat16",
    "bool_",
    "cat",
    "cross_entropy",
    "linear_cross_entropy",
    "fused_pointwise",
    "cuda",
    "empty",
    "empty_like",
    "enable_grad",
    "eye",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "functions",
    "fused_gru_cell",
    "fused_lstm_cell",
    "geglu",
    "glu",
    "get_default_dtype",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_grad_enabled",
    "kv_cache_write_",
    "advance_counters_",
    "multi_tensor_adam_",
    "multi_tensor_clip_",
    "multi_tensor_norm",
    "multi_tensor_norm_supported",
    "multi_tensor_sgd_",
    "is_inference_mode_enabled",
    "layer_norm",
    "linspace",
    "manual_seed",
    "no_grad",
    "normal",
    "ones",
    "ones_like",
    "promote_types",
    "queue_callback",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "linear",
    "rms_norm",
    "rnn_layer",
    "fused_attention_supported",
    "scaled_dot_product_attention",
    "set_default_dtype",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "set_grad_enabled",
    "stack",
    "swiglu",
    "tensor",
    "uint8",
    "where",
    "zeros",
    "zeros_like",
    "bernoulli",
    "get_rng_state",
    "initial_seed",
    "randperm",
    "seed",
    "set_rng_state",
    # torch.special's functions without a Tensor method (genesis.special calls them)
    "erfcx",
    "i0e",
    "i1",
    "i1e",
    "log_ndtr",
    "ndtri",
    "zeta",
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "searchsorted",
]
