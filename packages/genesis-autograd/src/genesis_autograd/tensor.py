"""Tensor: an NDArray plus what autograd needs (requires_grad, grad, grad_fn, version counters).

This module holds a Tensor's identity, metadata, gradient bookkeeping, hooks and the in-place
protocol. Its op methods come from one mixin per op family, each defined next to that family's
Functions in ``functions/<family>.py`` (``sum`` in functions/reduce.py, ``reshape`` in
functions/views.py, ``+`` in functions/elementwise.py, ...).
"""

from __future__ import annotations

from genesis_ndarray import NDArray

from . import grad_mode
from .engine import run_backward
from .function import AccumulateGrad
from .functions.creation import CreationMixin
from .functions.elementwise import ElementwiseMixin
from .functions.getitem import GetitemMixin
from .functions.index import IndexMixin
from .functions.matmul import MatmulMixin
from .functions.memory import MemoryMixin
from .functions.random import RandomMixin
from .functions.reduce import ReduceMixin
from .functions.scan import ScanMixin
from .functions.softmax import SoftmaxMixin
from .functions.sort import SortMixin
from .functions.views import ViewsMixin
from .printing import tensor_repr
from .size import Size


class Tensor(ElementwiseMixin, ReduceMixin, SoftmaxMixin, MatmulMixin, IndexMixin, GetitemMixin, SortMixin,
             ScanMixin, RandomMixin, CreationMixin, ViewsMixin, MemoryMixin):
    """A multi-dimensional array that can record the operations applied to it."""

    __slots__ = (
        "__weakref__", "_accumulator", "_base", "_hooks", "_output_nr", "_retains_grad", "_version",
        "_view_version", "data", "grad", "grad_fn", "requires_grad",
    )
    __array_priority__ = 1000  # numpy scalars defer to our reflected operators

    def __init__(self, data: NDArray, requires_grad: bool = False):
        if not isinstance(data, NDArray):
            raise TypeError(f"Tensor wraps an NDArray; use genesis.tensor(...) for {type(data).__name__}")
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._version = [0]
        self._accumulator = None
        self._hooks = None
        self._retains_grad = False
        self._base = None  # for a view: the tensor whose memory it shows
        self._view_version = 0  # for a view: the version its grad_fn was recorded at (see _refresh_view)

    # ------------------------------------------------------------- metadata
    shape = property(lambda self: Size(self.data.shape))
    dtype = property(lambda self: self.data.dtype)
    device = property(lambda self: self.data.device)
    ndim = property(lambda self: self.data.ndim)
    strides = property(lambda self: self.data.strides)
    is_cuda = property(lambda self: self.data.device.type == "cuda")

    def dim(self) -> int:
        return self.data.ndim

    def size(self, dim: int | None = None):
        return Size(self.data.shape) if dim is None else self.data.size(dim)

    def numel(self) -> int:
        return self.data.numel()

    def stride(self, dim: int | None = None):
        return self.data.stride(dim)

    def storage_offset(self) -> int:
        return self.data.storage_offset()

    def is_contiguous(self) -> bool:
        return self.data.is_contiguous()

    def data_ptr(self) -> int:
        return self.data.data_ptr()

    def is_floating_point(self) -> bool:
        return self.data.dtype.is_floating_point

    def element_size(self) -> int:
        return self.data.dtype.itemsize

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version_counter(self) -> int:
        return self._version[0]

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    # ------------------------------------------------------------- autograd
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
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
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
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
        self.grad_fn = None
        self.requires_grad = False
        return self

    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        self._retains_grad = True

        def keep(grad):
            self.grad = grad if self.grad is None else self.grad + grad

        self.register_hook(keep)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        """hook(grad) -> Tensor or None, called with this tensor's gradient."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.is_leaf:
            if self._hooks is None:
                self._hooks = []
            self._hooks.append(hook)
            hooks = self._hooks
        else:
            pre = self.grad_fn.__dict__.setdefault("_pre_hooks", {})
            hooks = pre.setdefault(self._output_nr, [])
            hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def _grad_edge(self):
        if self._base is not None and self._view_version != self._version[0]:
            self._refresh_view()
        if self.grad_fn is not None:
            return (self.grad_fn, self._output_nr)
        if self._accumulator is None:
            self._accumulator = AccumulateGrad(self)
        return (self._accumulator, 0)

    def _accumulate_grad(self, grad: Tensor, create_graph: bool) -> None:
        if self._hooks:
            for hook in self._hooks:
                new = hook(grad)
                if new is not None:
                    grad = new
        if not create_graph:
            grad = grad.detach()
        if self.grad is None:
            # A fresh tensor: the incoming gradient may be shared with other leaves.
            self.grad = grad.clone() if not create_graph else grad
        elif create_graph or grad_mode.is_grad_enabled():
            self.grad = self.grad + grad
        else:
            self.grad.data.add_(grad.data)

    def backward(self, gradient=None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs=None) -> None:
        if retain_graph is None:
            retain_graph = create_graph
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            grads = run_backward([self], [gradient], retain_graph, create_graph, inputs=inputs,
                                 allow_unused=True, accumulate=False)
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
        if self.grad_fn is None and self.requires_grad:
            snap._accumulator = self._grad_edge()[0]
        return snap

    def _inplace(self, recorded, plain, needs_graph: bool = False) -> Tensor:
        """Run an in-place op: through a graph node when gradients flow, else directly."""
        base = self._base
        if base is not None and self._view_version != self._version[0]:
            self._refresh_view()
        if grad_mode._state.enabled and (self.requires_grad or needs_graph):
            if self.is_leaf and self.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            if base is not None and base.is_leaf and base.requires_grad:
                raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                                   "operation.")
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

    def _math_inplace(self, method: str, *args, **kwargs) -> Tensor:
        """self.<method>_(...): the out-of-place op written back into self, refused (as torch) when its
        result would need a wider dtype or a larger shape than self has."""
        def run(x):
            out = getattr(x, method)(*args, **kwargs)
            if out.dtype.category > self.dtype.category:
                raise RuntimeError(f"result type {out.dtype.name.capitalize()} can't be cast to the desired output "
                                   f"type {self.dtype.name.capitalize()}")
            if tuple(out.shape) != tuple(self.shape):
                raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                                   f"{list(out.shape)}")
            return out

        needs = any(isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values()))
        return self._inplace(lambda: run(self._snapshot()), lambda: self.data.copy_(run(self.detach()).data),
                             needs_graph=needs)



class _RemovableHandle:
    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


# Ops on any Tensor, a subclass's included (nn.Parameter), make plain Tensors, as in torch. Functions and
# the engine make their Tensors through this attribute of an input: they sit below this module.
Tensor._result_type = Tensor
