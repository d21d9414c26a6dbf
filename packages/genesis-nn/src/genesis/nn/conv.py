"""Conv1d, Conv2d and Conv3d (torch's arguments, padding modes and initialisation); _ConvNd is also the
base of the transposed convolutions (conv_transpose.py)."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, empty

from . import functional as F
from . import init
from .functional._util import ntuple
from .functional.conv import same_padding
from .module import Module
from .parameter import Parameter

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """What every convolution layer shares: the arguments' checks, the parameters, their initialisation
    and extra_repr. Subclasses set _dims (and the transposed ones call _setup with their weight layout)."""

    _dims = 0

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self._setup(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, device, dtype
        )

    def _setup(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride,
        padding,
        dilation,
        groups: int,
        bias: bool,
        padding_mode: str,
        device,
        dtype,
        transposed: bool = False,
        output_padding=0,
    ) -> None:
        nd = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in ntuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = ntuple(kernel_size, nd, "kernel_size")
        self.stride, self.dilation = ntuple(stride, nd, "stride"), ntuple(dilation, nd, "dilation")
        self.padding = padding if isinstance(padding, str) else ntuple(padding, nd, "padding")
        self.output_padding = ntuple(output_padding, nd, "output_padding")
        self.transposed = transposed
        self.groups, self.padding_mode = groups, padding_mode
        # torch's layouts: (C_out, C_in / groups, *kernel), transposed (C_in, C_out / groups, *kernel).
        weight_shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(*weight_shape, *self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise the parameters as the constructor does."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _pad_amounts(self) -> list[int]:
        """F.pad amounts (last dim first) for a non-zeros padding_mode."""
        if isinstance(self.padding, str):  # "valid" or "same" (__init__ checked)
            return [0, 0] * self._dims if self.padding == "valid" else same_padding(self.kernel_size, self.dilation)
        return [p for p in reversed(self.padding) for _ in range(2)]

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._dims - 1]
        if self.padding_mode != "zeros":
            input = F.pad(input, self._pad_amounts(), mode=self.padding_mode)
            return conv(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        """Convolve ``input`` with the layer's weight (and add its bias)."""
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """A 1-D convolution (cross-correlation, as torch) over (N, C_in, L) input.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: the kernel length.
        stride: the kernel step.
        padding: an int, or ``"valid"`` (none) or ``"same"`` (the output as long as the input; stride 1 only).
        dilation: the spacing between kernel elements.
        groups: split the channels into this many independent groups (both C_in and C_out divisible by it).
        bias: learn a bias per output channel.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        device, dtype: where and in which dtype the parameters are made.

    Shape: (N, C_in, L) -> (N, C_out, L_out), L_out = floor((L + 2 * padding - dilation * (kernel_size - 1)
    - 1) / stride + 1).

    Attributes: ``weight`` (C_out, C_in / groups, kernel_size), ``bias`` (C_out,) or None; initialised as torch's.
    """

    _dims = 1


class Conv2d(_ConvNd):
    """A 2-D convolution (cross-correlation, as torch) over (N, C_in, H, W) input.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: an int or (kh, kw).
        stride: the kernel step (an int or a pair).
        padding: an int or a pair, or ``"valid"`` (none) or ``"same"`` (the output the input's size; stride 1 only).
        dilation: the spacing between kernel elements.
        groups: split the channels into this many independent groups (both C_in and C_out divisible by it).
        bias: learn a bias per output channel.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        device, dtype: where and in which dtype the parameters are made.

    Shape: (N, C_in, H, W) -> (N, C_out, H_out, W_out), H_out = floor((H + 2 * padding - dilation * (kh - 1)
    - 1) / stride + 1), likewise W_out.

    Attributes: ``weight`` (C_out, C_in / groups, kh, kw), ``bias`` (C_out,) or None; initialised as torch's.
    """

    _dims = 2


class Conv3d(_ConvNd):
    """A 3-D convolution (cross-correlation, as torch) over (N, C_in, D, H, W) input.

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: an int or (kd, kh, kw).
        stride: the kernel step (an int or a triple).
        padding: an int or a triple, or ``"valid"`` (none) or ``"same"`` (the output the input's size; stride 1 only).
        dilation: the spacing between kernel elements.
        groups: split the channels into this many independent groups (both C_in and C_out divisible by it).
        bias: learn a bias per output channel.
        padding_mode: ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        device, dtype: where and in which dtype the parameters are made.

    Shape: (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out), each output size
    floor((size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1).

    Attributes: ``weight`` (C_out, C_in / groups, kd, kh, kw), ``bias`` (C_out,) or None; initialised as torch's.
    """

    _dims = 3
