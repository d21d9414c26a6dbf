"""genesis.autograd's functional entry points: backward() and grad()."""

from __future__ import annotations

from collections.abc import Sequence

from .engine import run_backward
from .factories import zeros_like
from .tensor import Tensor

Tensors = Tensor | Sequence[Tensor]


def _as_list(x: Tensors | Sequence[Tensor | None] | None) -> list:
    if x is None:
        return []
    return [x] if isinstance(x, Tensor) else list(x)


def backward(
    tensors: Tensors,
    grad_tensors: Tensors | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensors | None = None,
) -> None:
    """Compute the gradients of ``tensors`` with respect to the graph's leaves and add them to their ``.grad``.

    Args:
        tensors: the tensors to differentiate (``loss`` or several outputs).
        grad_tensors: one gradient per tensor (same shape), the vector of the vector-Jacobian product; may be
            omitted, or None in the list, for a tensor of one element.
        retain_graph: keep the graph's saved tensors for another backward; defaults to ``create_graph``.
        create_graph: record the backward pass itself, for higher-order gradients.
        inputs: accumulate into these tensors' ``.grad`` only, instead of all the leaves.
    """
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_list(inputs)
        results = run_backward(
            tensors, grads, retain_graph, create_graph, inputs=inputs, allow_unused=True, accumulate=False
        )
        for t, g in zip(inputs, results):
            if g is not None:
                t._accumulate_grad(g, create_graph)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(
    outputs: Tensors,
    inputs: Tensors,
    grad_outputs: Tensors | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, returned rather than added to ``.grad``.

    Args:
        outputs: the tensors to differentiate.
        inputs: the tensors to differentiate with respect to; one gradient comes back for each.
        grad_outputs: one gradient per output (the vector of the vector-Jacobian product); may be omitted
            for outputs of one element.
        retain_graph: keep the graph's saved tensors for another backward; defaults to ``create_graph``.
        create_graph: record the backward pass, so that the returned gradients can be differentiated again.
        allow_unused: give None for an input the outputs do not depend on, instead of raising.
        materialize_grads: give zeros instead of None for such an input.

    Returns:
        A tuple with one gradient (or None) per input.
    """
    outputs = _as_list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    results = run_backward(
        outputs,
        grads,
        retain_graph,
        create_graph,
        inputs=inputs,
        allow_unused=allow_unused or materialize_grads,
        accumulate=False,
    )
    if materialize_grads:
        results = [zeros_like(t) if r is None else r for r, t in zip(results, inputs)]
    return tuple(results) if not single else (results[0],)
