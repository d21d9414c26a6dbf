"""Genesis: a deep-learning framework on cuda-python and Triton with a PyTorch-style API.

``import genesis`` is the full stack: tensors and autograd, nn, optim, the CUDA
runtime, data loading. Port a PyTorch script by changing its import.
"""

from genesis_autograd import (
    DType,
    Function,
    Tensor,
    arange,
    as_tensor,
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
    get_default_dtype,
    inference_mode,
    int8,
    int16,
    int32,
    int64,
    is_grad_enabled,
    linspace,
    manual_seed,
    no_grad,
    normal,
    ones,
    ones_like,
    promote_types,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    set_default_dtype,
    set_grad_enabled,
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

from . import amp, autograd, cuda, nn, optim, utils

__version__ = "0.1.0"


def matmul(a: Tensor, b: Tensor) -> Tensor:
    a, b = amp.cast_for_matmul(a, b)
    return a.matmul(b)


def softmax(x: Tensor, dim: int) -> Tensor:
    return x.softmax(dim)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    return x.log_softmax(dim)


def exp(x: Tensor) -> Tensor:
    return x.exp()


def log(x: Tensor) -> Tensor:
    return x.log()


def relu(x: Tensor) -> Tensor:
    return x.relu()


def sum(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return x.sum(dim, keepdim)


def mean(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return x.mean(dim, keepdim)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    return a.maximum(b)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    return a.minimum(b)


def clamp(x: Tensor, min=None, max=None) -> Tensor:
    return x.clamp(min, max)


def argmax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    return x.argmax(dim, keepdim)


__all__ = [
    "DType", "Function", "Tensor", "amp", "arange", "argmax", "as_tensor", "autograd", "bfloat16", "bool",
    "cat", "clamp", "cuda", "device", "double", "empty", "empty_like", "enable_grad", "exp", "eye", "float",
    "float16", "float32", "float64", "from_dlpack", "from_numpy", "full", "full_like", "get_default_dtype",
    "half",
    "inference_mode", "int", "int8", "int16", "int32", "int64", "is_grad_enabled", "linspace", "log",
    "log_softmax", "long", "manual_seed", "matmul", "maximum", "mean", "minimum", "nn", "no_grad", "normal",
    "ones", "ones_like", "optim", "promote_types", "rand", "rand_like", "randint", "randn", "randn_like",
    "relu", "set_default_dtype", "set_grad_enabled", "softmax", "stack", "sum", "tensor", "uint8", "utils",
    "where", "zeros", "zeros_like",
]
