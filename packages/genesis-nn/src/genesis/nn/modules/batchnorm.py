"""torch.nn.modules.batchnorm's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "BatchNorm1d",
        "LazyBatchNorm1d",
        "BatchNorm2d",
        "LazyBatchNorm2d",
        "BatchNorm3d",
        "LazyBatchNorm3d",
        "SyncBatchNorm",
        "_NormBase",
        "_BatchNorm",
        "_LazyNormBase",
    ],
    sources=("genesis.nn.batchnorm",),
)
