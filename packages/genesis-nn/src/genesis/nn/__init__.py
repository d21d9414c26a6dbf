"""genesis.nn: modules, parameters, initialisation and functional forms."""

from . import functional, init, utils
from .layers import (
    GELU,
    CrossEntropyLoss,
    Dropout,
    Flatten,
    Identity,
    L1Loss,
    Linear,
    LogSoftmax,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .module import Module
from .parameter import Parameter

__all__ = [
    "GELU", "CrossEntropyLoss", "Dropout", "Flatten", "Identity", "L1Loss", "Linear", "LogSoftmax", "MSELoss",
    "Module", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Tanh",
    "functional", "init", "utils",
]
