"""Memory: dtype casts and device moves (the gradient goes back the same way), clone, contiguous,
fill and copy; and MemoryMixin, their Tensor methods with the ways out of genesis (item, tolist,
numpy, DLPack)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from genesis_ndarray import NDArray, as_device, as_dtype

from ._util import Primitive, meta, reduce_to

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    from ..tensor import Tensor


class Cast(Primitive):
    @staticmethod
    def forward(ctx, a, dtype):
        ctx.dtype = a.dtype
        return a.data.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype), None


class ToDevice(Primitive):
    @staticmethod
    def forward(ctx, a, device, non_blocking):
        ctx.device = a.device
        return a.data.to(device, non_blocking=non_blocking)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.device), None, None


class Clone(Primitive):
    @staticmethod
    def forward(ctx, a):
        return a.data.clone()

    @staticmethod
    def backward(ctx, g):
        return g


class Contiguous(Primitive):
    @staticmethod
    def forward(ctx, a):
        return a.data.contiguous()

    @staticmethod
    def backward(ctx, g):
        return g


class Fill(Primitive):
    """out = a filled with a constant: nothing of ``a`` survives, so its gradient is zero."""

    @staticmethod
    def forward(ctx, a, value):
        return a.data.clone().fill_(value)

    @staticmethod
    def backward(ctx, g):
        return g * 0, None


class Copy(Primitive):
    """out = src broadcast into dst's shape and dtype (dst.copy_(src) as a graph node)."""

    @staticmethod
    def forward(ctx, dst, src):
        ctx.src_meta = meta(src)
        out = dst.data.clone()
        out.copy_(src.data)
        return out

    @staticmethod
    def backward(ctx, g):
        return (g * 0 if ctx.needs_input_grad[0] else None,
                reduce_to(g, ctx.src_meta) if ctx.needs_input_grad[1] else None)


class MemoryMixin:
    __slots__ = ()

    # ------------------------------------------------------------- transfers
    def to(self, *args, dtype=None, device=None, non_blocking: bool = False, copy: bool = False) -> Tensor:
        for arg in args:
            if isinstance(arg, self._result_type):
                device, dtype = arg.device, arg.dtype
            else:
                try:
                    dtype = as_dtype(arg)
                except TypeError:
                    device = arg
        out = self
        if dtype is not None and as_dtype(dtype) is not out.dtype:
            out = Cast.apply(out, as_dtype(dtype))
        if device is not None and as_device(device) != out.device:
            out = ToDevice.apply(out, as_device(device), non_blocking)
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

    # ------------------------------------------------------------- out of genesis
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

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self.data.__dlpack__(stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.data.__dlpack_device__()

    # ------------------------------------------------------------- copies and writes
    def clone(self) -> Tensor:
        return Clone.apply(self)

    def contiguous(self) -> Tensor:
        if self.is_contiguous():
            return self
        return Contiguous.apply(self)

    def fill_(self, value) -> Tensor:
        return self._inplace(lambda: Fill.apply(self._snapshot(), value), lambda: self.data.fill_(value))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        if isinstance(src, NDArray):
            src = self._result_type(src)
        return self._inplace(lambda: Copy.apply(self._snapshot(), src),
                             lambda: self.data.copy_(src.data),
                             needs_graph=src.requires_grad)
