"""The torch.X functions: thin forwards to the Tensor methods of the same name.

``genesis.exp(x)`` is ``x.exp()``, with torch's argument names and defaults. A function whose
Tensor method does not exist (yet) fails only when it is called, with the AttributeError of the
missing method. Functions that are not methods (``where``, ``cat``, the factories) live in
genesis_autograd and are re-exported by ``genesis`` directly.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, overload

from genesis_autograd import Tensor, get_default_dtype

Number = int | float | bool
Dims = int | Sequence[int] | None


# ------------------------------------------------------------------ unary math
def abs(input: Tensor) -> Tensor:
    return input.abs()


def neg(input: Tensor) -> Tensor:
    return input.neg()


def exp(input: Tensor) -> Tensor:
    return input.exp()


def exp2(input: Tensor) -> Tensor:
    return input.exp2()


def expm1(input: Tensor) -> Tensor:
    return input.expm1()


def log(input: Tensor) -> Tensor:
    return input.log()


def log2(input: Tensor) -> Tensor:
    return input.log2()


def log10(input: Tensor) -> Tensor:
    return input.log10()


def log1p(input: Tensor) -> Tensor:
    return input.log1p()


def sqrt(input: Tensor) -> Tensor:
    return input.sqrt()


def rsqrt(input: Tensor) -> Tensor:
    return input.rsqrt()


def square(input: Tensor) -> Tensor:
    return input.square()


def reciprocal(input: Tensor) -> Tensor:
    return input.reciprocal()


def sin(input: Tensor) -> Tensor:
    return input.sin()


def cos(input: Tensor) -> Tensor:
    return input.cos()


def tan(input: Tensor) -> Tensor:
    return input.tan()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def relu(input: Tensor) -> Tensor:
    return input.relu()


def erf(input: Tensor) -> Tensor:
    return input.erf()


def sign(input: Tensor) -> Tensor:
    return input.sign()


def floor(input: Tensor) -> Tensor:
    return input.floor()


def ceil(input: Tensor) -> Tensor:
    return input.ceil()


def round(input: Tensor) -> Tensor:
    return input.round()


def trunc(input: Tensor) -> Tensor:
    return input.trunc()


def isnan(input: Tensor) -> Tensor:
    return input.isnan()


def isinf(input: Tensor) -> Tensor:
    return input.isinf()


def isfinite(input: Tensor) -> Tensor:
    return input.isfinite()


def logical_not(input: Tensor) -> Tensor:
    return input.logical_not()


negative = neg


# ------------------------------------------------------------------ binary
def add(input: Tensor, other: Tensor | Number, *, alpha: Number = 1) -> Tensor:
    return input + (other * alpha if alpha != 1 else other)


def sub(input: Tensor, other: Tensor | Number, *, alpha: Number = 1) -> Tensor:
    return input - (other * alpha if alpha != 1 else other)


def mul(input: Tensor, other: Tensor | Number) -> Tensor:
    return input * other


def div(input: Tensor, other: Tensor | Number) -> Tensor:
    return input / other


def floor_divide(input: Tensor, other: Tensor | Number) -> Tensor:
    return input // other


# pow and remainder also take a number as input, as torch's: number ** tensor, number % tensor.
@overload
def pow(input: Tensor, exponent: Tensor | Number) -> Tensor: ...
@overload
def pow(input: Number, exponent: Tensor) -> Tensor: ...
def pow(input: Any, exponent: Any) -> Tensor:
    return input**exponent


@overload
def remainder(input: Tensor, other: Tensor | Number) -> Tensor: ...
@overload
def remainder(input: Number, other: Tensor) -> Tensor: ...
def remainder(input: Any, other: Any) -> Tensor:
    return input % other


def fmod(input: Tensor, other: Tensor | Number) -> Tensor:
    return input.fmod(other)


def atan2(input: Tensor, other: Tensor) -> Tensor:
    return input.atan2(other)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return input.maximum(other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return input.minimum(other)


def eq(input: Tensor, other: Tensor | Number) -> Tensor:
    return input.eq(other)


def ne(input: Tensor, other: Tensor | Number) -> Tensor:
    return input.ne(other)


def lt(input: Tensor, other: Tensor | Number) -> Tensor:
    return input.lt(other)


def le(input: Tensor, other: Tensor | Number) -> Tensor:
    return input.le(other)


def gt(input: Tensor, other: Tensor | Number) -> Tensor:
    return input.gt(other)


def ge(input: Tensor, other: Tensor | Number) -> Tensor:
    return input.ge(other)


def logical_and(input: Tensor, other: Tensor) -> Tensor:
    return input.logical_and(other)


def logical_or(input: Tensor, other: Tensor) -> Tensor:
    return input.logical_or(other)


def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    return input.logical_xor(other)


subtract, multiply, divide, true_divide, arctan2 = sub, mul, div, div, atan2


# ------------------------------------------------------------------ clamp and ternary
def clamp(input: Tensor, min: Tensor | Number | None = None, max: Tensor | Number | None = None) -> Tensor:
    return input.clamp(min, max)


def clamp_min(input: Tensor, min: Tensor | Number) -> Tensor:
    return input.clamp_min(min)


def clamp_max(input: Tensor, max: Tensor | Number) -> Tensor:
    return input.clamp_max(max)


clip = clamp


def lerp(input: Tensor, end: Tensor, weight: Tensor | Number) -> Tensor:
    return input.lerp(end, weight)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
    return input.addcmul(tensor1, tensor2, value=value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
    return input.addcdiv(tensor1, tensor2, value=value)


# ------------------------------------------------------------------ reductions and scans
def sum(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype=None) -> Tensor:
    return input.sum(dim, keepdim, dtype=dtype)


def mean(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype=None) -> Tensor:
    return input.mean(dim, keepdim, dtype=dtype)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype=None) -> Tensor:
    return input.prod(dim, keepdim, dtype=dtype)


def amax(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    return input.amax(dim, keepdim)


def amin(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    return input.amin(dim, keepdim)


def max(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False) -> Any:
    """The largest element; with dim, (values, indices); with a Tensor, the elementwise maximum."""
    return input.max(dim, keepdim)


def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False) -> Any:
    """The smallest element; with dim, (values, indices); with a Tensor, the elementwise minimum."""
    return input.min(dim, keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return input.argmax(dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return input.argmin(dim, keepdim)


def var(
    input: Tensor,
    dim: Dims = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: int | None = None,
) -> Tensor:
    return input.var(dim, unbiased, keepdim, correction=correction)


def std(
    input: Tensor,
    dim: Dims = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: int | None = None,
) -> Tensor:
    return input.std(dim, unbiased, keepdim, correction=correction)


def logsumexp(input: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    return input.logsumexp(dim, keepdim)


def all(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    return input.all(dim, keepdim)


def any(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    return input.any(dim, keepdim)


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    return input.cumsum(dim, dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    return input.cumprod(dim, dtype=dtype)


# ------------------------------------------------------------------ linear algebra
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product of ``input`` and ``other`` (torch.matmul's broadcasting); under autocast,
    in the autocast dtype."""
    return input.matmul(other)


def softmax(input: Tensor, dim: int) -> Tensor:
    return input.softmax(dim)


def log_softmax(input: Tensor, dim: int) -> Tensor:
    return input.log_softmax(dim)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    return input.tril(diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    return input.triu(diagonal)


# ------------------------------------------------------------------ layout
def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    return input.reshape(shape)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return input.transpose(dim0, dim1)


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    return input.permute(dims)


def t(input: Tensor) -> Tensor:
    return input.t()


def squeeze(input: Tensor, dim: int | None = None) -> Tensor:
    return input.squeeze(dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return input.unsqueeze(dim)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    return input.flatten(start_dim, end_dim)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    return input.unflatten(dim, sizes)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    return input.narrow(dim, start, length)


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces of ``tensor`` along ``dim``.

    Args:
        tensor: the tensor to split.
        split_size_or_sections: the size of each piece (the last may be smaller), or a list of sizes summing
            to the size of ``dim``.
        dim: the dimension to split.
    """
    return tensor.split(split_size_or_sections, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return input.chunk(chunks, dim)


def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    return input.movedim(source, destination)


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    return input.swapaxes(axis0, axis1)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return input.diagonal(offset, dim1, dim2)


def clone(input: Tensor) -> Tensor:
    return input.clone()


def detach(input: Tensor) -> Tensor:
    return input.detach()


def numel(input: Tensor) -> int:
    return input.numel()


def is_tensor(obj: object) -> bool:
    """Whether ``obj`` is a genesis Tensor (an nn.Parameter included)."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


swapdims = swapaxes


# ------------------------------------------------------------------ indexing, sorting
def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    return input.gather(dim, index)


def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor | Number) -> Tensor:
    return input.scatter(dim, index, src)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return input.scatter_add(dim, index, src)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    return input.index_select(dim, index)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Number = 1) -> Tensor:
    return input.index_add(dim, index, source, alpha=alpha)


def masked_fill(input: Tensor, mask: Tensor, value: Tensor | Number) -> Tensor:
    return input.masked_fill(mask, value)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    return input.masked_select(mask)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    return input.nonzero(as_tuple=as_tuple) if as_tuple else input.nonzero()


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    return input.take_along_dim(indices, dim)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> tuple[Tensor, Tensor]:
    return (
        input.sort(dim=dim, descending=descending, stable=stable)
        if stable
        else input.sort(dim=dim, descending=descending)
    )


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    return (
        input.argsort(dim=dim, descending=descending, stable=stable)
        if stable
        else input.argsort(dim=dim, descending=descending)
    )


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Tensor, Tensor]:
    return input.topk(k, dim=dim, largest=largest, sorted=sorted)


# ------------------------------------------------------------------ comparison of whole tensors
def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """A view of ``input`` expanded to ``size`` by broadcasting (``-1`` keeps a size)."""
    return input.broadcast_to(size)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (a bool tensor, the two broadcast).

    Equal values (infinities included) are close; a finite value is never close to an infinity;
    NaNs are close to each other only with ``equal_nan``. Both tensors must have the same dtype.
    """
    if input.dtype != other.dtype:
        raise RuntimeError(f"isclose: input dtype {input.dtype} did not match other dtype {other.dtype}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b = input.detach(), other.detach()
    close = a == b
    if a.dtype.category == 0 or (rtol == 0 and atol == 0):
        return close
    if a.dtype.category < 2:  # integers: the tolerance is a real number, so compare in floating point
        a, b = a.to(get_default_dtype()), b.to(get_default_dtype())
    elif equal_nan:
        close = close | (a.isnan() & b.isnan())
    error = (a - b).abs()
    return close | (error.isfinite() & (error <= atol + rtol * b.abs()))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when every element of ``input`` is close to ``other``'s (see ``isclose``), as a Python bool."""
    return bool(isclose(input, other, rtol=rtol, atol=atol, equal_nan=equal_nan).all().item())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when the two tensors have the same shape and the same values (NaN equals nothing)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input.detach() == other.detach()).all().item())


# ------------------------------------------------------------------ random
def bernoulli(input: Tensor, p: float | None = None) -> Tensor:
    """Draws 1 with the probability in each element of ``input`` (or with ``p`` everywhere)."""
    return input.bernoulli() if p is None else input.bernoulli(p)


__all__ = [
    "abs",
    "allclose",
    "broadcast_to",
    "equal",
    "isclose",
    "add",
    "addcdiv",
    "addcmul",
    "all",
    "amax",
    "amin",
    "any",
    "arctan2",
    "argmax",
    "argmin",
    "argsort",
    "atan2",
    "bernoulli",
    "ceil",
    "chunk",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "clone",
    "cos",
    "cumprod",
    "cumsum",
    "detach",
    "diagonal",
    "div",
    "divide",
    "eq",
    "erf",
    "exp",
    "exp2",
    "expm1",
    "flatten",
    "floor",
    "floor_divide",
    "fmod",
    "gather",
    "ge",
    "gt",
    "index_add",
    "index_select",
    "is_floating_point",
    "is_tensor",
    "isfinite",
    "isinf",
    "isnan",
    "le",
    "lerp",
    "log",
    "log1p",
    "log2",
    "log10",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "lt",
    "masked_fill",
    "masked_select",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "movedim",
    "mul",
    "multiply",
    "narrow",
    "ne",
    "neg",
    "negative",
    "nonzero",
    "numel",
    "permute",
    "pow",
    "prod",
    "reciprocal",
    "relu",
    "remainder",
    "reshape",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "sigmoid",
    "sign",
    "sin",
    "softmax",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "std",
    "sub",
    "subtract",
    "sum",
    "swapaxes",
    "swapdims",
    "t",
    "take_along_dim",
    "tan",
    "tanh",
    "topk",
    "transpose",
    "tril",
    "triu",
    "true_divide",
    "trunc",
    "unflatten",
    "unsqueeze",
    "var",
]


def _document() -> None:
    """Give each function without a docstring of its own its Tensor method's, which it calls.

    torch documents the function and points the method at it; here the methods sit a layer below,
    in genesis_autograd, and carry the text.
    """
    for name in __all__:
        fn = globals()[name]
        method = getattr(Tensor, fn.__name__, None)
        if not fn.__doc__ and method is not None and method.__doc__:
            fn.__doc__ = (
                f"{inspect.cleandoc(method.__doc__)}\n\nThe function form of ``Tensor.{fn.__name__}``: "
                f"``genesis.{fn.__name__}(input, ...)`` is ``input.{fn.__name__}(...)``."
            )


_document()
