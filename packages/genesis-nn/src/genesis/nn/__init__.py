"""genesis.nn: Module and Parameter, layers, losses, initialisation (nn.init) and the functional
forms (nn.functional), with torch.nn's names, signatures and behaviour."""

from . import functional, init, modules, parallel, utils
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .activation import GELU, GLU, LeakyReLU, LogSoftmax, Mish, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh
from .adaptive_pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
)
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .fold import Fold, Unfold
from .fractional_max_pool import FractionalMaxPool2d, FractionalMaxPool3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Identity, Linear
from .linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions
from .local_response_norm import LocalResponseNorm
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    NLLLoss2d,
    SmoothL1Loss,
)
from .loss_likelihood import CTCLoss, GaussianNLLLoss, PoissonNLLLoss
from .loss_margin import (
    CosineEmbeddingLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .lp_pool import LPPool1d, LPPool2d, LPPool3d
from .max_unpool import MaxUnpool1d, MaxUnpool2d, MaxUnpool3d
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm, RMSNorm
from .parallel import DistributedDataParallel
from .parameter import Parameter
from .pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d
from .sampling import Upsample
from .sparse import Embedding, EmbeddingBag
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer

__all__ = [
    "AdaptiveAvgPool2d",
    "AdaptiveLogSoftmaxWithLoss",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "LinearCrossEntropyLoss",
    "LinearCrossEntropyOptions",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "NLLLoss2d",
    "PoissonNLLLoss",
    "SoftMarginLoss",
    "Transformer",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
    "modules",
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
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "Fold",
    "Unfold",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool3d",
    "BatchNorm3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "LocalResponseNorm",
    "MaxPool1d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
]
