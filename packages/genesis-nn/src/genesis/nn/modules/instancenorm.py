"""torch.nn.modules.instancenorm's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "InstanceNorm1d",
        "InstanceNorm2d",
        "InstanceNorm3d",
        "LazyInstanceNorm1d",
        "LazyInstanceNorm2d",
        "LazyInstanceNorm3d",
        "_InstanceNorm",
    ],
    sources=("genesis.nn.instancenorm",),
)
