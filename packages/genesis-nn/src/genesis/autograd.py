"""genesis.autograd: the engine's functional API and user-defined Functions."""

from genesis_autograd import (
    Function,
    GradcheckError,
    backward,
    enable_grad,
    grad,
    gradcheck,
    gradgradcheck,
    inference_mode,
    no_grad,
    set_grad_enabled,
)
from genesis_autograd.anomaly import detect_anomaly, set_detect_anomaly

__all__ = [
    "Function",
    "GradcheckError",
    "backward",
    "detect_anomaly",
    "set_detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "no_grad",
    "set_grad_enabled",
]
