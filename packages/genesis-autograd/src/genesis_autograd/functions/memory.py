"""Memory: dtype casts and device moves (the gradient goes back the same way), clone, contiguous,
fill and copy; and MemoryMixin, their Tensor methods with the ways out of genesis (item, tolist,
numpy, DLPack, the CUDA Array Interface)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from genesis_ndarray import Device, DType, NDArray, as_dtype, resolve_device

from .. import memory_format as mf
from ..tensor_base import Scalar, TensorBase
from ._util import Primitive, backward_recorded, meta, reduce_to, wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports this module
    import numpy as np

    from ..tensor import Tensor


class Cast(Primitive):
    @staticmethod
    def forward(ctx, a, dtype):
        if ctx.records:
            ctx.dtype = a.data.dtype
        return a.data.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        if backward_recorded(g):  # recorded: a differentiable cast
            return g.to(ctx.dtype), None
        data = g.data  # the usual case (every autocast cast of a step): straight to the NDArray
        return (g if data.dtype == ctx.dtype else wrap(g, data.astype(ctx.dtype))), None


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
        return (
            g * 0 if ctx.needs_input_grad[0] else None,
            reduce_to(g, ctx.src_meta) if ctx.needs_input_grad[1] else None,
        )


_DEVICE_TYPES = ("cuda", "cpu")  # no dtype name starts so
_CUDA = Device("cuda")  # the current CUDA device, resolved at each call


class MemoryMixin(TensorBase):
    """Tensor's casts, device moves, copies and ways out of genesis.

    The methods named float, int and bool shadow the builtins inside this class body, so its annotations
    spell the builtins ``builtins.float`` and so on.
    """

    __slots__ = ()

    # ------------------------------------------------------------- transfers
    def to(
        self,
        *args: Any,
        dtype: DType | str | None = None,
        device: Device | str | builtins.int | None = None,
        non_blocking: builtins.bool = False,
        copy: builtins.bool = False,
        memory_format: mf.memory_format = mf.preserve_format,
    ) -> Tensor:
        """This tensor in another dtype and/or on another device; self itself when it already matches.

        Called as ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)`` (other's device and
        dtype) or with the keywords. The result carries gradients back to self.

        Args:
            dtype: the dtype to convert to.
            device: the device to move to (``"cpu"``, ``"cuda"``, ``"cuda:1"``, a ``genesis.device``).
            non_blocking: let a copy between pinned host memory and the GPU run asynchronously.
            copy: return a new tensor even when dtype and device already match.
            memory_format: the layout of the result (``genesis.channels_last``, ...); by default the
                conversion's own.
        """
        if memory_format is not mf.preserve_format:
            moved = self.to(*args, dtype=dtype, device=device, non_blocking=non_blocking)
            shape, strides = tuple(self.shape), tuple(self.data.stride())
            if moved is self and not copy and mf.suggest_memory_format(shape, strides) is memory_format:
                return moved  # torch's to() aliases a tensor already of that format
            return mf.laid_out(moved, memory_format, copy and moved is self)
        if len(args) == 1 and args[0].__class__ is DType and dtype is None and device is None and not copy:
            # to(dtype), the common call (gradients cast back in backward): nothing else to parse
            if args[0] is self.data.dtype:
                return self  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases
            return Cast.apply(self, args[0])
        for arg in args:
            cls = arg.__class__
            if cls is Device or (cls is str and arg.startswith(_DEVICE_TYPES)):
                device = arg  # to("cuda"), to(device): not first tried as a dtype (a raised TypeError, ~2 us)
            elif isinstance(arg, self._result_type):
                device, dtype = arg.device, arg.dtype
            else:
                try:
                    dtype = as_dtype(arg)
                except TypeError:
                    device = arg
        out = self
        if dtype is not None and as_dtype(dtype) is not out.dtype:
            out = Cast.apply(out, as_dtype(dtype))
        if device is not None:
            device = resolve_device(device)  # a bare "cuda" is the current device, read now (torch's to())
            if device is not out.device and device != out.device:
                out = ToDevice.apply(out, device, non_blocking)
        if copy and out is self:
            out = self.clone()
        return out  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases

    def cpu(self) -> Tensor:
        """This tensor in host memory; self if it is there already."""
        return self.to(device="cpu")

    def cuda(self, device: Device | str | builtins.int | None = None) -> Tensor:
        """This tensor on a CUDA device: the current one (``device`` None or ``"cuda"``), or ``device`` (an
        index, ``"cuda:N"`` or a device); self if it is there already."""
        target = resolve_device(_CUDA if device is None else device)
        if target.type != "cuda":  # before the identity test: cpu("cpu") must raise, not return self
            raise RuntimeError(f"Invalid device, must be cuda device, got {target}")
        if target is self.data.device:  # already there (the common call, e.g. in a training loop)
            return self  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases
        return self.to(device=target)

    def float(self) -> Tensor:
        """``self.to(genesis.float32)``."""
        return self.to(dtype="float32")

    def half(self) -> Tensor:
        """``self.to(genesis.float16)``."""
        return self.to(dtype="float16")

    def bfloat16(self) -> Tensor:
        """``self.to(genesis.bfloat16)``."""
        return self.to(dtype="bfloat16")

    def double(self) -> Tensor:
        """``self.to(genesis.float64)``."""
        return self.to(dtype="float64")

    def long(self) -> Tensor:
        """``self.to(genesis.int64)``."""
        return self.to(dtype="int64")

    def int(self) -> Tensor:
        """``self.to(genesis.int32)``."""
        return self.to(dtype="int32")

    def bool(self) -> Tensor:
        """``self.to(genesis.bool)``."""
        return self.to(dtype="bool")

    def type(self, dtype: DType | str | None = None) -> DType | Tensor:
        """Without an argument, this tensor's dtype; with ``dtype``, ``self.to(dtype)``."""
        return self.dtype if dtype is None else self.to(dtype=dtype)

    # ------------------------------------------------------------- out of genesis
    def numpy(self) -> np.ndarray:
        """The values as a numpy array: sharing memory on cpu, a copy from the GPU.

        Refused for a GPU tensor (TypeError, as torch: call ``cpu()`` first, so the copy is explicit), for
        a tensor that requires grad (call ``detach()`` first) and for bfloat16, which numpy lacks.
        """
        if self.device.type != "cpu":
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. "
                "Use Tensor.cpu() to copy the tensor to host memory first."
            )
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self.data.numpy()

    def __array__(self, dtype=None, copy=None):
        return self.detach().data.__array__(dtype)

    def item(self) -> builtins.int | builtins.float | builtins.bool:
        """The value of a one-element tensor as a Python number (reading it waits for the GPU)."""
        return self.data.item()

    def tolist(self) -> Any:
        """The values as (nested) Python lists of numbers; a number for a 0-d tensor."""
        return self.data.tolist()

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self.data.__dlpack__(stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[builtins.int, builtins.int]:
        return self.data.__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA Array Interface, version 3 (zero-copy; ``stream`` is the stream the tensor's work was
        queued on), for CuPy, Numba and friends. Only cuda tensors have it: on a cpu tensor it raises
        AttributeError, so ``hasattr`` answers False, as torch's."""
        if self.device.type != "cuda":
            raise AttributeError(
                f"Can't get __cuda_array_interface__ on non-CUDA tensor (device '{self.device}'). "
                "If CUDA data is required use tensor.cuda() to copy tensor to device memory."
            )
        if self.requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. "
                "If gradients aren't required, use var.detach() to get Variable that doesn't require grad."
            )
        return self.data.__cuda_array_interface__

    # ------------------------------------------------------------- copies and writes
    def clone(self, *, memory_format: mf.memory_format = mf.preserve_format) -> Tensor:
        """A copy in new memory; gradients flow back to self.

        Args:
            memory_format: the copy's layout: by default a dense tensor's own strides (row-major for any
                other), or ``genesis.contiguous_format`` / ``channels_last`` / ``channels_last_3d``.
        """
        if memory_format is mf.preserve_format and self.is_contiguous():
            return Clone.apply(self)  # the usual case
        # one copy, dense in the order asked for (preserve: self's own when self is dense)
        order = mf.memory_order(memory_format, tuple(self.shape), tuple(self.data.stride()))
        return mf.in_order(self, order, copy=True)  # type: ignore[arg-type]  # self is a Tensor

    def contiguous(self, memory_format: mf.memory_format = mf.contiguous_format) -> Tensor:
        """A tensor with the same values laid out densely in ``memory_format`` (row-major by default,
        or ``genesis.channels_last`` / ``channels_last_3d``): self if it is already."""
        if memory_format is not mf.contiguous_format:
            if memory_format is mf.preserve_format:
                raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
            return mf.laid_out(self, memory_format, False)  # type: ignore[arg-type]  # self is a Tensor
        if self.is_contiguous():
            return self  # type: ignore[return-value]  # self is a Tensor: the mixins are only Tensor's bases
        return Contiguous.apply(self)

    def fill_(self, value: Scalar) -> Tensor:
        """Set every element to ``value``, in place."""
        return self._inplace(lambda: Fill.apply(self._snapshot(), value), lambda: self.data.fill_(value))

    def zero_(self) -> Tensor:
        """Set every element to zero, in place."""
        return self.fill_(0)

    def copy_(self, src: Tensor, non_blocking: builtins.bool = False) -> Tensor:
        """Copy the elements of ``src`` into self, in place, broadcast to self's shape and cast to its dtype
        (from any device); gradients flow back to ``src``."""
        if isinstance(src, NDArray):
            src = self._result_type(src)
        return self._inplace(
            lambda: Copy.apply(self._snapshot(), src), lambda: self.data.copy_(src.data), needs_graph=src.requires_grad
        )
