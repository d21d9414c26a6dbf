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

__all__ = [
    "Function",
    "GradcheckError",
    "backward",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "no_grad",
    "set_grad_enabled",
]
