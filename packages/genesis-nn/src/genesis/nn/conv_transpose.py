"""ConvTranspose1d, ConvTranspose2d and ConvTranspose3d (torch's arguments, weight layout, initialisation,
and forward's ``output_size``)."""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor

from . import functional as F
from .conv import _ConvNd
from .functional._util import ntuple
from .functional.conv_transpose import transposed_output_size
from .module import Module


class _ConvTransposeNd(_ConvNd):
    """The transposed convolutions' shared constructor and forward: the gradient of the matching
    convolution with respect to its input, weight (C_in, C_out / groups, *kernel)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        Module.__init__(self)  # not _ConvNd.__init__: its argument order is the forward convolution's
        self._setup(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            transposed=True,
            output_padding=output_padding,
        )

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """The output_padding that gives ``output_size`` (torch's rule and ValueError), or the layer's own."""
        if output_size is None:
            return self.output_padding
        nd = self._dims
        non_spatial = 2 if input.ndim == nd + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + nd:
            output_size = output_size[non_spatial:]
        if len(output_size) != nd:
            raise ValueError(
                f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} or "
                f"{non_spatial + nd} elements (got {len(output_size)})"
            )
        spatial = input.shape[non_spatial:]
        padding = ntuple(self.padding, nd, "padding")
        min_sizes = [
            transposed_output_size(spatial[d], self.kernel_size[d], self.stride[d], padding[d], self.dilation[d], 0)
            for d in range(nd)
        ]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride)]
        for size, low, high in zip(output_size, min_sizes, max_sizes):
            if size < low or size > high:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from {min_sizes} to "
                    f"{max_sizes} (for an input of {list(spatial)})"
                )
        return tuple(int(size) - low for size, low in zip(output_size, min_sizes))

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """The transposed convolution of ``input``; ``output_size`` picks among the sizes a stride > 1
        makes possible (it sets output_padding for this call)."""
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._dims - 1]
        output_padding = self._output_padding(input, output_size)
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )


class ConvTranspose1d(_ConvTransposeNd):
    """A 1-D transposed convolution (the gradient of Conv1d with respect to its input) over (N, C_in, L).

    Args:
        in_channels: C_in.
        out_channels: C_out.
        kernel_size: the kernel length.
        stride: the step between the windows the input positions spread into.
        padding: ``dilation * (kernel_size - 1) - padding`` zeros are conceptually added to both sides.
        output_padding: extra size added to one side of the output (smaller than stride or dilation).
        groups: split the channels into this many independent groups.
        bias: learn a bias per output channel.
        dilation: the spacing between kernel elements.
        padding_mode: only ``"zeros"``.
        device, dtype: where and in which dtype the parameters are made.

    Shape: (N, C_in, L) or (C_in, L) -> (N, C_out, L_out), L_out = (L - 1) * stride - 2 * padding
    + dilation * (kernel_size - 1) + output_padding + 1.

    Attributes: ``weight`` (C_in, C_out / groups, kernel_size), ``bias`` (C_out,) or None; initialised as torch's.
    """

    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """A 2-D transposed convolution (the gradient of Conv2d with respect to its input) over (N, C_in, H, W).

    Args: as ConvTranspose1d's, each spatial one an int or a pair.

    Shape: (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out), each output size
    (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.

    Attributes: ``weight`` (C_in, C_out / groups, kh, kw), ``bias`` (C_out,) or None; initialised as torch's.
    """

    _dims = 2


class ConvTranspose3d(_ConvTransposeNd):
    """A 3-D transposed convolution (the gradient of Conv3d with respect to its input) over (N, C_in, D, H, W).

    Args: as ConvTranspose1d's, each spatial one an int or a triple.

    Shape: (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out), each output size
    (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1.

    Attributes: ``weight`` (C_in, C_out / groups, kd, kh, kw), ``bias`` (C_out,) or None; initialised as torch's.
    """

    _dims = 3
