"""Tensor: an NDArray plus what autograd needs (requires_grad, grad, grad_fn).

Every differentiable method goes through a Function in ``functions``; methods
that have no gradient (comparisons, argmax, ...) go straight to the NDArray.
"""

from __future__ import annotations

from numbers import Number

from genesis_ndarray import NDArray, as_device, as_dtype
from genesis_ndarray.shape import movedim_order, unflatten_shape

from . import functions as F
from . import grad_mode
from .engine import run_backward
from .function import AccumulateGrad
from .functions.random import sample
from .printing import tensor_repr


class Tensor:
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
    def tanh(self): return F.Tanh.apply(self)
    def sigmoid(self): return F.Sigmoid.apply(self)
    def relu(self): return F.ReLU.apply(self)
    def abs(self): return F.Abs.apply(self)
    def sin(self): return F.Sin.apply(self)
    def cos(self): return F.Cos.apply(self)
    def sign(self): return F.Unary.apply(self, "sign")
    def floor(self): return F.Unary.apply(self, "floor")
    def ceil(self): return F.Unary.apply(self, "ceil")
    def round(self): return F.Unary.apply(self, "round")
    def trunc(self): return F.Unary.apply(self, "trunc")

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

    def vector_norm(self, ord: float = 2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
        """torch.linalg.vector_norm: ``sum(|x|^ord)^(1/ord)`` over ``dim`` (inf / -inf: max / min of |x|)."""
        x = self if dtype is None else self.to(dtype=dtype)
        return F.VectorNorm.apply(x, float(ord), dim, keepdim)

    def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """torch.norm for vector norms: ``p`` a number, inf or "fro" (the 2-norm over ``dim``)."""
        if isinstance(p, str):
            if p != "fro":
                raise RuntimeError(f"norm: the {p!r} norm is a matrix norm, which genesis does not implement")
            p = 2
        return self.vector_norm(p, dim, keepdim, dtype=dtype)

    def logsumexp(self, dim, keepdim: bool = False):
        return F.Logsumexp.apply(self, dim, keepdim)

    def all(self, dim=None, keepdim: bool = False):
        return Tensor(self.data.all(dim, keepdim))

    def any(self, dim=None, keepdim: bool = False):
        return Tensor(self.data.any(dim, keepdim))

    # ------------------------------------------------------------- math: more elementwise, ternary, prod, scans
    # Gradients in functions/math.py; in-place forms (those torch has) at the end of the section.
    def exp2(self): return F.Exp2.apply(self)
    def expm1(self): return F.Expm1.apply(self)
    def log2(self): return F.Log2.apply(self)
    def log10(self): return F.Log10.apply(self)
    def log1p(self): return F.Log1p.apply(self)
    def tan(self): return F.Tan.apply(self)
    def rsqrt(self): return F.Rsqrt.apply(self)
    def reciprocal(self): return F.Reciprocal.apply(self)
    def square(self): return F.Square.apply(self)
    def erf(self): return F.Erf.apply(self)
    def silu(self): return F.Silu.apply(self)

    def gelu(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        return F.Gelu.apply(self) if approximate == "none" else F.GeluTanh.apply(self)

    def atan2(self, other: Tensor) -> Tensor:
        if not isinstance(other, Tensor):
            raise TypeError(f"atan2(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        return F.Atan2.apply(self, other)

    arctan2 = atan2

    def remainder(self, other):
        other = self._other(other)
        return other if other is NotImplemented else F.Remainder.apply(self, other)

    def fmod(self, other):
        other = self._other(other)
        return other if other is NotImplemented else F.Fmod.apply(self, other)

    def floor_divide(self, other):
        """Recorded like torch, which has no derivative for it: backward through it raises."""
        other = self._other(other)
        return other if other is NotImplemented else F.FloorDivide.apply(self, other)

    __mod__ = remainder
    __floordiv__ = floor_divide

    def __rmod__(self, o):
        return F.Remainder.apply(o, self)

    def __rfloordiv__(self, o):
        return F.FloorDivide.apply(o, self)

    def lerp(self, end: Tensor, weight) -> Tensor:
        """self + weight * (end - self); weight a number or a Tensor (end and weight of self's dtype)."""
        return F.Lerp.apply(self, end, weight)

    def addcmul(self, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
        return F.Addcmul.apply(self, tensor1, tensor2, value)

    def addcdiv(self, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
        return F.Addcdiv.apply(self, tensor1, tensor2, value)

    def clamp(self, min=None, max=None):
        """Bounds both numbers (or None), or both Tensors (or None) that broadcast with self, as torch."""
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            if isinstance(min, Number) or isinstance(max, Number):
                raise TypeError("clamp() received an invalid combination of arguments: min and max must both be "
                                "Tensors (or None) or both numbers (or None)")
            if min is None and max is None:
                raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
            return F.ClampTensor.apply(self, min, max)
        return F.Clamp.apply(self, min, max)

    clip = clamp

    def clamp_min(self, min): return self.clamp(min=min)
    def clamp_max(self, max): return self.clamp(max=max)

    def prod(self, dim: int | None = None, keepdim: bool = False, dtype=None) -> Tensor:
        if dim is not None and not isinstance(dim, int):
            raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
        return F.Prod.apply(self, dim, keepdim, dtype)

    def cumsum(self, dim: int, dtype=None) -> Tensor:
        return F.Cumsum.apply(self, dim, None if dtype is None else as_dtype(dtype))

    def cumprod(self, dim: int, dtype=None) -> Tensor:
        return F.Cumprod.apply(self, dim, None if dtype is None else as_dtype(dtype))

    def tril(self, diagonal: int = 0) -> Tensor: return F.Tril.apply(self, diagonal)
    def triu(self, diagonal: int = 0) -> Tensor: return F.Triu.apply(self, diagonal)

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

    def exp2_(self): return self._math_inplace("exp2")
    def expm1_(self): return self._math_inplace("expm1")
    def log2_(self): return self._math_inplace("log2")
    def log10_(self): return self._math_inplace("log10")
    def log1p_(self): return self._math_inplace("log1p")
    def sin_(self): return self._math_inplace("sin")
    def cos_(self): return self._math_inplace("cos")
    def tan_(self): return self._math_inplace("tan")
    def rsqrt_(self): return self._math_inplace("rsqrt")
    def reciprocal_(self): return self._math_inplace("reciprocal")
    def square_(self): return self._math_inplace("square")
    def erf_(self): return self._math_inplace("erf")
    def sign_(self): return self._math_inplace("sign")
    def floor_(self): return self._math_inplace("floor")
    def ceil_(self): return self._math_inplace("ceil")
    def round_(self): return self._math_inplace("round")
    def trunc_(self): return self._math_inplace("trunc")
    def atan2_(self, other): return self._math_inplace("atan2", other)
    def remainder_(self, other): return self._math_inplace("remainder", other)
    def fmod_(self, other): return self._math_inplace("fmod", other)
    def floor_divide_(self, other): return self._math_inplace("floor_divide", other)
    def lerp_(self, end, weight): return self._math_inplace("lerp", end, weight)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self._math_inplace("addcmul", tensor1, tensor2, value=value)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self._math_inplace("addcdiv", tensor1, tensor2, value=value)

    def clamp_(self, min=None, max=None): return self._math_inplace("clamp", min, max)
    def clamp_min_(self, min): return self._math_inplace("clamp", min, None)
    def clamp_max_(self, max): return self._math_inplace("clamp", None, max)
    def cumsum_(self, dim, dtype=None): return self._math_inplace("cumsum", dim, dtype)
    def cumprod_(self, dim, dtype=None): return self._math_inplace("cumprod", dim, dtype)
    def tril_(self, diagonal=0): return self._math_inplace("tril", diagonal)
    def triu_(self, diagonal=0): return self._math_inplace("triu", diagonal)

    clip_ = clamp_

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
        if self.ndim < 2:
            if self.ndim == 0:
                return self  # torch: deprecated, the identity
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
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

    # ------------------------------------------------------------- indexing, selection, sorting
    # gather / scatter / index_select / index_add / masked_* / take_along_dim / sort / topk
    # (functions/indexing.py); nonzero and argsort have no gradient. Index and mask arguments
    # are Tensors on this tensor's device. In-place forms go through _inplace like add_.
    def gather(self, dim: int, index: Tensor) -> Tensor:
        return F.Gather.apply(self, dim, _tensor_arg(index, "gather", "index"))

    def scatter(self, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
        return F.Scatter.apply(self, dim, _tensor_arg(index, "scatter", "index"), _scatter_src(src, value, reduce))

    def scatter_(self, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
        index, src = _tensor_arg(index, "scatter_", "index"), _scatter_src(src, value, reduce)
        return self._inplace(lambda: F.Scatter.apply(self._snapshot(), dim, index, src),
                             lambda: self.data.scatter_(dim, index.data, _plain(src)),
                             needs_graph=_requires_grad(src))

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        return F.ScatterAdd.apply(self, dim, _tensor_arg(index, "scatter_add", "index"),
                                  _tensor_arg(src, "scatter_add", "src"))

    def scatter_add_(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        index, src = _tensor_arg(index, "scatter_add_", "index"), _tensor_arg(src, "scatter_add_", "src")
        return self._inplace(lambda: F.ScatterAdd.apply(self._snapshot(), dim, index, src),
                             lambda: self.data.scatter_add_(dim, index.data, src.data),
                             needs_graph=src.requires_grad)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        return F.IndexSelect.apply(self, dim, _tensor_arg(index, "index_select", "index"))

    def index_add(self, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
        return F.IndexAdd.apply(self, dim, _tensor_arg(index, "index_add", "index"),
                                _tensor_arg(source, "index_add", "source"), alpha)

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
        index, source = _tensor_arg(index, "index_add_", "index"), _tensor_arg(source, "index_add_", "source")
        return self._inplace(lambda: F.IndexAdd.apply(self._snapshot(), dim, index, source, alpha),
                             lambda: self.data.index_add_(dim, index.data, source.data, alpha),
                             needs_graph=source.requires_grad)

    def masked_fill(self, mask: Tensor, value) -> Tensor:
        """``value`` (a scalar or a 0-d Tensor, which then gets a gradient) where mask holds."""
        return F.MaskedFill.apply(self, _tensor_arg(mask, "masked_fill", "mask"), _fill_arg(value), False)

    def masked_fill_(self, mask: Tensor, value) -> Tensor:
        mask, value = _tensor_arg(mask, "masked_fill_", "mask"), _fill_arg(value)
        return self._inplace(lambda: F.MaskedFill.apply(self._snapshot(), mask, value, True),
                             lambda: self.data.masked_fill_(mask.data, _plain(value)),
                             needs_graph=_requires_grad(value))

    def masked_select(self, mask: Tensor) -> Tensor:
        return F.MaskedSelect.apply(self, _tensor_arg(mask, "masked_select", "mask"))

    def nonzero(self, *, as_tuple: bool = False):
        out = self.data.nonzero(as_tuple)
        return tuple(Tensor(o) for o in out) if as_tuple else Tensor(out)

    def take_along_dim(self, indices: Tensor, dim: int | None = None) -> Tensor:
        return F.TakeAlongDim.apply(self, _tensor_arg(indices, "take_along_dim", "indices"), dim)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False):
        """(values, indices), named like torch.return_types.sort."""
        return _MinMax(*F.Sort.apply(self, dim, descending, stable))

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        return Tensor(self.data.argsort(dim, descending, stable))

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """(values, indices) of the k largest (or smallest) along dim, named like torch.return_types.topk."""
        return _MinMax(*F.TopK.apply(self, k, dim, largest, sorted))

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

    def _view_region(self) -> tuple:
        """(shape, strides, offset from the base's offset): where this view lies in its base's memory."""
        return (tuple(self.shape), tuple(self.stride()), self.data.storage_offset() - self._base.data.storage_offset())

    def _refresh_view(self) -> None:
        """A view whose base was written in place (through the base or another view) since this view's
        grad_fn was recorded reads the base's new history: its grad_fn becomes an AsStrided view of the
        base, as torch regenerates it."""
        self._view_version = self._version[0]
        base = self._base
        if base.requires_grad:
            with grad_mode.enable_grad():
                view = F.AsStrided.apply(base, self._view_region())
            self.grad_fn, self._output_nr, self.requires_grad = view.grad_fn, 0, True

    def _rebase_view(self, result: Tensor) -> None:
        """After an in-place op wrote ``result`` through this view, give the base the new
        history (its old value with the view's region replaced by ``result``) and make
        this view a view of that new history, as torch does."""
        base = self._base
        region = self._view_region()
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

    # ------------------------------------------------------------- views: diagonal, unfold, movedim, as_strided
    # diagonal, unfold and as_strided share memory (functions/views.py); unflatten, movedim and
    # swapaxes are view / permute / transpose, their geometry worked out in genesis_ndarray.shape.
    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        return F.Diagonal.apply(self, offset, dim1, dim2)

    def unfold(self, dimension: int, size: int, step: int) -> Tensor:
        return F.Unfold.apply(self, dimension, size, step)

    def unflatten(self, dim: int, sizes) -> Tensor:
        return self.view(*unflatten_shape(self.shape, dim, sizes))

    def movedim(self, source, destination) -> Tensor:
        return self.permute(*movedim_order(self.ndim, source, destination))

    moveaxis = movedim

    def swapaxes(self, axis0: int, axis1: int) -> Tensor:
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def storage_offset(self) -> int:
        return self.data.storage_offset()

    def as_strided(self, size, stride, storage_offset: int | None = None) -> Tensor:
        """A view of this tensor's memory; ``storage_offset`` counts from the storage's start, as torch."""
        rel = 0 if storage_offset is None else storage_offset - self.data.storage_offset()
        return F.AsStrided.apply(self, (tuple(size), tuple(stride), rel))

    # ------------------------------------------------------------- in-place random fills
    # Recorded like fill_: nothing of the old value survives, so its gradient is zero. As torch, a
    # leaf that requires grad (or a view of one) is refused outside no_grad (nn.init runs under it).
    def _random_(self, fill) -> Tensor:
        def recorded():
            before = self._snapshot()
            fill(self.data)
            return F.Copy.apply(before, Tensor(self.data.clone()))

        return self._inplace(recorded, lambda: fill(self.data))

    def uniform_(self, a: float = 0.0, b: float = 1.0) -> Tensor:
        return self._random_(lambda d: d.uniform_(a, b))

    def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor:
        return self._random_(lambda d: d.normal_(mean, std))

    def exponential_(self, lambd: float = 1.0) -> Tensor:
        return self._random_(lambda d: d.exponential_(lambd))

    def bernoulli_(self, p=0.5) -> Tensor:
        if isinstance(p, Tensor):
            p = p.data
        return self._random_(lambda d: d.bernoulli_(p))

    def random_(self, low: int | None = None, high: int | None = None) -> Tensor:
        """random_(to): integers in [0, to); random_(from, to); random_(): every integer the dtype holds."""
        return self._random_(lambda d: d.random_(low, high))

    def bernoulli(self, p=None) -> Tensor:
        """0 / 1 in this tensor's dtype, each 1 with the probability at its place here (or with ``p``);
        the gradient to this tensor is zero, as torch's."""
        return sample(self.data.bernoulli(p.data if isinstance(p, Tensor) else p), self)


class _MinMax(tuple):
    """(values, indices) with names, like torch.return_types.max."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def _tensor_arg(x, op: str, name: str) -> Tensor:
    """An index / mask / source argument as a Tensor (an NDArray is wrapped), else torch's TypeError."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, NDArray):
        return Tensor(x)
    raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _scatter_src(src, value, reduce):
    """scatter's source: ``src`` (a Tensor or a scalar) or ``value=`` (a scalar)."""
    if reduce is not None:
        raise NotImplementedError("scatter with reduce= is not supported (use scatter_add)")
    if (src is None) == (value is None):
        raise TypeError("scatter() needs exactly one of src and value")
    src = value if src is None else src
    return Tensor(src) if isinstance(src, NDArray) else src


def _fill_arg(value):
    return Tensor(value) if isinstance(value, NDArray) else value


def _plain(x):
    """A Tensor argument's NDArray; a Python scalar unchanged."""
    return x.data if isinstance(x, Tensor) else x


def _requires_grad(x) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


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


class _RemovableHandle:
    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


# Ops on any Tensor, a subclass's included (nn.Parameter), make plain Tensors, as in torch. Functions and
# the engine make their Tensors through this attribute of an input: they sit below this module.
Tensor._result_type = Tensor
