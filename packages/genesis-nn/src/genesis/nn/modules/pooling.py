"""torch.nn.modules.pooling's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "MaxUnpool1d",
        "MaxUnpool2d",
        "MaxUnpool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "FractionalMaxPool2d",
        "FractionalMaxPool3d",
        "LPPool1d",
        "LPPool2d",
        "LPPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
        "_MaxPoolNd",
        "_AvgPoolNd",
        "_AdaptiveAvgPoolNd",
        "_AdaptiveMaxPoolNd",
    ],
    sources=("genesis.nn.pooling",),
)
