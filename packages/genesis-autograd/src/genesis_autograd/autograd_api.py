"""genesis.autograd's functional entry points: backward() and grad()."""

from __future__ import annotations

from collections.abc import Sequence

from .engine import run_backward
from .factories import zeros_like
from .tensor import Tensor


def _as_list(x) -> list:
    if x is None:
        return []
    return [x] if isinstance(x, Tensor) else list(x)


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs=None) -> None:
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_list(inputs)
        results = run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, allow_unused=True,
                               accumulate=False)
        for t, g in zip(inputs, results):
            if g is not None:
                t._accumulate_grad(g, create_graph)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool = False, materialize_grads: bool = False) -> tuple:
    """Gradients of ``outputs`` with respect to ``inputs``, returned rather than stored in ``.grad``."""
    outputs = _as_list(outputs)
    single = isinstance(inputs, Tensor)
    inputs: Sequence[Tensor] = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    results = run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                           allow_unused=allow_unused or materialize_grads, accumulate=False)
    if materialize_grads:
        results = [zeros_like(t) if r is None else r for r, t in zip(results, inputs)]
    return tuple(results) if not single else (results[0],)
