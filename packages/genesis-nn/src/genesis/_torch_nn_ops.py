"""The activation, dropout, shuffle and distance functions torch also has at its top level (torch.celu,
torch.pdist, torch.dropout, ...). Most are nn.functional's own; those whose top-level signature differs
from the functional one are thin wrappers with torch's top-level signature: the dropouts take
``(input, p, train)``, and celu / selu / rrelu / threshold have no ``inplace`` argument (their
``_`` forms are the in-place ones)."""

from __future__ import annotations

from genesis_autograd import Tensor

from .nn.functional import activation_elu as _elu
from .nn.functional import activation_piecewise as _piecewise
from .nn.functional import activation_rectifier as _rectifier
from .nn.functional.activation_piecewise import hardshrink
from .nn.functional.activation_rectifier import prelu
from .nn.functional.channelshuffle import channel_shuffle, native_channel_shuffle
from .nn.functional.distance import cosine_similarity, pairwise_distance, pdist
from .nn.functional.dropout import alpha_dropout as _alpha_dropout
from .nn.functional.dropout import dropout as _dropout
from .nn.functional.dropout import feature_alpha_dropout as _feature_alpha_dropout
from .nn.functional.pixelshuffle import pixel_shuffle, pixel_unshuffle

__all__ = [
    "alpha_dropout",
    "alpha_dropout_",
    "celu",
    "celu_",
    "channel_shuffle",
    "cosine_similarity",
    "dropout",
    "dropout_",
    "feature_alpha_dropout",
    "feature_alpha_dropout_",
    "hardshrink",
    "native_channel_shuffle",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "prelu",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "threshold",
    "threshold_",
]


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """CELU: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), elementwise (``nn.functional.celu``)."""
    return _elu.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return _elu.celu_(input, alpha)


def selu(input: Tensor) -> Tensor:
    """SELU: scale * elu(x, alpha) with the self-normalising constants (``nn.functional.selu``)."""
    return _elu.selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return _elu.selu_(input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """Randomised leaky ReLU (``nn.functional.rrelu``): random slopes in [lower, upper] while training."""
    return _rectifier.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place :func:`rrelu`."""
    return _rectifier.rrelu_(input, lower, upper, training)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """x where x > threshold, else ``value``, elementwise (``nn.functional.threshold``)."""
    return _piecewise.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _piecewise.threshold_(input, threshold, value)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.dropout(input, p, training=train)``."""
    return _dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`dropout`."""
    return _dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.alpha_dropout(input, p, training=train)``."""
    return _alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`alpha_dropout`."""
    return _alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.feature_alpha_dropout(input, p, training=train)``."""
    return _feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`feature_alpha_dropout`."""
    return _feature_alpha_dropout(input, p, train, inplace=True)
