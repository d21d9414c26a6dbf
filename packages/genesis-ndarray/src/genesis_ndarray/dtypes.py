"""Genesis dtypes and PyTorch's type-promotion rules.

A DType is a small immutable descriptor. Its ``name`` is the key the lower
layers understand (genesis_storage and genesis_kernels speak in dtype names);
``torch`` and ``numpy`` are its counterparts for the CPU backend and for
conversions.
"""

from __future__ import annotations

import builtins

import numpy as np
import torch

from . import registry


class DType:
    """One element type: name, size, category and its torch / numpy counterparts."""

    # A dict __slots__ documents each attribute (help() and the docs-coverage check read it).
    __slots__ = {
        "_rank": "Position in the promotion lattice inside its category (see promote_types).",
        "category": "0 bool, 1 integer, 2 floating: the order PyTorch promotes across.",
        "is_floating_point": "True for float16, bfloat16, float32 and float64, as torch.dtype.is_floating_point.",
        "is_signed": "False for uint8 and bool, True for the rest, as torch.dtype.is_signed.",
        "itemsize": "Bytes per element, as torch.dtype.itemsize (bool: 1).",
        "name": "The dtype's name without the module, as torch spells it: 'float32', 'int64', 'bool', ...",
        "numpy": "The matching numpy.dtype, or None for bfloat16 (numpy has none; conversions go through torch).",
        "torch": "The matching torch.dtype (the CPU backend's, and what to_torch / from_torch convert to and from).",
    }

    def __init__(self, name: str, itemsize: int, torch_dtype: torch.dtype, numpy_dtype, rank: int):
        self.name = name
        self.itemsize = itemsize
        self.torch = torch_dtype
        # bfloat16 has no numpy type; conversions go through torch for it.
        self.numpy = None if numpy_dtype is None else np.dtype(numpy_dtype)
        # Position in the promotion lattice inside its category (see promote_types).
        self._rank = rank
        # Plain attributes, not properties: every op reads them (result dtypes, whether an output gets a grad).
        self.is_floating_point = name in _FLOATING
        self.is_signed = name not in ("uint8", "bool")
        self.category = 0 if name == "bool" else 2 if self.is_floating_point else 1

    @property
    def is_complex(self) -> bool:
        """Always False: Genesis has no complex dtypes (torch.dtype.is_complex)."""
        return False

    def __repr__(self) -> str:
        return f"genesis.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


_FLOATING = frozenset({"float16", "bfloat16", "float32", "float64"})

bool_ = DType("bool", 1, torch.bool, np.bool_, 0)
uint8 = DType("uint8", 1, torch.uint8, np.uint8, 1)
int8 = DType("int8", 1, torch.int8, np.int8, 1)
int16 = DType("int16", 2, torch.int16, np.int16, 2)
int32 = DType("int32", 4, torch.int32, np.int32, 3)
int64 = DType("int64", 8, torch.int64, np.int64, 4)
float16 = DType("float16", 2, torch.float16, np.float16, 1)
bfloat16 = DType("bfloat16", 2, torch.bfloat16, None, 1)
float32 = DType("float32", 4, torch.float32, np.float32, 2)
float64 = DType("float64", 8, torch.float64, np.float64, 3)

ALL_DTYPES: tuple[DType, ...] = (
    float32,
    float16,
    bfloat16,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    bool_,
)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# name -> DType, for the lower layers' dtype strings (a plain dict read on every op)
dtype_by_name: dict[str, DType] = dict(_BY_NAME)
_ALIASES = {
    "float": float32,
    "half": float16,
    "double": float64,
    "long": int64,
    "int": int32,
    "short": int16,
    "bool": bool_,
}
_BY_TORCH = {d.torch: d for d in ALL_DTYPES}
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES if d.numpy is not None}

_default_dtype: DType = float32


def as_dtype(value) -> DType:
    """Accept a DType, a name ("float32"), a torch dtype, a numpy dtype or a Python type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = _BY_NAME.get(value) or _ALIASES.get(value)
        if found is None:
            raise TypeError(f"unknown dtype name {value!r}; expected one of {sorted(_BY_NAME)}")
        return found
    if isinstance(value, torch.dtype):
        if value not in _BY_TORCH:
            raise TypeError(f"torch dtype {value} has no genesis counterpart")
        return _BY_TORCH[value]
    if value is builtins.bool:
        return bool_
    if value is builtins.int:
        return int64
    if value is builtins.float:
        return _default_dtype
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a dtype") from None
    if npd not in _BY_NUMPY:
        raise TypeError(f"numpy dtype {npd} has no genesis counterpart")
    return _BY_NUMPY[npd]


def get_default_dtype() -> DType:
    """The floating-point dtype factories use for Python floats (float32 unless set_default_dtype changed it)."""
    return _default_dtype


def set_default_dtype(dtype) -> None:
    """Set the dtype of floating tensors made from Python floats (float32 unless changed)."""
    global _default_dtype
    d = as_dtype(dtype)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    # The cpu backend computes with torch, whose own default decides int / int and int * float.
    torch.set_default_dtype(d.torch)
    _default_dtype = d
    registry.invalidate()  # no resolved entry depends on the default dtype; forgetting them costs little


def _promote_pair(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == 2:
        # float16 with bfloat16 has no common 16-bit type: PyTorch goes to float32.
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
        return a if a._rank > b._rank else b
    # integers: uint8 with a signed type needs the next wider signed type.
    if a is uint8 or b is uint8:
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a._rank > b._rank else b


_PROMOTION = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(a, b) -> DType:
    """The smallest dtype both can be cast to safely, as torch.promote_types."""
    found = _PROMOTION.get((a, b))  # two DTypes (every op's case): one lookup, no conversion
    return found if found is not None else _PROMOTION[(as_dtype(a), as_dtype(b))]


def scalar_category(value) -> int:
    if isinstance(value, builtins.bool | np.bool_):
        return 0
    if isinstance(value, builtins.int | np.integer):
        return 1
    if isinstance(value, builtins.float | np.floating):
        return 2
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def result_type_with_scalar(tensor_dtype: DType, value) -> DType:
    """PyTorch's rule for tensor op Python-scalar: the scalar only matters when it
    belongs to a higher category (an int tensor times 2.5 is float, a float16
    tensor times 2.5 stays float16)."""
    category = scalar_category(value)
    if category <= tensor_dtype.category:
        return tensor_dtype
    return int64 if category == 1 else _default_dtype


def dtype_of_torch(t: torch.dtype) -> DType:
    return _BY_TORCH[t]


# Binary ops whose operands of one dtype give that dtype (div: floating dtypes only), and the predicates.
_SAME_DTYPE_BINARY = frozenset({"add", "sub", "mul", "maximum", "minimum", "div"})
_PREDICATE_BINARY = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})
_SCALAR_CATEGORY = {builtins.bool: 0, builtins.int: 1, builtins.float: 2}


def binary_result_dtype(op: str, dtype: DType, other: DType | type) -> DType | None:
    """torch's result dtype of ``x op y`` for x of ``dtype`` and y of dtype ``other`` (or a Python number of
    type ``other``), where these alone decide it without the default dtype: operands of one dtype, or a
    number of no higher category; bool operands excluded. None elsewhere (the backend's result tells).
    The resolved entries of both backends (registry.py) take their result dtypes from here."""
    if dtype is bool_:
        return None
    if isinstance(other, DType):
        if other is not dtype:
            return None
    elif _SCALAR_CATEGORY[other] > dtype.category:
        return None
    if op in _PREDICATE_BINARY:
        return bool_
    if op in _SAME_DTYPE_BINARY and (op != "div" or dtype.is_floating_point):
        return dtype
    return None
