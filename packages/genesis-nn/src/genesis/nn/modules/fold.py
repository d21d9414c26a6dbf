"""torch.nn.modules.fold's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "Fold",
        "Unfold",
    ],
)
