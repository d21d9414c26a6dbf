"""Parameter initialisation, in place and without recording gradients."""

from __future__ import annotations

import math

from genesis_autograd import Tensor, no_grad, rand, randn


def _fans(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    with no_grad():
        return t.copy_(rand(*t.shape, dtype=t.dtype, device=t.device) * (b - a) + a)


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    with no_grad():
        return t.copy_(randn(*t.shape, dtype=t.dtype, device=t.device) * std + mean)


def constant_(t: Tensor, value: float) -> Tensor:
    with no_grad():
        return t.fill_(value)


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0.0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1.0)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    fan_in, fan_out = _fans(t)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(t, -bound, bound)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    fan_in, fan_out = _fans(t)
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(t, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


def xavier_uniform_(t: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = _fans(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))
