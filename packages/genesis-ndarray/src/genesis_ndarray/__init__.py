"""genesis_ndarray: device-independent n-dimensional arrays.

An NDArray holds a native array of its device's backend (a torch CPU tensor on
``cpu``; a genesis_storage StridedView on ``cuda``) and dispatches every op through
one registry. Dtypes follow PyTorch's names and promotion rules.
"""

from importlib import metadata as _metadata
from pathlib import Path as _Path

from . import cuda, registry, shape
from .creation import (
    arange,
    array,
    empty,
    eye,
    from_dlpack,
    from_numpy,
    from_torch,
    full,
    linspace,
    manual_seed,
    ones,
    rand,
    randint,
    randn,
    where,
    zeros,
)
from .device import Device, as_device, resolve_device
from .dtypes import (
    ALL_DTYPES,
    DType,
    as_dtype,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from .ndarray import NDArray
from .precision import get_float32_matmul_precision, set_float32_matmul_precision
from .rng import bernoulli, get_rng_state, initial_seed, randperm, seed, set_rng_state


def _read_version() -> str:
    """The installed distribution's version; from pyproject.toml when run from a source tree."""
    try:
        return _metadata.version("genesis-ndarray")
    except _metadata.PackageNotFoundError:  # on PYTHONPATH from a checkout (tools/gpu-test): no metadata
        import tomllib

        with open(_Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])


__version__ = _read_version()

__all__ = [
    "ALL_DTYPES",
    "DType",
    "Device",
    "NDArray",
    "arange",
    "array",
    "as_device",
    "as_dtype",
    "bfloat16",
    "bool_",
    "cuda",
    "empty",
    "eye",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "from_torch",
    "full",
    "get_default_dtype",
    "int8",
    "int16",
    "int32",
    "int64",
    "linspace",
    "manual_seed",
    "ones",
    "promote_types",
    "rand",
    "randint",
    "randn",
    "registry",
    "resolve_device",
    "set_default_dtype",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "shape",
    "uint8",
    "where",
    "zeros",
    "bernoulli",
    "get_rng_state",
    "initial_seed",
    "randperm",
    "seed",
    "set_rng_state",
]
