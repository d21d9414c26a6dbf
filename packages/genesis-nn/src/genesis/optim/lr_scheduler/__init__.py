"""genesis.optim.lr_scheduler: learning-rate schedules with torch's names, arguments and sequences."""

from .base import LRScheduler, _LRScheduler
from .composite import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts, OneCycleLR
from .multiplicative import (
    ConstantLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from .plateau import ReduceLROnPlateau

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
    "_LRScheduler",
]
