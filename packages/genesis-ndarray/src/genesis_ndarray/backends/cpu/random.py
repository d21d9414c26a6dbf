"""CPU random numbers: factories, in-place fills, randperm, dropout and the generator's state.

Every draw goes through the one ``torch.Generator`` of the CPU backend, so ``manual_seed``
and ``set_rng_state`` replay it (and a seed gives the numbers torch gives under
``torch.manual_seed`` of the same seed).
"""

from __future__ import annotations

import torch

from ...device import Device
from ...dtypes import DType
from .common import reg

_generator = torch.Generator().manual_seed(0)


@reg("manual_seed")
def manual_seed(seed: int) -> None:
    _generator.manual_seed(seed)


@reg("initial_seed")
def initial_seed(device: Device) -> int:
    return _generator.initial_seed()


reg("get_rng_state")(lambda device: _generator.get_state())
reg("set_rng_state")(lambda state, device: _generator.set_state(state))


# ------------------------------------------------------------------ factories
@reg("rand")
def rand(shape, dtype: DType, device: Device) -> torch.Tensor:
    return torch.rand(shape, dtype=dtype.torch, generator=_generator)


@reg("randn")
def randn(shape, dtype: DType, device: Device) -> torch.Tensor:
    return torch.randn(shape, dtype=dtype.torch, generator=_generator)


@reg("randint")
def randint(low: int, high: int, shape, dtype: DType, device: Device) -> torch.Tensor:
    return torch.randint(low, high, shape, dtype=dtype.torch, generator=_generator)


@reg("randperm")
def randperm(n: int, dtype: DType, device: Device) -> torch.Tensor:
    return torch.randperm(n, dtype=dtype.torch, generator=_generator)


# ------------------------------------------------------------------ in-place fills
reg("uniform_")(lambda input, low, high: input.uniform_(low, high, generator=_generator))
reg("normal_")(lambda input, mean, std: input.normal_(mean, std, generator=_generator))
reg("exponential_")(lambda input, lambd: input.exponential_(lambd, generator=_generator))
reg("bernoulli_")(lambda input, p: input.bernoulli_(p, generator=_generator))


@reg("random_")
def random_(input: torch.Tensor, low, high) -> None:
    if low is None:
        input.random_(generator=_generator)
    else:
        input.random_(low, high, generator=_generator)


# ------------------------------------------------------------------ dropout
@reg("dropout")
def dropout(input: torch.Tensor, p: float, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.native_dropout's CPU recipe (a float mask drawn by bernoulli_(1 - p), output = input * mask * scale),
    drawn from this backend's generator: torch.nn.functional.dropout takes no generator."""
    if not train or not input.numel():
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    noise = torch.empty_like(input).bernoulli_(1.0 - p, generator=_generator)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input.mul(noise).mul_(scale), noise.bool()


reg("dropout_backward")(
    lambda grad_output, mask, scale: torch.ops.aten.native_dropout_backward(grad_output, mask, scale)
)
