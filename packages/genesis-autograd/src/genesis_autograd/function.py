"""Function: a differentiable operation, its forward and backward side by side.

``Fn.apply(*inputs)`` runs ``forward`` on the inputs' data and, when grad mode is
on and some input requires grad, records a Node (the outputs' ``grad_fn``) that
knows how to call ``backward``. A Node is also the ``ctx`` that forward and
backward share, as in torch.autograd.Function.
"""

from __future__ import annotations

from typing import Any

from . import grad_mode


class Node:
    """One recorded application of a Function: the ``ctx`` of forward and backward,
    and an edge list to the nodes that produced its inputs."""

    __slots__ = (
        "__dict__",
        "__weakref__",
        "_dirty",
        "_fn",
        "_freed",
        "_hooks",
        "_non_differentiable",
        "_saved",
        "_saved_versions",
        "materialize_grads",
        "needs_input_grad",
        "next_functions",
        "num_outputs",
    )

    def __init__(self, fn: type[Function], needs_input_grad: tuple[bool, ...]):
        self._fn = fn
        self.needs_input_grad = needs_input_grad
        self.next_functions: tuple = ()
        self._saved: tuple = ()
        self._saved_versions: tuple = ()
        self._freed = False
        self._non_differentiable: tuple = ()
        self._dirty: tuple = ()
        self._hooks: list = []
        self.num_outputs = 1
        self.materialize_grads = True

    # A recorded node keeps what backward needs; see _NullCtx.
    records = True

    # ------------------------------------------------------------ ctx API
    def save_for_backward(self, *tensors) -> None:
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version[0] for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you "
                "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                "through the graph a second time or if you need to access saved tensors after calling backward."
            )
        for t, version in zip(self._saved, self._saved_versions):
            if t is not None and t._version[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t.dtype.name} tensor of shape {list(t.shape)}], which is an input or "
                    f"output of {self.name()}, is at version {t._version[0]}; expected version {version} "
                    "instead."
                )
        return self._saved

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    # ------------------------------------------------------------ graph API
    def name(self) -> str:
        return f"{self._fn.__name__}Backward"

    def register_hook(self, hook) -> None:
        """hook(grad_inputs, grad_outputs) -> new grad_inputs or None, after backward runs."""
        self._hooks.append(hook)

    def release(self) -> None:
        """Drop saved tensors (after a backward without retain_graph)."""
        self._saved = ()
        self._freed = True

    def apply(self, *grad_outputs):
        result = self._fn.backward(self, *grad_outputs)
        if not isinstance(result, tuple):
            result = (result,)
        for hook in self._hooks:
            new = hook(result, grad_outputs)
            if new is not None:
                result = tuple(new)
        return result

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad:
    """The graph's sink for a leaf tensor: adds the incoming gradient to ``.grad``."""

    __slots__ = ("__weakref__", "variable")

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    next_functions: tuple = ()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


class Function:
    """Subclass and define ``forward(ctx, *args)`` and ``backward(ctx, *grads)``.

    forward receives the inputs as given (Tensors with grad recording off, and any
    non-tensor arguments) and returns a Tensor, an NDArray, or a tuple of them.
    backward receives one gradient per output and returns one per input (None for
    inputs that need none); it is written with Tensor ops, so that it can itself
    be differentiated (create_graph=True).
    """

    # A view's output shares memory, and so the version counter, with input 0.
    is_view = False
    # The built-in Functions compute on NDArrays, which record nothing, so their forward
    # needs no no_grad() around it; a user's forward may use Tensor ops and gets one.
    forward_uses_ndarrays = False

    @staticmethod
    def forward(ctx: Node, *args: Any, **kwargs: Any):
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Node, *grad_outputs: Any):
        raise NotImplementedError(f"backward is not implemented for {ctx.name()}")

    @classmethod
    def apply(cls, *args):
        # This runs for every op of the framework: plain loops, no generators.
        state = grad_mode._state
        needs = None
        if state.enabled:
            for a in args:
                if getattr(a, "requires_grad", False):
                    needs = tuple([getattr(x, "requires_grad", False) is True for x in args])
                    break
        base = args[0] if cls.is_view else None
        if needs is None:
            if cls.forward_uses_ndarrays:
                out = cls.forward(_null_ctx(len(args)), *args)
            else:
                with grad_mode.no_grad():
                    out = cls.forward(_null_ctx(len(args)), *args)
            return _wrap_outputs(out, None, base)
        ctx = Node(cls, needs)
        ctx.next_functions = tuple([a._grad_edge() if n else (None, 0) for a, n in zip(args, needs)])
        if cls.forward_uses_ndarrays:
            out = cls.forward(ctx, *args)
        else:
            with grad_mode.no_grad():
                out = cls.forward(ctx, *args)
        return _wrap_outputs(out, ctx, base)


class _NullCtx:
    """The ctx of a forward that records no graph: saving is a no-op.

    One instance per arity is shared; forward may set attributes on it, which nothing reads.
    """

    records = False  # forwards skip bookkeeping only backward would read

    def __init__(self, n_inputs: int):
        self.needs_input_grad = (False,) * n_inputs

    def save_for_backward(self, *tensors) -> None:
        pass

    def mark_non_differentiable(self, *tensors) -> None:
        pass

    def mark_dirty(self, *tensors) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


_NULL_CTXS: dict[int, _NullCtx] = {}


def _null_ctx(n_inputs: int) -> _NullCtx:
    ctx = _NULL_CTXS.get(n_inputs)
    if ctx is None:
        ctx = _NULL_CTXS[n_inputs] = _NullCtx(n_inputs)
    return ctx


def _wrap_outputs(out, ctx, base):  # replaced by tensor.py once Tensor exists
    raise RuntimeError("genesis_autograd.tensor has not been imported")
