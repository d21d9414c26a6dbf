"""Tensor: an NDArray plus what autograd needs (requires_grad, grad, grad_fn).

Every differentiable method goes through a Function in ``functions``; methods
that have no gradient (comparisons, argmax, ...) go straight to the NDArray.
"""

from __future__ import annotations

from numbers import Number

from genesis_ndarray import NDArray, as_device, as_dtype

from . import function as _function_module
from . import functions as F
from . import grad_mode
from .engine import run_backward
from .function import AccumulateGrad, Node


class Tensor:
    """A multi-dimensional array that can record the operations applied to it."""

    __slots__ = (
        "__weakref__", "_accumulator", "_base", "_hooks", "_output_nr", "_retains_grad", "_version", "data",
        "grad", "grad_fn", "requires_grad",
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

    # ------------------------------------------------------------- metadata
    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    device = property(lambda self: self.data.device)
    ndim = property(lambda self: self.data.ndim)
    strides = property(lambda self: self.data.strides)
    is_cuda = property(lambda self: self.data.device.type == "cuda")

    def dim(self) -> int:
        return self.data.ndim

    def size(self, dim: int | None = None):
        return self.data.size(dim)

    def numel(self) -> int:
        return self.data.numel()

    def stride(self, dim: int | None = None):
        return self.data.stride(dim)

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
        from .printing import tensor_repr

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

    __hash__ = object.__hash__

    # ------------------------------------------------------------- autograd
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if requires_grad and not (self.dtype.is_floating_point):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self.data.__dlpack__(stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.data.__dlpack_device__()

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

    # ------------------------------------------------------------- transfers
    def to(self, *args, dtype=None, device=None, non_blocking: bool = False, copy: bool = False) -> Tensor:
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            else:
                try:
                    dtype = as_dtype(arg)
                except TypeError:
                    device = arg
        out = self
        if dtype is not None and as_dtype(dtype) is not out.dtype:
            out = F.Cast.apply(out, as_dtype(dtype))
        if device is not None and as_device(device) != out.device:
            out = F.ToDevice.apply(out, as_device(device), non_blocking)
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self) -> Tensor:
        return self.to(device="cpu")

    def cuda(self, device=None) -> Tensor:
        return self.to(device="cuda" if device is None else as_device(device if not isinstance(device, int)
                                                                      else f"cuda:{device}"))

    def float(self) -> Tensor: return self.to(dtype="float32")
    def half(self) -> Tensor: return self.to(dtype="float16")
    def bfloat16(self) -> Tensor: return self.to(dtype="bfloat16")
    def double(self) -> Tensor: return self.to(dtype="float64")
    def long(self) -> Tensor: return self.to(dtype="int64")
    def int(self) -> Tensor: return self.to(dtype="int32")
    def bool(self) -> Tensor: return self.to(dtype="bool")

    def type(self, dtype=None):
        return self.dtype if dtype is None else self.to(dtype=dtype)

    def numpy(self):
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self.data.numpy()

    def __array__(self, dtype=None, copy=None):
        return self.detach().data.__array__(dtype)

    def item(self):
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    # ------------------------------------------------------------- arithmetic
    def _other(self, other):
        if isinstance(other, Tensor) or isinstance(other, Number):
            return other
        if isinstance(other, NDArray):
            return Tensor(other)
        return NotImplemented

    def __add__(self, o):
        o = self._other(o)
        return o if o is NotImplemented else F.Add.apply(self, o)

    def __radd__(self, o):
        return F.Add.apply(o, self)

    def __sub__(self, o):
        o = self._other(o)
        return o if o is NotImplemented else F.Sub.apply(self, o)

    def __rsub__(self, o):
        return F.Sub.apply(o, self)

    def __mul__(self, o):
        o = self._other(o)
        return o if o is NotImplemented else F.Mul.apply(self, o)

    def __rmul__(self, o):
        return F.Mul.apply(o, self)

    def __truediv__(self, o):
        o = self._other(o)
        return o if o is NotImplemented else F.Div.apply(self, o)

    def __rtruediv__(self, o):
        return F.Div.apply(o, self)

    def __pow__(self, o):
        o = self._other(o)
        return o if o is NotImplemented else F.Pow.apply(self, o)

    def __rpow__(self, o):
        return F.Pow.apply(o, self)

    def __neg__(self):
        return F.Neg.apply(self)

    def __matmul__(self, o):
        return self.matmul(o)

    def __rmatmul__(self, o):
        return o.matmul(self)

    def __floordiv__(self, o):
        return self._no_grad_binary("floor_divide", o)

    def __rfloordiv__(self, o):
        return Tensor(_as_nd(o, self)._binary("floor_divide", self.data))

    def __mod__(self, o):
        return self._no_grad_binary("remainder", o)

    def _no_grad_binary(self, op: str, o):
        o = self._other(o)
        if o is NotImplemented:
            return o
        return Tensor(self.data._binary(op, o.data if isinstance(o, Tensor) else o))

    # comparisons and logic: no gradient
    def __eq__(self, o): return self._no_grad_binary("eq", o)  # type: ignore[override]
    def __ne__(self, o): return self._no_grad_binary("ne", o)  # type: ignore[override]
    def __lt__(self, o): return self._no_grad_binary("lt", o)
    def __le__(self, o): return self._no_grad_binary("le", o)
    def __gt__(self, o): return self._no_grad_binary("gt", o)
    def __ge__(self, o): return self._no_grad_binary("ge", o)
    def __and__(self, o): return self._no_grad_binary("bitwise_and", o)
    def __or__(self, o): return self._no_grad_binary("bitwise_or", o)
    def __xor__(self, o): return self._no_grad_binary("bitwise_xor", o)
    def __invert__(self): return Tensor(~self.data)

    def eq(self, o): return self.__eq__(o)
    def ne(self, o): return self.__ne__(o)
    def lt(self, o): return self.__lt__(o)
    def le(self, o): return self.__le__(o)
    def gt(self, o): return self.__gt__(o)
    def ge(self, o): return self.__ge__(o)

    def logical_and(self, o): return self._no_grad_binary("logical_and", o)
    def logical_or(self, o): return self._no_grad_binary("logical_or", o)
    def logical_xor(self, o): return self._no_grad_binary("logical_xor", o)
    def logical_not(self): return Tensor(self.data.logical_not())
    def isnan(self): return Tensor(self.data.isnan())
    def isinf(self): return Tensor(self.data.isinf())
    def isfinite(self): return Tensor(self.data.isfinite())

    def add(self, o, alpha=1): return self + (o * alpha if alpha != 1 else o)
    def sub(self, o, alpha=1): return self - (o * alpha if alpha != 1 else o)
    def mul(self, o): return self * o
    def div(self, o): return self / o
    def pow(self, o): return self ** o
    def neg(self): return -self
    def maximum(self, o): return F.Maximum.apply(self, o)
    def minimum(self, o): return F.Minimum.apply(self, o)

    # ------------------------------------------------------------- math
    def exp(self): return F.Exp.apply(self)
    def log(self): return F.Log.apply(self)
    def sqrt(self): return F.Sqrt.apply(self)
    def rsqrt(self): return 1 / F.Sqrt.apply(self)
    def tanh(self): return F.Tanh.apply(self)
    def sigmoid(self): return F.Sigmoid.apply(self)
    def relu(self): return F.ReLU.apply(self)
    def abs(self): return F.Abs.apply(self)
    def sin(self): return F.Sin.apply(self)
    def cos(self): return F.Cos.apply(self)
    def square(self): return self * self
    def reciprocal(self): return 1 / self
    def log1p(self): return (self + 1).log()
    def sign(self): return F.Unary.apply(self, "sign")
    def floor(self): return F.Unary.apply(self, "floor")
    def ceil(self): return F.Unary.apply(self, "ceil")
    def round(self): return F.Unary.apply(self, "round")
    def trunc(self): return F.Unary.apply(self, "trunc")

    def clamp(self, min=None, max=None):
        return F.Clamp.apply(self, min, max)

    clip = clamp

    def where(self, condition: Tensor, other) -> Tensor:
        """torch's x.where(condition, y): x where condition holds, else y."""
        return F.Where.apply(condition, self, other)

    # ------------------------------------------------------------- reductions
    def sum(self, dim=None, keepdim: bool = False, dtype=None):
        return F.Sum.apply(self, dim, keepdim, dtype)

    def mean(self, dim=None, keepdim: bool = False, dtype=None):
        return F.Mean.apply(self, dim, keepdim, dtype)

    def amax(self, dim=None, keepdim: bool = False):
        return F.Amax.apply(self, dim, keepdim)

    def amin(self, dim=None, keepdim: bool = False):
        return F.Amin.apply(self, dim, keepdim)

    def max(self, dim=None, keepdim: bool = False):
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            return F.Amax.apply(self, None, False)
        return _MinMax(*F.MaxDim.apply(self, dim, keepdim))

    def min(self, dim=None, keepdim: bool = False):
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            return F.Amin.apply(self, None, False)
        return _MinMax(*F.MinDim.apply(self, dim, keepdim))

    def argmax(self, dim=None, keepdim: bool = False):
        return Tensor(self.data.argmax(dim, keepdim))

    def argmin(self, dim=None, keepdim: bool = False):
        return Tensor(self.data.argmin(dim, keepdim))

    def var(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        return F.Var.apply(self, dim, correction, keepdim)

    def std(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        return self.var(dim, unbiased, keepdim, correction=correction).sqrt()

    def logsumexp(self, dim, keepdim: bool = False):
        return F.Logsumexp.apply(self, dim, keepdim)

    def all(self, dim=None, keepdim: bool = False):
        return Tensor(self.data.all(dim, keepdim))

    def any(self, dim=None, keepdim: bool = False):
        return Tensor(self.data.any(dim, keepdim))

    # ------------------------------------------------------------- linear algebra
    def matmul(self, other: Tensor) -> Tensor:
        if not isinstance(other, Tensor):
            raise TypeError(f"matmul(): argument 'other' must be Tensor, not {type(other).__name__}")
        return F.MatMul.apply(self, other)

    def softmax(self, dim: int) -> Tensor:
        return F.Softmax.apply(self, dim)

    def log_softmax(self, dim: int) -> Tensor:
        return F.LogSoftmax.apply(self, dim)

    # ------------------------------------------------------------- layout
    def reshape(self, *shape) -> Tensor:
        return F.Reshape.apply(self, _shape(shape))

    def view(self, *shape) -> Tensor:
        return F.View.apply(self, _shape(shape))

    def view_as(self, other: Tensor) -> Tensor:
        return self.view(*other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(*other.shape)

    def permute(self, *dims) -> Tensor:
        return F.Permute.apply(self, _shape(dims))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        return F.Transpose.apply(self, dim0, dim1)

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    @property
    def T(self) -> Tensor:
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> Tensor:
        return self.transpose(-2, -1)

    def expand(self, *shape) -> Tensor:
        return F.Expand.apply(self, _shape(shape))

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(*other.shape)

    def broadcast_to(self, shape) -> Tensor:
        return self.expand(*shape)

    def squeeze(self, dim=None) -> Tensor:
        return F.Squeeze.apply(self, dim)

    def unsqueeze(self, dim: int) -> Tensor:
        return F.Unsqueeze.apply(self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        return F.Flatten.apply(self, start_dim, end_dim)

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        return F.Narrow.apply(self, dim, start, length)

    def split(self, split_size, dim: int = 0) -> tuple[Tensor, ...]:
        size = self.shape[dim]
        if isinstance(split_size, int):
            sizes = [min(split_size, size - i) for i in range(0, size, split_size)] or [0]
        else:
            sizes = list(split_size)
            if sum(sizes) != size:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                                   f"tensor's size at dimension {dim}), but got split_sizes={sizes}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(dim, start, s))
            start += s
        return tuple(out)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        size = self.shape[dim]
        return self.split(max(1, -(-size // chunks)), dim)

    def contiguous(self) -> Tensor:
        if self.is_contiguous():
            return self
        return F.Contiguous.apply(self)

    def __getitem__(self, index) -> Tensor:
        if _is_basic_index(index):
            return F.BasicGetItem.apply(self, index)
        return F.GetItem.apply(self, index)

    def __setitem__(self, index, value) -> None:
        if isinstance(value, NDArray):
            value = Tensor(value)
        if isinstance(value, Tensor) and value.device != self.device:
            value = value.to(device=self.device)
        self._inplace(lambda: F.SetItem.apply(self._snapshot(), index, value),
                      lambda: self.data.__setitem__(_plain_index(index),
                                                    value.data if isinstance(value, Tensor) else value),
                      needs_graph=isinstance(value, Tensor) and value.requires_grad)

    # ------------------------------------------------------------- copies and in-place
    def clone(self) -> Tensor:
        return F.Clone.apply(self)

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
        if grad_mode._state.enabled and (self.requires_grad or needs_graph):
            if self.is_leaf and self.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            result = recorded()
            self.data.copy_(result.data)
            if self._base is not None:
                self._rebase_view(result)
            else:
                self.grad_fn, self._output_nr = result.grad_fn, result._output_nr
                self.requires_grad = result.requires_grad
        else:
            plain()
        self._version[0] += 1
        return self

    def _rebase_view(self, result: Tensor) -> None:
        """After an in-place op wrote ``result`` through this view, give the base the new
        history (its old value with the view's region replaced by ``result``) and make
        this view a view of that new history, as torch does."""
        base = self._base
        if base.is_leaf and base.requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        if not base.is_contiguous():
            raise RuntimeError("in-place operation on a view of a non-contiguous tensor that is part of the "
                               "autograd graph is not supported; clone() the base first")
        region = (tuple(self.shape), tuple(self.stride()), self.data.storage_offset() - base.data.storage_offset())
        new_base = F.CopySlices.apply(base, result, region)
        base.grad_fn, base._output_nr, base.requires_grad = new_base.grad_fn, 0, new_base.requires_grad
        view = F.AsStrided.apply(base, region)
        self.grad_fn, self._output_nr, self.requires_grad = view.grad_fn, 0, view.requires_grad

    def _binary_inplace(self, fn, op: str, other) -> Tensor:
        if isinstance(other, NDArray):
            other = Tensor(other)
        needs = isinstance(other, Tensor) and other.requires_grad
        return self._inplace(lambda: fn(self._snapshot(), other),
                             lambda: getattr(self.data, f"{op}_")(other.data if isinstance(other, Tensor)
                                                                  else other),
                             needs_graph=needs)

    def add_(self, other, alpha=1):
        return self._binary_inplace(F.Add.apply, "add", other * alpha if alpha != 1 else other)

    def sub_(self, other, alpha=1):
        return self._binary_inplace(F.Sub.apply, "sub", other * alpha if alpha != 1 else other)

    def mul_(self, other):
        return self._binary_inplace(F.Mul.apply, "mul", other)

    def div_(self, other):
        return self._binary_inplace(F.Div.apply, "div", other)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def _unary_inplace(self, method: str) -> Tensor:
        return self._inplace(lambda: getattr(self._snapshot(), method)(),
                             lambda: self.data.copy_(getattr(self.data, method)()))

    def exp_(self): return self._unary_inplace("exp")
    def log_(self): return self._unary_inplace("log")
    def sqrt_(self): return self._unary_inplace("sqrt")
    def relu_(self): return self._unary_inplace("relu")
    def sigmoid_(self): return self._unary_inplace("sigmoid")
    def tanh_(self): return self._unary_inplace("tanh")
    def neg_(self): return self._unary_inplace("neg")
    def abs_(self): return self._unary_inplace("abs")

    def clamp_(self, min=None, max=None):
        return self._inplace(lambda: self._snapshot().clamp(min, max),
                             lambda: self.data.copy_(self.data.clamp(min, max)))

    def fill_(self, value) -> Tensor:
        return self._inplace(lambda: F.Fill.apply(self._snapshot(), value), lambda: self.data.fill_(value))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        if isinstance(src, NDArray):
            src = Tensor(src)
        return self._inplace(lambda: F.Copy.apply(self._snapshot(), src),
                             lambda: self.data.copy_(src.data),
                             needs_graph=src.requires_grad)


class _MinMax(tuple):
    """(values, indices) with names, like torch.return_types.max."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def _shape(args) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], tuple | list):
        args = args[0]
    return tuple(int(a) for a in args)


def _is_basic_index(index) -> bool:
    """ints, slices, None and Ellipsis only: the result is a view."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or (isinstance(i, int | slice) and not isinstance(i, bool))
               for i in items)


def _plain_index(index):
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    return index.data if isinstance(index, Tensor) else index


def _as_nd(value, like: Tensor) -> NDArray:
    from genesis_ndarray import full

    return value.data if isinstance(value, Tensor) else full((), value, device=like.device)


def _wrap_outputs(out, ctx: Node | None, base: Tensor | None):
    """Tensors for a forward's outputs, linked to ``ctx`` when it records a graph."""
    if ctx is None and out.__class__ is NDArray:  # the common no-grad case, kept short
        t = Tensor(out)
        if base is not None:
            t._version = base._version
        return t
    single = not isinstance(out, tuple)
    items = (out,) if single else out
    tensors = []
    non_diff = ctx._non_differentiable if ctx is not None else ()
    # Outputs marked by position (built-in Functions) or by object (user Functions, as torch).
    marked_positions = {n for n in non_diff if isinstance(n, int)}
    marked_ids = {id(n.data if isinstance(n, Tensor) else n) for n in non_diff if not isinstance(n, int)}
    for i, item in enumerate(items):
        if isinstance(item, Tensor):
            item = item.data
        t = Tensor(item)
        if base is not None and i == 0:
            t._version = base._version
            t._base = base if base._base is None else base._base
        if ctx is not None and item.dtype.is_floating_point and i not in marked_positions \
                and id(item) not in marked_ids:
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


class _RemovableHandle:
    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


_function_module._wrap_outputs = _wrap_outputs
