"""genesis.nn: Module and Parameter, layers, losses, initialisation (nn.init) and the functional
forms (nn.functional), with torch.nn's names, signatures and behaviour."""

from . import functional, init, parallel, utils
from .activation import GELU, GLU, LeakyReLU, LogSoftmax, Mish, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .parallel import DistributedDataParallel
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .sampling import Upsample
from .sparse import Embedding, EmbeddingBag
from .transformer import TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "CrossEntropyLoss",
    "DistributedDataParallel",
    "Dropout",
    "Embedding",
    "EmbeddingBag",
    "Flatten",
    "GELU",
    "GroupNorm",
    "HuberLoss",
    "Identity",
    "KLDivLoss",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "Mish",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "NLLLoss",
    "Parameter",
    "ParameterDict",
    "ParameterList",
    "RMSNorm",
    "ReLU",
    "Sequential",
    "SiLU",
    "GLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "Unflatten",
    "Upsample",
    "functional",
    "init",
    "parallel",
    "utils",
]
