"""torch.nn.modules.dropout's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "AlphaDropout",
        "FeatureAlphaDropout",
        "_DropoutNd",
    ],
    sources=("genesis.nn.dropout",),
    aliases={"_DropoutNd": "Dropout"},
)
