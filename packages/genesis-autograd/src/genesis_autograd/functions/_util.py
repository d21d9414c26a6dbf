"""Helpers shared by the gradient rules."""

from __future__ import annotations

from .. import grad_mode
from ..function import Function


def data(x):
    """An input's NDArray, or a Python scalar unchanged."""
    return x.data if hasattr(x, "grad_fn") else x


def meta(x):
    """(shape, dtype) of a tensor input; None for a scalar."""
    return (tuple(x.shape), x.dtype) if hasattr(x, "grad_fn") else None


def reduce_to(grad, target):
    """Sum a broadcast gradient back to an input's shape, in the input's dtype."""
    if target is None:
        return None
    shape, dtype = target
    if tuple(grad.shape) != shape:
        lead = grad.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(
            lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1
        )
        if dims:
            grad = grad.sum(dims, keepdim=True)
        if lead or tuple(grad.shape) != shape:
            grad = grad.reshape(shape)
    if grad.dtype is not dtype:
        grad = grad.to(dtype)
    return grad


def wrap(like, array):
    """``array`` (an NDArray) as a Tensor of the class that ops on ``like`` (a Tensor) produce.

    Functions sit below tensor.py, which imports them: they make Tensors through their inputs.
    """
    return like._result_type(array)


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


class Primitive(Function):
    """A built-in Function: forward computes on NDArrays (which record nothing), so it runs
    without the no_grad() guard a user's Function gets."""

    forward_uses_ndarrays = True


def check_output_version(ctx) -> None:
    """Raise torch's in-place error when the output a backward needs was modified after forward."""
    counter, version = ctx.out_version
    if counter[0] != version:
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"the output of {ctx.name()} is at version {counter[0]}; expected version {version} instead."
        )
