"""torch.nn.modules.loss's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "L1Loss",
        "NLLLoss",
        "NLLLoss2d",
        "PoissonNLLLoss",
        "GaussianNLLLoss",
        "KLDivLoss",
        "MSELoss",
        "BCELoss",
        "BCEWithLogitsLoss",
        "HingeEmbeddingLoss",
        "MultiLabelMarginLoss",
        "SmoothL1Loss",
        "HuberLoss",
        "SoftMarginLoss",
        "CrossEntropyLoss",
        "LinearCrossEntropyLoss",
        "MultiLabelSoftMarginLoss",
        "CosineEmbeddingLoss",
        "MarginRankingLoss",
        "MultiMarginLoss",
        "TripletMarginLoss",
        "TripletMarginWithDistanceLoss",
        "CTCLoss",
        "_Loss",
        "_WeightedLoss",
    ],
    sources=("genesis.nn.loss",),
)
