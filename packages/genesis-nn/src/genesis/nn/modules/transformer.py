"""torch.nn.modules.transformer's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "Transformer",
        "TransformerEncoder",
        "TransformerDecoder",
        "TransformerEncoderLayer",
        "TransformerDecoderLayer",
    ],
)
