"""torch.nn.modules.normalization's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "LocalResponseNorm",
        "CrossMapLRN2d",
        "LayerNorm",
        "GroupNorm",
        "RMSNorm",
    ],
)
