"""genesis.nn.functional: stateless forms of every layer, one file per family
(activation, attention, conv, dropout, linear, loss, normalization, padding, pooling,
sampling, sparse). Modules call these; fused kernels replace a family's body, not its name."""

from .activation import (
    geglu,
    gelu,
    glu,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    relu,
    relu6,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    swiglu,
    tanh,
)
from .attention import multi_head_attention_forward, scaled_dot_product_attention
from .conv import conv1d, conv2d, unfold
from .dropout import dropout
from .linear import linear
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .normalization import batch_norm, group_norm, layer_norm, normalize, rms_norm
from .padding import pad
from .pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from .sampling import interpolate
from .sparse import embedding, embedding_bag, one_hot

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "embedding_bag",
    "geglu",
    "gelu",
    "glu",
    "group_norm",
    "hardtanh",
    "huber_loss",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "max_pool2d",
    "mish",
    "mse_loss",
    "multi_head_attention_forward",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "relu6",
    "rms_norm",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softmin",
    "softplus",
    "swiglu",
    "tanh",
    "unfold",
]
