"""torch.nn.modules.conv's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "LazyConv1d",
        "LazyConv2d",
        "LazyConv3d",
        "LazyConvTranspose1d",
        "LazyConvTranspose2d",
        "LazyConvTranspose3d",
        "_ConvNd",
        "_ConvTransposeNd",
    ],
    sources=("genesis.nn.conv", "genesis.nn.conv_transpose"),
)
