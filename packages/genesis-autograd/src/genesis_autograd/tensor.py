"""Tensor: an NDArray plus what autograd needs (requires_grad, grad, grad_fn, version counters).

This module holds a Tensor's identity, metadata, gradient bookkeeping, hooks and the in-place
protocol. Its op methods come from one mixin per op family, each defined next to that family's
Functions in ``functions/<family>.py`` (``sum`` in functions/reduce.py, ``reshape`` in
functions/views.py, ``+`` in functions/elementwise.py, ...).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from genesis_ndarray import NDArray

from . import grad_mode
from .engine import run_backward
from .function import AccumulateGrad, Node
from .functions.activation_methods import ActivationMethodsMixin
from .functions.comparison import ComparisonMixin
from .functions.creation import CreationMixin
from .functions.elementwise import ElementwiseMixin, refuse_narrowing
from .functions.elementwise_math import MathMixin
from .functions.getitem import GetitemMixin
from .functions.index import IndexMixin
from .functions.index_reduce import IndexReduceMixin
from .functions.index_write import IndexWriteMixin
from .functions.joining import JoiningMixin
from .functions.matmul import MatmulMixin
from .functions.memory import MemoryMixin
from .functions.products import ProductsMixin
from .functions.random import RandomMixin
from .functions.reduce import ReduceMixin
from .functions.reduce_more import ReduceMoreMixin
from .functions.sampling import SamplingMixin
from .functions.scan import ScanMixin
from .functions.softmax import SoftmaxMixin
from .functions.sort import SortMixin
from .functions.special import SpecialMixin
from .functions.stats import StatsMixin
from .functions.tensor_legacy import LegacyTensorMixin
from .functions.tensor_misc import TensorMiscMixin
from .functions.unique import UniqueMixin
from .functions.views import ViewsMixin
from .hooks import RemovableHandle, document_inplace_forms
from .tensor_metadata import MetadataMixin


def _stealable(grad: Tensor) -> bool:
    """Whether the engine's gradient ``grad`` is seen by nothing but the engine: the engine's slot list,
    the argument and getrefcount's hold the Tensor; the Tensor alone holds its NDArray, which is no view
    and, the backend says, shares its memory with nothing (see NDArray.exclusive)."""
    return (
        sys.getrefcount(grad) <= 4 and grad._base is None and sys.getrefcount(grad.data) <= 2 and grad.data.exclusive()
    )


class Tensor(
    MetadataMixin,
    ElementwiseMixin,
    ReduceMixin,
    SoftmaxMixin,
    MatmulMixin,
    IndexMixin,
    GetitemMixin,
    SortMixin,
    ScanMixin,
    RandomMixin,
    CreationMixin,
    ViewsMixin,
    MemoryMixin,
    MathMixin,
    ComparisonMixin,
    ProductsMixin,
    ReduceMoreMixin,
    TensorMiscMixin,
    JoiningMixin,
    IndexWriteMixin,
    IndexReduceMixin,
    UniqueMixin,
    SamplingMixin,
    SpecialMixin,
    ActivationMethodsMixin,
    StatsMixin,
    LegacyTensorMixin,
):
    """A multi-dimensional array of one dtype on one device that can record the operations applied to it.

    Make one with ``genesis.tensor(data)`` or a factory (``zeros``, ``randn``, ...). A tensor with
    ``requires_grad=True`` is a leaf of the autograd graph: operations on it record a ``grad_fn``, and
    ``backward()`` on a result fills the leaves' ``.grad``. Operations on any Tensor, an ``nn.Parameter``'s
    included, return plain Tensors.
    """

    __slots__ = ()  # the slots are TensorBase's (tensor_base.py)
    __array_priority__ = 1000  # numpy scalars defer to our reflected operators

    def __init__(self, data: NDArray, requires_grad: bool = False):
        if data.__class__ is not NDArray and not isinstance(data, NDArray):  # the class test first: cheaper
            raise TypeError(f"Tensor wraps an NDArray; use genesis.tensor(...) for {type(data).__name__}")
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._version = [0]
        self._accumulator = None
        self._hooks = None
        self._post_accumulate_grad_hooks = None
        self._retains_grad = False
        self._base = None  # for a view: the tensor whose memory it shows
        self._view_version = 0  # for a view: the version its grad_fn was recorded at (see _refresh_view)

    # ------------------------------------------------------------- autograd
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place (a leaf only; floating-point dtypes only) and return self."""
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if requires_grad and not (self.dtype.is_floating_point):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A copy with its own memory (and a copy of ``.grad``), as torch's: graph leaves only."""
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment."
            )
        out = self._result_type(self.data.clone())
        out.requires_grad = self.requires_grad
        memo[id(self)] = out
        if self.grad is not None:
            out.grad = self.grad.__deepcopy__(memo)
        return out

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's memory and version counter, outside the graph."""
        out = Tensor(self.data)
        out._version = self._version
        return out

    def detach_(self) -> Tensor:
        """Detach this tensor from the graph that made it, in place: it becomes a leaf that does not
        require grad."""
        self.grad_fn = None
        self.requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Make a non-leaf tensor keep its gradient in ``.grad`` during backward (a leaf always does)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        self._retains_grad = True

        def keep(grad: Tensor) -> None:
            self.grad = grad if self.grad is None else self.grad + grad

        self.register_hook(keep)

    @property
    def retains_grad(self) -> bool:
        """Whether retain_grad() was called on this non-leaf tensor."""
        return self._retains_grad

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Register ``hook(grad) -> Tensor or None``, called with this tensor's gradient during backward.

        A returned Tensor replaces the gradient. Returns a handle whose ``remove()`` unregisters the hook.
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        grad_fn = self.grad_fn
        if grad_fn is None:  # a leaf
            if self._hooks is None:
                self._hooks = []
            self._hooks.append(hook)
            hooks = self._hooks
        else:
            pre = grad_fn.__dict__.setdefault("_pre_hooks", {})
            hooks = pre.setdefault(self._output_nr, [])
            hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Register ``hook(tensor) -> None``, called on this leaf after backward has added to its ``.grad``.

        It sees the tensor itself, not the gradient, so it reads (or replaces) the accumulated ``.grad``;
        it cannot change the gradient that flows. As torch's: leaves only, and only backward (not
        ``autograd.grad``, which accumulates nothing) runs it. DistributedDataParallel starts each
        gradient bucket's all-reduce from one.
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = []
        self._post_accumulate_grad_hooks.append(hook)
        return RemovableHandle(self._post_accumulate_grad_hooks, hook)

    def _grad_edge(self) -> tuple[Node | AccumulateGrad, int]:
        if self._base is not None and self._view_version != self._version[0]:
            self._refresh_view()
        if self.grad_fn is not None:
            return (self.grad_fn, self._output_nr)
        if self._accumulator is None:
            self._accumulator = AccumulateGrad(self)
        return (self._accumulator, 0)

    def _accumulate_grad(self, grad: Tensor, create_graph: bool, steal: bool = False) -> None:
        """Add ``grad`` to ``.grad``. ``steal``: the caller (the engine) holds ``grad`` in one list and
        nowhere else, so that a gradient no one else can see may become ``.grad`` without a copy."""
        if self._hooks:
            steal = False  # a hook may have kept the gradient it saw or returned
            for hook in self._hooks:
                new = hook(grad)
                if new is not None:
                    grad = new
        if self.grad is None:
            if create_graph:
                self.grad = grad
            elif steal and _stealable(grad):
                self.grad = grad.detach()  # torch's AccumulateGrad steals such a gradient too
            else:  # the incoming gradient may be shared (with other leaves, the caller, a view): a copy
                self.grad = grad.detach().clone()
        elif create_graph:
            self.grad = self.grad + grad
        elif grad_mode.is_grad_enabled():
            self.grad = self.grad + grad.detach()
        else:
            self.grad.data.add_(grad.data)
        if self._post_accumulate_grad_hooks:
            for post_hook in list(self._post_accumulate_grad_hooks):
                post_hook(self)

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Tensor | Sequence[Tensor] | None = None,
    ) -> None:
        """Compute the gradient of this tensor with respect to the graph's leaves and add it to their ``.grad``.

        Args:
            gradient: the gradient of some scalar with respect to this tensor (same shape); may be omitted
                when this tensor has one element, as for a loss.
            retain_graph: keep the graph's saved tensors so that backward can run through it again;
                defaults to ``create_graph``.
            create_graph: record the backward pass itself, so that higher-order gradients can be taken.
            inputs: accumulate gradients into these tensors only, instead of all the leaves.
        """
        if retain_graph is None:
            retain_graph = create_graph
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            grads = run_backward(
                [self], [gradient], retain_graph, create_graph, inputs=inputs, allow_unused=True, accumulate=False
            )
            for t, g in zip(inputs, grads):
                if g is not None:
                    t._accumulate_grad(g, create_graph)
            return
        run_backward([self], [gradient], retain_graph, create_graph)

    # ------------------------------------------------------------- in-place ops
    # The op methods of every family write in place through these two.
    def _snapshot(self) -> Tensor:
        """This tensor's current value as the input of an in-place op's graph node.

        The node must see the value from before the write, so it gets a copy that
        carries this tensor's place in the graph.
        """
        snap = Tensor(self.data.clone(), self.requires_grad)
        snap.grad_fn, snap._output_nr = self.grad_fn, self._output_nr
        if self.grad_fn is None and self.requires_grad:  # a leaf: the snapshot feeds the leaf's AccumulateGrad
            if self._accumulator is None:
                self._accumulator = AccumulateGrad(self)
            snap._accumulator = self._accumulator
        return snap

    def _inplace(
        self, recorded: Callable[[], Tensor], plain: Callable[[], object], needs_graph: bool = False
    ) -> Tensor:
        """Run an in-place op: through a graph node when gradients flow, else directly."""
        base = self._base
        if base is not None and self._view_version != self._version[0]:
            self._refresh_view()
        if grad_mode._state.enabled and (self.requires_grad or needs_graph):
            if self.is_leaf and self.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            if base is not None and base.is_leaf and base.requires_grad:
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place operation."
                )
            result = recorded()
            self.data.copy_(result.data)
            if base is not None:
                self._rebase_view(result)
            else:
                self.grad_fn, self._output_nr = result.grad_fn, result._output_nr
                self.requires_grad = result.requires_grad
        else:
            plain()
        self._version[0] += 1
        if base is not None:
            self._view_version = self._version[0]
        return self

    def _math_inplace(self, method: str, *args: Any, **kwargs: Any) -> Tensor:
        """self.<method>_(...): the out-of-place op written back into self, refused (as torch) when its
        result would need a wider dtype or a larger shape than self has."""

        def run(x: Tensor) -> Tensor:
            out = getattr(x, method)(*args, **kwargs)
            refuse_narrowing(self.dtype, out.dtype)
            if tuple(out.shape) != tuple(self.data.shape):  # the data's (a sharded parameter's is its shard)
                raise RuntimeError(
                    f"output with shape {list(self.data.shape)} doesn't match the broadcast shape {list(out.shape)}"
                )
            return out

        needs = any(isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values()))
        return self._inplace(
            lambda: run(self._snapshot()), lambda: self.data.copy_(run(self.detach()).data), needs_graph=needs
        )


# Ops on any Tensor, a subclass's included (nn.Parameter), make plain Tensors, as in torch. Functions and
# the engine make their Tensors through this attribute of an input: they sit below this module.
Tensor._result_type = Tensor


document_inplace_forms(Tensor)
