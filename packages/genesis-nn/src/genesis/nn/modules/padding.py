"""torch.nn.modules.padding's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "CircularPad1d",
        "CircularPad2d",
        "CircularPad3d",
        "ConstantPad1d",
        "ConstantPad2d",
        "ConstantPad3d",
        "ReflectionPad1d",
        "ReflectionPad2d",
        "ReflectionPad3d",
        "ReplicationPad1d",
        "ReplicationPad2d",
        "ReplicationPad3d",
        "ZeroPad1d",
        "ZeroPad2d",
        "ZeroPad3d",
    ],
)
