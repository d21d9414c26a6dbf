"""torch.nn.modules.linear's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "Bilinear",
        "Identity",
        "LazyLinear",
        "Linear",
        "NonDynamicallyQuantizableLinear",
    ],
    sources=("genesis.nn.linear", "genesis.nn.attention"),
)
