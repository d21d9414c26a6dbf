"""The backward engine: walk the graph from the outputs in reverse topological
order, summing gradients per node, and deliver them to leaves or to the
requested inputs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import genesis_ndarray as nd

from . import grad_mode
from .anomaly import _state as _anomaly
from .anomaly import check_gradients
from .function import AccumulateGrad, Node

# One list of final callbacks per backward pass running in this thread (a hook may start a nested one).
_callbacks = threading.local()


def queue_callback(callback: Callable[[], None]) -> None:
    """Run ``callback()`` once the backward pass now running has finished (torch's
    ``Variable._execution_engine.queue_callback``).

    Only from inside a backward pass (a hook); callbacks run in the order queued, after every gradient
    of the pass is accumulated, and may queue more. DistributedDataParallel waits for its gradient
    all-reduces in one.
    """
    stack = getattr(_callbacks, "stack", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].append(callback)


def run_backward(*args, **kwargs):
    """Shared by Tensor.backward and autograd.grad: the engine's walk, then the callbacks its hooks queued.

    With ``inputs`` and ``accumulate=False`` (autograd.grad) the gradients of those
    inputs are returned and no ``.grad`` is touched.
    """
    stack = _callbacks.__dict__.setdefault("stack", [])
    queued: list[Callable[[], None]] = []
    stack.append(queued)
    try:
        results = _walk(*args, **kwargs)
        while queued:  # a callback may queue another
            queued.pop(0)()
    finally:
        stack.pop()
    return results


def _roots(tensors, grad_tensors):
    # The engine sits below tensor.py (which imports it): a Tensor is known by its _result_type,
    # the class it makes new Tensors with.
    roots = []
    for t, g in zip(tensors, grad_tensors):
        make = getattr(t, "_result_type", None)
        if make is None:
            raise TypeError(f"backward expects Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (got a tensor of shape {list(t.shape)})"
                )
            g = make(nd.ones(*t.shape, dtype=t.dtype, device=t.device))
        elif not isinstance(g, make):
            g = make(nd.array(g, dtype=t.dtype, device=t.device))
        if g.data.shape != t.data.shape:  # (the NDArrays' plain tuples: no Size made per check)
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {list(g.shape)} and output[0] has a shape "
                f"of {list(t.shape)}."
            )
        roots.append((t._grad_edge(), g))
    return roots


def _topological_order(starts) -> list:
    """Nodes reachable from ``starts``, each after every node that feeds it a gradient."""
    order, seen = [], set()
    for start in starts:
        if id(start) in seen:
            continue
        seen.add(id(start))
        stack = [(start, iter(start.next_functions))]
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def _walk(
    tensors: Sequence,
    grad_tensors: Sequence,
    retain_graph: bool,
    create_graph: bool,
    inputs: Sequence | None = None,
    allow_unused: bool = False,
    accumulate: bool = True,
):
    """Deliver the gradients of ``tensors`` through the graph, in reverse topological order."""
    roots = _roots(tensors, grad_tensors)
    pending: dict = {}  # node -> one gradient slot per output of the node
    for (node, nr), g in roots:
        _add(pending, node, nr, g)
    wanted = None
    if inputs is not None:
        wanted = {}
        for i, t in enumerate(inputs):
            edge = t._grad_edge() if t.requires_grad else (None, 0)
            if edge[0] is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            wanted[edge[0]] = (i, edge[1])
    results = [None] * (len(inputs) if inputs is not None else 0)

    order = _topological_order([node for (node, _), _ in roots])
    with grad_mode.set_grad_enabled(create_graph):
        for node in order:
            grads = pending.pop(node, None)
            if grads is None:
                continue
            sink = node.__class__ is AccumulateGrad  # (the graph's two node classes: no subclasses)
            hooks = None if sink else node.__dict__.get("_pre_hooks")
            if hooks:  # tensor hooks of this node's outputs (register_hook, retain_grad)
                for nr, fns in hooks.items():
                    for fn in fns:
                        if grads[nr] is not None:
                            new = fn(grads[nr])
                            if new is not None:
                                grads[nr] = new
            if wanted is not None and node in wanted:
                index, nr = wanted[node]
                results[index] = grads[nr]
                if not accumulate and sink:
                    continue
            if sink:
                if accumulate:
                    node.variable._accumulate_grad(grads[0], create_graph, True)
                continue
            if node._freed:
                _ = node.saved_tensors  # raises torch's "backward through the graph a second time" error
            if node.num_outputs != 1:  # one output always has its gradient here: nothing to make
                grads = _materialize(node, grads)
            if node._hooks:  # Node.apply: backward, then the node's hooks
                grad_inputs = node.apply(*grads)
            else:  # the same, inline: once per node of every backward
                grad_inputs = node._fn.backward(node, *grads)
                if not isinstance(grad_inputs, tuple):
                    grad_inputs = (grad_inputs,)
            if _anomaly.enabled:
                check_gradients(node, grad_inputs)
            if len(grad_inputs) < len(node.next_functions):
                raise RuntimeError(
                    f"function {node.name()} returned an incorrect number of gradients (expected "
                    f"{len(node.next_functions)}, got {len(grad_inputs)})"
                )
            for (child, nr), g in zip(node.next_functions, grad_inputs):
                if child is not None and g is not None:  # _add, inline: once per edge of every backward
                    slots = pending.get(child)
                    if slots is None:
                        slots = pending[child] = [None] * child.num_outputs
                    held = slots[nr]
                    slots[nr] = g if held is None else held + g
            # Hold the delivered gradients in their slots only: a leaf's sink may then keep one without a
            # copy when nothing else holds it (Tensor._accumulate_grad counts the references).
            grad_inputs = g = held = None
            if not retain_graph:  # Node.release, inline
                node._saved = ()
                node._freed = True
    if inputs is not None and not allow_unused:
        for i, r in enumerate(results):
            if r is None:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}) appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
    return results


def _add(pending: dict, node, nr: int, grad) -> None:
    slots = pending.get(node)
    if slots is None:
        slots = [None] * node.num_outputs
        pending[node] = slots
    slots[nr] = grad if slots[nr] is None else slots[nr] + grad


def _materialize(node: Node, grads: list) -> list:
    """Missing output gradients become zeros (torch's materialize_grads default)."""
    if all(g is not None for g in grads) or not node.materialize_grads:
        return grads
    outputs = node._output_meta
    make = next(g for g in grads if g is not None)._result_type
    return [
        g if g is not None else make(nd.zeros(*outputs[i][0], dtype=outputs[i][1], device=outputs[i][2]))
        for i, g in enumerate(grads)
    ]
