"""Parameter initialisation (torch.nn.init): in place, without recording gradients, with torch's
fan and gain rules.

``generator``: genesis has one generator per device; an object with torch.Generator's
``get_state`` / ``set_state`` (holding a state from genesis.get_rng_state for the tensor's
device) is drawn from instead, and left advanced, as torch does with a Generator.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from genesis_autograd import Tensor, empty, eye, get_rng_state, no_grad, set_rng_state
from genesis_autograd import tensor as _to_tensor

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


@contextmanager
def _drawing_from(generator, device) -> Iterator[None]:
    """Random draws inside come from ``generator`` (when given) instead of the device's own."""
    if generator is None:
        yield
        return
    saved = get_rng_state(device)
    set_rng_state(generator.get_state(), device)
    try:
        yield
    finally:
        generator.set_state(get_rng_state(device))
        set_rng_state(saved, device)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The gain that keeps activations' variance through ``nonlinearity`` (torch's table)."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def _calculate_correct_fan(t: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    with no_grad(), _drawing_from(generator, tensor.device):
        return tensor.uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    with no_grad(), _drawing_from(generator, tensor.device):
        return tensor.normal_(mean, std)


def _erfinv(y: Tensor) -> Tensor:
    """erf^-1 on (-1, 1): Giles' single-precision approximation, then two Newton steps on erf."""
    w = -((1 - y) * (1 + y)).log()
    small = w < 5.0
    ws, wl = w - 2.5, w.clamp_min(5.0).sqrt() - 3.0
    ps = [
        2.81022636e-08,
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ]
    pl = [
        -0.000200214257,
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ]
    p_s, p_l = ps[0] * ws + ps[1], pl[0] * wl + pl[1]
    for cs, cl in zip(ps[2:], pl[2:]):
        p_s, p_l = p_s * ws + cs, p_l * wl + cl
    x = p_l.where(~small, p_s) * y  # where(cond, other): keep p_l where w >= 5
    for _ in range(2):
        x = x - (x.erf() - y) / ((2 / math.sqrt(math.pi)) * (-(x * x)).exp())
    return x


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None
) -> Tensor:
    """Normal(mean, std) restricted to [a, b], by the inverse CDF of a uniform draw (as torch)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
            "may be incorrect.",
            stacklevel=2,
        )

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    with no_grad(), _drawing_from(generator, tensor.device):
        u = empty(*tensor.shape, dtype="float64", device=tensor.device).uniform_(2 * lo - 1, 2 * hi - 1)
        values = _erfinv(u) * (std * math.sqrt(2.0)) + mean
        return tensor.copy_(values.clamp(a, b).to(dtype=tensor.dtype))


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        rows, cols = tensor.shape
        return tensor.copy_(eye(rows, cols, dtype=tensor.dtype, device=tensor.device))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal draw, signs fixed by R's
    diagonal (as torch). The decomposition runs on the host in float64: it is done once, at init."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    import numpy as np

    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad(), _drawing_from(generator, tensor.device):
        a = empty(rows, cols, dtype="float64", device=tensor.device).normal_(0.0, 1.0).cpu().numpy()
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    values = _to_tensor(np.ascontiguousarray(q * gain), dtype=tensor.dtype, device=tensor.device)
    with no_grad():
        return tensor.copy_(values.reshape(*tensor.shape))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
) -> Tensor:
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
) -> Tensor:
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


__all__ = [
    "calculate_gain",
    "constant_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]
