"""Reductions on CUDA: dims, keepdim and result dtypes as torch, Triton kernels."""

from __future__ import annotations

import math

import genesis_kernels as gk
import genesis_storage as gs

from ...dtypes import DType, bool_, float32, int64
from ...shape import normalize_dim, normalize_dims
from .common import View, dtype_of, reg, resolver, set_range, stream_of
from .memory import cast, fill_


def _keep(out: View, shape, dims) -> View:
    """Re-insert reduced dims as size 1 (keepdim=True) by viewing ``out``."""
    full = tuple(1 if i in dims else s for i, s in enumerate(shape))
    strides = []
    it = iter(out.strides)
    for i in range(len(shape)):
        strides.append(0 if i in dims else next(it))
    return out.as_strided(full, tuple(strides), out.offset)


def _result_dtype(op: str, dtype: DType) -> DType:
    if op in ("all", "any"):
        return bool_
    if op in ("sum", "prod") and not dtype.is_floating_point:
        return int64
    if op in ("mean", "logsumexp") and not dtype.is_floating_point:
        raise RuntimeError(
            f"{op}(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {dtype.name}"
        )
    return dtype


_HALF = ("float16", "bfloat16")
# Reductions whose float32 result from a half input equals the float32 reduction of its float32 cast
# (the kernels convert each element on load and accumulate in float32, as after the cast).
_WIDENING = frozenset(("sum", "mean", "prod"))


@reg("reduce")
def reduce(op: str, input: View, dim, keepdim: bool, dtype: DType | None) -> View:
    widened = None
    if dtype is not None and dtype is not dtype_of(input):
        if dtype is float32 and input.dtype in _HALF and op in _WIDENING:
            widened = dtype  # the kernels accumulate halves in float32 anyway: write float32, no cast first
        else:
            input = cast(input, dtype)
    src = input
    if len(src.shape) == 0:
        src = src.as_strided((1,), (1,), src.offset)
    dims = normalize_dims(dim, len(input.shape)) if len(input.shape) else (0,)
    out_dtype = widened or _result_dtype(op, dtype_of(input))
    if out_dtype is not dtype_of(src) and op not in ("all", "any") and widened is None:
        src = cast(src, out_dtype)
    out_shape = tuple(s for i, s in enumerate(src.shape) if i not in dims)
    if op in ("amax", "amin") and any(src.shape[d] == 0 for d in dims):
        raise IndexError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    out = gs.empty(out_shape, out_dtype.name, input.device)
    if math.prod(out_shape):
        if math.prod(src.shape):
            if op == "logsumexp":  # the one-pass (max, sum) summary kernels, not the plain fold's
                gk.logsumexp(src, out, dims, stream=stream_of(input))
            else:
                gk.reduce(op, src, out, dims, stream=stream_of(input))
        else:  # reducing over an empty dim: the op's identity, or NaN for mean
            fill_(
                out,
                {"sum": 0, "prod": 1, "mean": float("nan"), "all": True, "any": False, "logsumexp": float("-inf")}[op],
            )
    return _keep(out, input.shape, dims) if keepdim and len(input.shape) else out


@resolver("reduce")
def resolve_reduce(op: str, dtype: DType):
    """The general reduce with op bound and no dtype argument; the result dtype where it cannot raise."""

    def run(input: View, dim, keepdim: bool) -> View:
        return reduce(op, input, dim, keepdim, None)

    return run, _result_dtype(op, dtype) if dtype.is_floating_point or op in ("all", "any") else None


def _arg(op: str, input: View, dim: int, keepdim: bool) -> tuple[View, View]:
    dim = normalize_dim(dim, len(input.shape))
    src = input if len(input.shape) else input.as_strided((1,), (1,), input.offset)
    if src.shape[dim] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")
    out_shape = tuple(s for i, s in enumerate(src.shape) if i != dim)
    values = gs.empty(out_shape, input.dtype, input.device)
    indices = gs.empty(out_shape, "int64", input.device)
    if math.prod(src.shape):
        gk.arg_reduce(op, src, values, indices, dim, stream=stream_of(input))
        # Positions along dim: bounds the host knows, so an embedding / index op that reads them (a decode
        # loop's next token) skips its bounds check's stream wait.
        set_range(indices, 0, src.shape[dim] - 1, False)
    if keepdim and len(input.shape):
        return _keep(values, input.shape, (dim,)), _keep(indices, input.shape, (dim,))
    return values, indices


reg("max_dim")(lambda input, dim, keepdim: _arg("max", input, dim, keepdim))
reg("min_dim")(lambda input, dim, keepdim: _arg("min", input, dim, keepdim))


def _arg_index(op: str, input: View, dim, keepdim: bool) -> View:
    if dim is None:
        flat = input if input.is_contiguous() else cast(input, dtype_of(input))
        flat = flat.as_strided((math.prod(input.shape),), (1,), flat.offset)
        index = _arg(op, flat, 0, False)[1]
        return _keep(index, input.shape, tuple(range(len(input.shape)))) if keepdim else index
    return _arg(op, input, dim, keepdim)[1]


reg("argmax")(lambda input, dim, keepdim: _arg_index("max", input, dim, keepdim))
reg("argmin")(lambda input, dim, keepdim: _arg_index("min", input, dim, keepdim))


@reg("var")
def var(input: View, dim, correction: int, keepdim: bool) -> View:
    if not dtype_of(input).is_floating_point:
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got {input.dtype}")
    dims = normalize_dims(dim, len(input.shape))
    out_shape = tuple(s for i, s in enumerate(input.shape) if i not in dims)
    out = gs.empty(out_shape, input.dtype, input.device)
    if math.prod(out_shape):
        gk.var(input, out, dims, correction, stream=stream_of(input))
    return _keep(out, input.shape, dims) if keepdim else out


@reg("vector_norm")
def vector_norm(input: View, ord: float, dim, keepdim: bool) -> View:
    if not dtype_of(input).is_floating_point:
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {dtype_of(input).name}"
        )
    src = input.as_strided((1,), (1,), input.offset) if not input.shape else input
    dims = normalize_dims(dim, len(input.shape)) if input.shape else (0,)
    out_shape = tuple(s for i, s in enumerate(src.shape) if i not in dims)
    if (ord < 0 or math.isinf(ord)) and any(src.shape[d] == 0 for d in dims):
        raise RuntimeError(
            f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
            "operation does not have an identity"
        )
    out = gs.empty(out_shape, input.dtype, input.device)
    if math.prod(out_shape):
        gk.norm(src, out, ord, dims, stream=stream_of(input))
    if not input.shape:
        return out
    return _keep(out, input.shape, dims) if keepdim else out
