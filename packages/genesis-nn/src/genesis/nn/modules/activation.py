"""torch.nn.modules.activation's names, from genesis.nn (looked up when imported; see _reexport)."""

from ._reexport import shim

__getattr__, __dir__ = shim(
    __name__,
    [
        "Threshold",
        "ReLU",
        "RReLU",
        "Hardtanh",
        "ReLU6",
        "Sigmoid",
        "Hardsigmoid",
        "Tanh",
        "SiLU",
        "Mish",
        "Hardswish",
        "ELU",
        "CELU",
        "SELU",
        "GLU",
        "GELU",
        "Hardshrink",
        "LeakyReLU",
        "LogSigmoid",
        "Softplus",
        "Softshrink",
        "MultiheadAttention",
        "PReLU",
        "Softsign",
        "Tanhshrink",
        "Softmin",
        "Softmax",
        "Softmax2d",
        "LogSoftmax",
    ],
)
