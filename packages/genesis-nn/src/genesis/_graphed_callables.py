"""make_graphed_callables: a module's (or function's) forward and backward, each captured as a CUDA graph.

torch.cuda.make_graphed_callables, built from genesis_autograd's public API only. For each callable:
warm up on a side stream (lazy state, kernel compilation and caches settle outside the capture), capture
the forward, then (in reverse order, as a backward pass runs) the backward as `autograd.grad` of the
static outputs against static gradient buffers; all graphs share one private pool. The result is an
autograd Function whose forward copies new inputs into the static ones and replays the forward graph,
and whose backward copies the incoming gradients and replays the backward graph.

As in torch, the outputs are the static buffers themselves (the next call overwrites them), the graphs
must run in the order they were captured, and the captured work is fixed: no data-dependent control
flow, the same shapes and dtypes, the same `requires_grad` of the inputs, and a module called in the
training mode it was captured in (in the other mode its original forward runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from genesis_autograd import Function, Tensor, empty_like, grad
from genesis_autograd.cuda import CUDAGraph, Stream, current_stream, graph, graph_pool_handle, stream, synchronize

from .nn.module import Module


def _outputs(out: Any) -> tuple[tuple[Tensor, ...], bool]:
    """A callable's outputs as a flat tuple, and whether it returned a single Tensor."""
    if isinstance(out, Tensor):
        return (out,), True
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return tuple(out), False
    raise TypeError(
        f"make_graphed_callables: a callable must return a Tensor or a tuple of Tensors, got {type(out).__name__}"
    )


def _grad_of(outputs: Sequence[Tensor], inputs: Sequence[Tensor], grad_outputs, allow_unused: bool):
    """The gradients of the outputs that require one, with respect to the inputs that require one."""
    outs = [o for o in outputs if o.requires_grad]
    ins = [i for i in inputs if i.requires_grad]
    if not outs or not ins:
        return None
    return grad(outs, ins, grad_outputs=grad_outputs, allow_unused=allow_unused)


def make_graphed_callables(
    callables,
    sample_args,
    num_warmup_iters: int = 3,
    allow_unused_input: bool = False,
    pool=None,
):
    """Graphed versions of `callables` (a Module or function, or a tuple of them): forward and backward
    each replay a CUDA graph captured once with `sample_args` (a tuple of Tensors per callable). All the
    graphs share one private memory pool: `pool` (a graph_pool_handle() or CUDAGraph.pool()) or a new one.

    Returns the same structure as given: for a Module the module itself, its forward replaced (in the
    training mode it had at capture); for a function a function. Autograd-aware: the inputs and, for a
    Module, its parameters get gradients as from the original callable.
    """
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError(f"{len(callables)} callables but {len(sample_args)} tuples of sample_args")
    for c, args in zip(callables, sample_args):
        if not isinstance(args, tuple) or not all(isinstance(a, Tensor) for a in args):
            raise TypeError("make_graphed_callables: sample_args for each callable must be a tuple of Tensors only")
        if isinstance(c, Module):
            if c._forward_hooks or c._forward_pre_hooks or c._backward_hooks:  # torch refuses these too
                raise RuntimeError(
                    "make_graphed_callables does not support modules with registered hooks (they would run "
                    "once, at capture, and never again)"
                )
        if any(a.device.type != "cuda" for a in args):
            raise RuntimeError("make_graphed_callables needs CUDA tensors as sample_args")

    params = [tuple(c.parameters()) if isinstance(c, Module) else () for c in callables]
    surfaces = [tuple(args) + p for args, p in zip(sample_args, params)]
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    pool = graph_pool_handle() if pool is None else pool

    # Warm up on a side stream: first calls allocate lazy state and compile kernels, which must not
    # happen inside a capture.
    synchronize()
    side = Stream()
    side.wait_stream(current_stream())
    with stream(side):
        for func, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outs, _ = _outputs(func(*args))
                _grad_of(outs, surface, [empty_like(o) for o in outs if o.requires_grad], allow_unused_input)
                del outs  # (the warm-up's memory is free again before the captures)
    synchronize()

    static_outputs: list[tuple[Tensor, ...]] = []
    single_output: list[bool] = []
    for func, args, g in zip(callables, sample_args, fwd_graphs):
        with graph(g, pool=pool):
            out = func(*args)
        outs, single = _outputs(out)
        static_outputs.append(outs)
        single_output.append(single)

    # Backward graphs in reverse order, as a backward pass through the callables would run them.
    static_grad_outputs: list[tuple[Tensor | None, ...]] = [()] * len(callables)
    static_grad_inputs: list[tuple[Tensor | None, ...]] = [()] * len(callables)
    for i in reversed(range(len(callables))):
        grad_outs = tuple(empty_like(o) if o.requires_grad else None for o in static_outputs[i])
        grads = None
        if any(g is not None for g in grad_outs):
            with graph(bwd_graphs[i], pool=pool):
                grads = _grad_of(
                    static_outputs[i], surfaces[i], [g for g in grad_outs if g is not None], allow_unused_input
                )
        it = iter(grads or ())  # one gradient per surface tensor that requires one, in order
        static_grad_inputs[i] = tuple(next(it) if grads is not None and a.requires_grad else None for a in surfaces[i])
        static_grad_outputs[i] = grad_outs

    results: list[Any] = []
    for i, func in enumerate(callables):
        fn = _graphed(
            fwd_graphs[i], bwd_graphs[i], surfaces[i], static_outputs[i], static_grad_outputs[i], static_grad_inputs[i]
        )
        n_args, single, module_params = len(sample_args[i]), single_output[i], params[i]

        def run(*user_args, _fn=fn, _n=n_args, _single=single, _params=module_params):
            if len(user_args) != _n:
                raise TypeError(f"graphed callable takes {_n} Tensor arguments, got {len(user_args)}")
            out = _fn.apply(*user_args, *_params)
            return out[0] if _single else out

        if isinstance(func, Module):
            results.append(_replace_forward(func, run))
        else:
            results.append(run)
    return results[0] if just_one else tuple(results)


def _replace_forward(module: Module, graphed: Callable) -> Module:
    """The module with its forward replaced by `graphed` while in the training mode of the capture."""
    training, original = module.training, module.forward

    def forward(*args):
        return graphed(*args) if module.training == training else original(*args)

    module.forward = forward  # type: ignore[method-assign]
    return module


def _graphed(
    fwd_graph: CUDAGraph,
    bwd_graph: CUDAGraph,
    surface: tuple[Tensor, ...],
    outputs: tuple[Tensor, ...],
    grad_outputs: tuple[Tensor | None, ...],
    grad_inputs: tuple[Tensor | None, ...],
) -> type[Function]:
    """The autograd Function that replays one callable's two graphs. The graphs are held by the class
    (so they live as long as the returned callable)."""

    class Graphed(Function):
        graphs = (fwd_graph, bwd_graph)

        @staticmethod
        def forward(ctx, *inputs):
            for static, new in zip(surface, inputs):
                if static.data_ptr() != new.data_ptr():  # parameters are the static ones: no copy
                    static.copy_(new)
            fwd_graph.replay()
            return tuple(o.detach() for o in outputs)

        @staticmethod
        def backward(ctx, *grads):
            for static, new in zip(grad_outputs, grads):
                if static is None:
                    continue
                if new is None:  # an output the loss does not use
                    static.zero_()
                elif static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            bwd_graph.replay()
            # Clones: a gradient handed to autograd may be kept (as a .grad), and the next replay
            # overwrites the static buffer.
            return tuple(None if g is None else g.detach().clone() for g in grad_inputs)

    return Graphed
