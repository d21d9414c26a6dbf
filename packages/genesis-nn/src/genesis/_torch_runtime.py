"""torch.X runtime names of issue #30: constants (e, pi, inf, nan, newaxis), dtype information (dtype, finfo,
iinfo, can_cast, result_type), layouts and memory formats, tensor predicates (typename, is_nonzero,
is_same_size, is_signed, is_distributed, get_device), anomaly mode, inference mode, and re-exports of
genesis.cuda's Stream / Event / OutOfMemoryError and genesis.amp's GradScaler.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from genesis_autograd import DType, Tensor, bool_, int16, promote_types
from genesis_autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from genesis_autograd.grad_mode import is_inference_mode_enabled
from genesis_autograd.memory_format import (  # the formats Tensor.clone / contiguous / to and the *_like lay out
    channels_last,
    channels_last_3d,
    contiguous_format,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
)

from . import cuda as _cuda
from .amp import GradScaler

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None
dtype = DType
short = int16  # torch's C-style alias of int16
# genesis.cuda star-imports its runtime names (out of the type checker's sight): read them off the module.
Stream = _cuda.Stream  # type: ignore[attr-defined]
Event = _cuda.Event  # type: ignore[attr-defined]
OutOfMemoryError = _cuda.OutOfMemoryError  # type: ignore[attr-defined]


class layout:
    """A tensor's memory layout (torch.layout): genesis has the dense, strided one only."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"genesis.{self._name}"


strided = layout("strided")

# bfloat16 has no numpy type: its limits, as torch.finfo(torch.bfloat16) gives them.
_BF16 = dict(bits=16, eps=0.0078125, max=3.3895313892515355e38, tiny=1.1754943508222875e-38, resolution=0.01)


class finfo:
    """The numerical limits of a floating dtype (torch.finfo): bits, eps, max, min, tiny, smallest_normal,
    resolution, dtype."""

    def __init__(self, type: DType | None = None) -> None:
        from genesis_autograd import get_default_dtype

        type = get_default_dtype() if type is None else type
        if not type.is_floating_point:
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'"
            )
        if type.numpy is None:
            info: dict[str, Any] = dict(_BF16)
        else:
            f = np.finfo(type.numpy)
            info = dict(
                bits=f.bits, eps=float(f.eps), max=float(f.max), tiny=float(f.tiny), resolution=10.0**-f.precision
            )
        self.bits: int = info["bits"]
        self.eps: float = info["eps"]
        self.max: float = info["max"]
        self.min: float = -info["max"]
        self.tiny: float = info["tiny"]
        self.smallest_normal: float = info["tiny"]
        self.resolution: float = info["resolution"]
        self.dtype: str = type.name

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:
    """The limits of an integer dtype (torch.iinfo): bits, max, min, dtype."""

    def __init__(self, type: DType) -> None:
        if type.is_floating_point or type.name == "bool":
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        i = np.iinfo(type.numpy)
        self.bits: int = i.bits
        self.max: int = int(i.max)
        self.min: int = int(i.min)
        self.dtype: str = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def can_cast(from_: DType, to: DType) -> bool:
    """Whether torch's casting rules allow ``from_`` into ``to`` in an op's output: not to a lower category
    (floating > integer > bool)."""
    return to.category >= from_.category


def result_type(tensor1: Tensor | int | float | bool, tensor2: Tensor | int | float | bool) -> DType:
    """The dtype an arithmetic op of the two would give: tensors with dims first, then 0-d tensors, then
    numbers, each only where of a higher category (bool < integer < floating)."""
    from genesis_autograd import get_default_dtype, int64

    def rank(x: Any) -> tuple[int, DType]:
        if isinstance(x, Tensor):
            return (2 if x.ndim else 1), x.dtype
        if isinstance(x, bool):
            return 0, bool_
        return 0, (int64 if isinstance(x, int) else get_default_dtype())

    (ra, da), (rb, db) = rank(tensor1), rank(tensor2)
    if ra == rb:
        return promote_types(da, db)
    (_, high), (_, low) = ((ra, da), (rb, db)) if ra > rb else ((rb, db), (ra, da))
    return high if high.category >= low.category else promote_types(high, low)


def typename(obj: object) -> str:
    """torch.typename: ``genesis.FloatTensor``-style names for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long"}
        names |= {"int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
        prefix = "genesis.cuda." if obj.device.type == "cuda" else "genesis."
        return f"{prefix}{names[obj.dtype.name]}Tensor"
    module = type(obj).__module__
    return type(obj).__qualname__ if module == "builtins" else f"{module}.{type(obj).__qualname__}"


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is nonzero; more or fewer elements are refused, as torch."""
    return input.is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    return input.is_same_size(other)


def is_signed(input: Tensor) -> bool:
    """Whether the tensor's dtype is signed (all but uint8 and bool)."""
    return input.is_signed()


def is_distributed(input: Tensor) -> bool:
    """False: a genesis tensor is never a distributed (sharded) tensor."""
    return input.is_distributed()


def is_vulkan_available() -> bool:
    """False: genesis has no Vulkan backend."""
    return False


def get_device(input: Tensor) -> int:
    """The cuda device index of a tensor, -1 for a cpu tensor."""
    return input.get_device()


__all__ = [
    "e",
    "pi",
    "inf",
    "nan",
    "newaxis",
    "dtype",
    "short",
    "finfo",
    "iinfo",
    "can_cast",
    "result_type",
    "layout",
    "strided",
    "memory_format",
    "contiguous_format",
    "preserve_format",
    "channels_last",
    "channels_last_3d",
    "legacy_contiguous_format",
    "typename",
    "is_nonzero",
    "is_same_size",
    "is_signed",
    "is_distributed",
    "is_vulkan_available",
    "get_device",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled",
    "is_inference_mode_enabled",
    "Stream",
    "Event",
    "OutOfMemoryError",
    "GradScaler",
]
