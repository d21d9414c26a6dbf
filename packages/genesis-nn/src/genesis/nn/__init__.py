"""genesis.nn: Module and Parameter, layers, losses, initialisation (nn.init) and the functional
forms (nn.functional), with torch.nn's names, signatures and behaviour."""

from . import functional, init, modules, parallel, utils
from .activation import (
    GELU,
    GLU,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
    Tanhshrink,
)
from .activation_elu import CELU, ELU, SELU
from .activation_piecewise import Hardshrink, Hardsigmoid, Hardswish, Hardtanh, ReLU6, Softshrink, Threshold
from .activation_rectifier import PReLU, RReLU
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .adaptive_pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
)
from .attention import MultiheadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .bilinear import Bilinear
from .channelshuffle import ChannelShuffle
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d
from .conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .crossmaplrn import CrossMapLRN2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
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
from .normalization import GroupNorm, LayerNorm, RMSNorm
from .padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .parallel import DistributedDataParallel
from .parameter import Buffer, Parameter
from .pixelshuffle import PixelShuffle, PixelUnshuffle
from .pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .rope import RotaryEmbedding
from .sampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .sparse import Embedding, EmbeddingBag
from .sync_batchnorm import SyncBatchNorm
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "AlphaDropout",
    "Bilinear",
    "Buffer",
    "CELU",
    "ChannelShuffle",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "CosineSimilarity",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "ELU",
    "FeatureAlphaDropout",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LogSigmoid",
    "PReLU",
    "PairwiseDistance",
    "PixelShuffle",
    "PixelUnshuffle",
    "RReLU",
    "ReLU6",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "SELU",
    "Softmax2d",
    "Softmin",
    "Softshrink",
    "Softsign",
    "Tanhshrink",
    "Threshold",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
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
    "CrossMapLRN2d",
    "MaxPool1d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
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
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "Fold",
    "Unfold",
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
    "RNN",
    "RNNBase",
    "RNNCell",
    "RNNCellBase",
    "RotaryEmbedding",
    "LSTM",
    "LSTMCell",
    "GRU",
    "GRUCell",
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
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "SyncBatchNorm",
]
