"""Function: a differentiable operation, its forward and backward side by side.

``Fn.apply(*inputs)`` runs ``forward`` on the inputs' data and, when grad mode is
on and some input requires grad, records a Node (the outputs' ``grad_fn``) that
knows how to call ``backward``. A Node is also the ``ctx`` that forward and
backward share, as in torch.autograd.Function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from genesis_ndarray import Device, DType, NDArray

from . import grad_mode
from .autocast import _UNRESOLVED, _resolved, cast_inputs, resolved_policy
from .autocast import _state as _autocast_state

if TYPE_CHECKING:
    from .tensor import Tensor

_grad_state = grad_mode._state  # read on every apply: one lookup fewer (the object never changes)

# Set by genesis_autograd.compile while it captures a compiled function's first call: every apply (and
# _record, which the operators' fast paths call directly) then goes through it. None otherwise.
_capture_hook: Callable[[type[Function], tuple], Any] | None = None


class Node:
    """One recorded application of a Function: the ``ctx`` of forward and backward,
    and an edge list to the nodes that produced its inputs."""

    # Every node sets these three; the rest keep the class defaults below until a forward, backward or
    # hook changes them (then they live in the node's __dict__, beside what forward keeps on ctx).
    __slots__ = ("__dict__", "__weakref__", "_fn", "needs_input_grad", "next_functions")

    def __init__(self, fn: type[Function], needs_input_grad: tuple[bool, ...], next_functions: tuple = ()):
        self._fn = fn
        self.needs_input_grad = needs_input_grad
        self.next_functions: tuple = next_functions

    _saved: tuple = ()
    _saved_versions: tuple = ()
    _freed = False
    _non_differentiable: tuple = ()
    _dirty: tuple = ()
    _hooks: tuple | list = ()  # register_hook makes the node's own list
    num_outputs = 1
    materialize_grads = True

    # Set on a recorded node by _wrap_outputs (in its __dict__): for more than one output, their (shape, dtype,
    # device), which the engine reads to give zeros to outputs that got no gradient; and,
    # for a Function whose forward kept its output NDArray in ctx.out, that output's (version counter,
    # version) for check_output_version.
    _output_meta: list[tuple[tuple[int, ...], DType, Device]]
    out: NDArray
    out_version: tuple[list[int], int]

    # A recorded node keeps what backward needs; see _NullCtx.
    records = True

    # ------------------------------------------------------------ ctx API
    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for backward, which reads them as ``ctx.saved_tensors``; an in-place change to one
        before backward is reported there."""
        self._saved = tensors
        self._saved_versions = tuple([None if t is None else t._version[0] for t in tensors])

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to save_for_backward, checked against in-place changes since."""
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

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Mark outputs of forward that get no gradient (indices, masks): they do not require grad."""
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Mark inputs that forward modified in place."""
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zeros (True, the default) or None for outputs that received no gradient."""
        self.materialize_grads = value

    # ------------------------------------------------------------ graph API
    def name(self) -> str:
        """torch's name for this node's class, e.g. ``MulBackward0``."""
        return torch_node_name(self._fn.__name__)

    def register_hook(self, hook: Callable[[tuple, tuple], Sequence | None]) -> None:
        """Register ``hook(grad_inputs, grad_outputs) -> new grad_inputs or None``, called after backward runs."""
        hooks = self._hooks
        if not isinstance(hooks, list):  # the shared class default: this node's own list first
            hooks = self._hooks = []
        hooks.append(hook)

    def release(self) -> None:
        """Drop saved tensors (after a backward without retain_graph)."""
        self._saved = ()
        self._freed = True

    def apply(self, *grad_outputs: Any) -> tuple:
        """Run the Function's backward on the gradients of the outputs, then the hooks: one gradient per input."""
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


# Function class -> the op name torch gives its backward node, where the two differ.
_TORCH_OP_NAMES = {
    "ReLU": "Relu",
    "MatMul": "Mm",
    "Cast": "ToCopy",
    "ToDevice": "ToCopy",
    "Contiguous": "Clone",
    "GetItem": "Index",
    "BasicGetItem": "Slice",
    "SetItem": "CopySlices",
    "GeluTanh": "Gelu",
    "MaxDim": "Max",
    "MinDim": "Min",
    "VectorNorm": "LinalgVectorNorm",
    "ClampTensor": "Clamp",
    "Restride": "AsStrided",
    "LayerNorm": "NativeLayerNorm",
    "RMSNorm": "FusedRmsNorm",  # torch's cuda name; its cpu rms_norm is composed
}


def torch_node_name(function_name: str) -> str:
    """``Mul`` -> ``MulBackward0``, ``ReLU`` -> ``ReluBackward0``: the names torch's grad_fn objects carry."""
    name = _TORCH_OP_NAMES.get(function_name, function_name)
    return name if name == "CopySlices" else f"{name}Backward0"


class AccumulateGrad:
    """The graph's sink for a leaf tensor: adds the incoming gradient to ``.grad``."""

    __slots__ = ("__weakref__", "variable")

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    next_functions: tuple = ()
    num_outputs = 1  # as a Node's, for the engine

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
    def forward(ctx: Node, *args: Any, **kwargs: Any) -> Any:
        """Compute the outputs from the inputs (override it; a staticmethod).

        ``ctx`` keeps what backward needs (``ctx.save_for_backward(...)``, or attributes). Returns a Tensor,
        an NDArray or a tuple of them.
        """
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Node, *grad_outputs: Any) -> Any:
        """Compute the gradients of the inputs from those of the outputs (override it; a staticmethod).

        Receives one gradient per output of forward and returns one per input of forward, None for an input
        that needs none (``ctx.needs_input_grad[i]`` says which do). Written with Tensor ops, it can itself
        be differentiated (create_graph=True).
        """
        raise NotImplementedError(f"backward is not implemented for {ctx.name()}")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Run the Function on ``args`` (call this, not forward): the outputs record a graph node when
        grad mode is on and some input requires grad."""
        # This runs for every op of the framework: plain loops, no generators, and the common case (no
        # graph to record, one NDArray out) finished here without a further call.
        if _capture_hook is not None:  # genesis.compile is recording this call (compile/capture.py)
            return _capture_hook(cls, args)
        if _autocast_state.active:  # inside an autocast region: cast the inputs by the op's policy
            policy = _resolved.get(cls, _UNRESOLVED)  # resolved_policy's cache, read inline
            if policy is _UNRESOLVED:
                policy = resolved_policy(cls)
            if policy is not None:
                args = cast_inputs(policy, args)
        if _grad_state.enabled:
            for a in args:
                if getattr(a, "requires_grad", False):
                    return _record(cls, args)
        n = len(args)
        ctx: Any = _NULL_CTXS[n] if n < _SHARED_ARITIES else _NullCtx(n)  # a Node's stand-in (duck-typed)
        if cls.forward_uses_ndarrays:
            out = cls.forward(ctx, *args)
        else:
            with grad_mode.no_grad():
                out = cls.forward(ctx, *args)
        # The class of the outputs: that of the first Tensor argument (see Tensor._result_type).
        make = getattr(args[0], "_result_type", None) if args else None
        if make is None:
            make = _tensor_type(args)
        if out.__class__ is NDArray and make is not None and not cls.is_view:
            return make(out)
        return _wrap_outputs(out, None, args[0] if cls.is_view else None, make)


def _record(cls: type[Function], args: tuple) -> Any:
    """Function.apply when a graph is recorded: a Node linked to the inputs' edges, then forward."""
    if _capture_hook is not None:  # genesis.compile is recording (the operators call _record directly)
        return _capture_hook(cls, args)
    make = None  # the class of the outputs: that of the first Tensor argument
    needs = []
    edges = []
    for a in args:
        result_type = getattr(a, "_result_type", None)  # None: not a Tensor (a number, a dtype, None, ...)
        if make is None:
            make = result_type
        if result_type is not None and a.requires_grad is True:
            needs.append(True)
            fn = a.grad_fn
            if a._base is not None:  # a view: its grad_fn may need a refresh first
                edges.append(a._grad_edge())
            elif fn is not None:
                edges.append((fn, a._output_nr))
            elif a._accumulator is not None:  # a leaf whose sink exists
                edges.append((a._accumulator, 0))
            else:
                edges.append(a._grad_edge())
        else:
            needs.append(False)
            edges.append(_NO_EDGE)
    ctx = Node(cls, tuple(needs), tuple(edges))
    if cls.forward_uses_ndarrays:
        out = cls.forward(ctx, *args)
    else:
        with grad_mode.no_grad():
            out = cls.forward(ctx, *args)
    if out.__class__ is NDArray and make is not None and not ctx._non_differentiable:
        # One output, the common case (see _wrap_outputs for the rest).
        t = make(out)
        if cls.is_view:  # view, reshape, transpose, ...: a later in-place write through it reaches the base
            base = args[0]
            t._version = base._version
            t._base = base if base._base is None else base._base
            t._view_version = base._version[0]
        if out.dtype.is_floating_point:
            t.requires_grad = True
            t.grad_fn = ctx
        if "out" in ctx.__dict__:
            ctx.out_version = (t._version, t._version[0])
        # num_outputs stays 1 (the class default); one output always has its gradient when the
        # engine reaches the node, so no _output_meta is needed to make zeros for it.
        return t
    return _wrap_outputs(out, ctx, args[0] if cls.is_view else None, make)


_NO_EDGE = (None, 0)  # the edge of an input that needs no gradient


class _NullCtx:
    """The ctx of a forward that records no graph: saving is a no-op.

    One instance per arity is shared; forward may set attributes on it, which nothing reads.
    """

    records = False  # forwards skip bookkeeping only backward would read

    def __init__(self, n_inputs: int):
        self.needs_input_grad = (False,) * n_inputs

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for backward, which reads them as ``ctx.saved_tensors``; an in-place change to one
        before backward is reported there."""
        pass

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Mark outputs of forward that get no gradient (indices, masks): they do not require grad."""
        pass

    def mark_dirty(self, *tensors) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


# The shared _NullCtx of each arity below _SHARED_ARITIES (a list: indexing it is the cheapest lookup there is);
# a call with more arguments (cat of many tensors) makes its own.
_SHARED_ARITIES = 16
_NULL_CTXS = [_NullCtx(n) for n in range(_SHARED_ARITIES)]


def _wrap_outputs(out: Any, ctx: Node | None, base: Tensor | None, make: type[Tensor] | None) -> Any:
    """Tensors of class ``make`` for a forward's outputs, linked to ``ctx`` when it records a graph.

    ``make`` comes from the inputs, so that this module never imports tensor.py (which imports it).
    """
    if make is None:  # no Tensor among the inputs: a user forward that made its Tensors itself
        make = _tensor_type(out if isinstance(out, tuple) else (out,))
        if make is None:
            raise TypeError("Function.apply needs a Tensor among its arguments or the outputs of its forward")
    if out.__class__ is NDArray:
        if ctx is None:  # the common no-grad case, kept short
            t = make(out)
            if base is not None:  # a view: a later in-place write through it must reach the base's history
                t._version = base._version
                t._base = base if base._base is None else base._base
                t._view_version = base._version[0]
            return t
    single = not isinstance(out, tuple)
    items = (out,) if single else out
    tensors = []
    non_diff = ctx._non_differentiable if ctx is not None else ()
    # Outputs marked by position (built-in Functions) or by object (user Functions, as torch).
    marked_positions = {n for n in non_diff if isinstance(n, int)}
    marked_ids = {id(n.data if isinstance(n, make) else n) for n in non_diff if not isinstance(n, int)}
    for i, item in enumerate(items):
        if isinstance(item, make):
            item = item.data
        t = make(item)
        if base is not None:  # a view Function's outputs (split's pieces too) all show the base's memory
            t._version = base._version
            t._base = base if base._base is None else base._base
            t._view_version = base._version[0]
        if (
            ctx is not None
            and item.dtype.is_floating_point
            and i not in marked_positions
            and id(item) not in marked_ids
        ):
            t.requires_grad = True
            t.grad_fn = ctx
            t._output_nr = i
        tensors.append(t)
    if ctx is not None:
        if "out" in ctx.__dict__:
            # backward will read ctx.out: remember the output's version to catch in-place writes to it
            ctx.out_version = (tensors[0]._version, tensors[0]._version[0])
        ctx.num_outputs = len(tensors)
        ctx._output_meta = [(tuple(t.shape), t.dtype, t.device) for t in tensors]
    return tensors[0] if single else tuple(tensors)


def _tensor_type(items: tuple) -> type[Tensor] | None:
    """The _result_type of the first Tensor among ``items``; None if there is none."""
    for item in items:
        make = getattr(item, "_result_type", None)
        if make is not None:
            return make
    return None
