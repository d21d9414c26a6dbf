"""Helpers shared by the gradient rules and the Tensor mixins of every family."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from genesis_ndarray import NDArray

from .. import grad_mode
from ..function import Function

if TYPE_CHECKING:
    from ..tensor import Tensor


class Primitive(Function):
    """A built-in Function: forward computes on NDArrays (which record nothing), so it runs
    without the no_grad() guard a user's Function gets."""

    forward_uses_ndarrays = True


def data(x):
    """An input's NDArray, or a Python scalar unchanged."""
    return x.data if hasattr(x, "grad_fn") else x


def meta(x):
    """(shape, dtype) of a tensor input; None for a scalar."""
    if hasattr(x, "grad_fn"):
        nd = x.data
        return (nd.shape, nd.dtype)
    return None


def wrap(like, array):
    """``array`` (an NDArray) as a Tensor of the class that ops on ``like`` (a Tensor) produce.

    Functions and mixins sit below tensor.py, which imports them: they make Tensors through their inputs.
    """
    return like._result_type(array)


def is_tensor(x: object) -> TypeGuard[Tensor]:
    return hasattr(x, "_result_type")


def tensor_arg(self, x, op: str, name: str):
    """An index / mask / source argument as a Tensor (an NDArray is wrapped), else torch's TypeError."""
    if is_tensor(x):
        return x
    if isinstance(x, NDArray):
        return wrap(self, x)
    raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def backward_recorded(*grads) -> bool:
    """Whether a backward is itself recorded (create_graph, or a gradient that requires grad): it must
    then use Tensor ops, which can be differentiated; otherwise it may work on the NDArrays directly,
    without the Tensor layer's per-op cost (the usual case)."""
    if grad_mode._state.enabled:  # (the flag itself: every backward of every op asks)
        return True
    for g in grads:  # (a loop, not any() over a generator, for the same reason)
        if g is not None and g.requires_grad:
            return True
    return False


def plain(x):
    """A Tensor argument's NDArray; a Python scalar (or an NDArray) unchanged."""
    return x.data if is_tensor(x) else x


def requires_grad(x) -> bool:
    return is_tensor(x) and x.requires_grad


class ValuesIndices(tuple):
    """(values, indices) with names, like torch.return_types.max / sort / topk."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def reduce_to(grad, target):
    """Sum a broadcast gradient back to an input's shape, in the input's dtype."""
    if target is None:
        return None
    shape, dtype = target
    nd = grad.data
    if nd.shape != shape:
        lead = grad.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1)
        if dims:
            grad = grad.sum(dims, keepdim=True)
        if lead or tuple(grad.shape) != shape:
            grad = grad.reshape(shape)
    if grad.data.dtype is not dtype:  # (a mixed-dtype op's input: autocast's bf16 residual, ...)
        grad = grad.to(dtype) if backward_recorded(grad) else wrap(grad, grad.data.astype(dtype))
    return grad


def saved_output(ctx, g, recompute):
    """The forward's output for a backward formula (``g``: the incoming gradient).

    Plain backward reuses the NDArray forward kept in ``ctx.out``. When the backward
    itself is being recorded (create_graph=True) the output is recomputed from the
    saved input with Tensor ops, so that second derivatives flow through it; keeping
    the output Tensor itself would tie it to its own grad_fn in a reference cycle.
    """
    check_output_version(ctx)
    if grad_mode.is_grad_enabled():
        return recompute(ctx.saved_tensors[0])
    return wrap(g, ctx.out)


def check_output_version(ctx) -> None:
    """Raise torch's in-place error when the output a backward needs was modified after forward."""
    counter, version = ctx.out_version
    if counter[0] != version:
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"the output of {ctx.name()} is at version {counter[0]}; expected version {version} instead."
        )
