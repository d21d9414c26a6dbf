"""DTypes (sizes, categories, counterparts, PyTorch's promotion rules) and Devices."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
import torch
from nd_helpers import from_torch, random_tensor

import genesis_ndarray as nd

DTYPES = list(nd.ALL_DTYPES)
NAMES = [d.name for d in DTYPES]


@pytest.mark.parametrize("dtype", DTYPES, ids=NAMES)
def test_dtype_descriptor_matches_torch(dtype):
    t = dtype.torch
    assert dtype.itemsize == t.itemsize
    assert dtype.is_floating_point == t.is_floating_point
    assert dtype.is_signed == t.is_signed
    assert nd.as_dtype(t) is dtype
    assert nd.as_dtype(dtype.name) is dtype
    assert pickle.loads(pickle.dumps(dtype)) is dtype
    if dtype.numpy is None:
        assert dtype.name == "bfloat16"
    else:
        assert dtype.numpy == torch.empty(0, dtype=t).numpy().dtype
        assert nd.as_dtype(dtype.numpy) is dtype


def test_dtype_aliases_and_python_types():
    assert nd.as_dtype("float") is nd.float32 and nd.as_dtype("double") is nd.float64
    assert nd.as_dtype("half") is nd.float16 and nd.as_dtype("long") is nd.int64
    assert nd.as_dtype(float) is nd.get_default_dtype()
    assert nd.as_dtype(int) is nd.int64 and nd.as_dtype(bool) is nd.bool_
    with pytest.raises(TypeError, match="complex64"):
        nd.as_dtype(np.complex64)
    with pytest.raises(TypeError, match="float7"):
        nd.as_dtype("float7")


@pytest.mark.parametrize(
    "a,b",
    list(itertools.product(DTYPES, DTYPES)),
    ids=[f"{a.name}-{b.name}" for a, b in itertools.product(DTYPES, DTYPES)],
)
def test_promote_types_matches_torch_for_every_pair(a, b):
    assert nd.promote_types(a, b).torch == torch.promote_types(a.torch, b.torch)


# Tensor (with dims) op Python scalar / 0-dim tensor, per device, as torch's result_type.
_SCALAR_DTYPES = [nd.bool_, nd.uint8, nd.int8, nd.int32, nd.int64, nd.float16, nd.bfloat16, nd.float32, nd.float64]


@pytest.mark.parametrize("dtype", _SCALAR_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("scalar", [True, 3, 2.5], ids=["bool", "int", "float"])
@pytest.mark.parametrize("op", ["add", "mul"])
def test_tensor_scalar_promotion(device, dtype, scalar, op):
    t = random_tensor((3,), dtype.torch, low=1, high=4) if dtype is not nd.bool_ else torch.tensor([True, False, True])
    a = from_torch(t, device)
    expected = getattr(torch, op)(t, scalar)
    out = a.binary(op, scalar)
    assert out.dtype.torch == expected.dtype
    rev = getattr(a, f"__r{op}__")(scalar)
    assert rev.dtype.torch == expected.dtype


@pytest.mark.parametrize(
    "dims_dtype,zero_dtype",
    [
        (torch.float16, torch.float64),
        (torch.int32, torch.int64),
        (torch.int32, torch.float64),
        (torch.uint8, torch.int64),
        (torch.bool, torch.int32),
        (torch.float32, torch.float64),
    ],
)
def test_zero_dim_tensor_promotes_like_a_scalar(device, dims_dtype, zero_dtype):
    t = random_tensor((4,), dims_dtype, low=1, high=5)
    z = random_tensor((), zero_dtype, low=1, high=5)
    expected = t + z
    out = from_torch(t, device) + from_torch(z, device)
    assert out.dtype.torch == expected.dtype
    assert (z + t).dtype == (from_torch(z, device) + from_torch(t, device)).dtype.torch


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool])
def test_integer_true_division_gives_default_float(device, dtype):
    a = random_tensor((5,), dtype, low=1, high=9)
    b = random_tensor((5,), dtype, low=1, high=9)
    if dtype == torch.bool:
        b = torch.ones(5, dtype=torch.bool)
    out = from_torch(a, device) / from_torch(b, device)
    expected = a / b
    assert out.dtype.torch == expected.dtype == torch.float32
    torch.testing.assert_close(out.to("cpu").native, expected)


def test_set_default_dtype_changes_float_results():
    previous = nd.get_default_dtype()
    try:
        nd.set_default_dtype(nd.float64)
        assert nd.ones(2).dtype is nd.float64
        assert nd.array([1.5]).dtype is nd.float64
        assert nd.full((2,), 0.5).dtype is nd.float64
        with pytest.raises(TypeError, match="floating"):
            nd.set_default_dtype(nd.int32)
    finally:
        nd.set_default_dtype(previous)
    assert nd.ones(2).dtype is previous


def test_set_default_dtype_reaches_integer_promotion(device):
    previous = nd.get_default_dtype()
    a = from_torch(random_tensor((3,), torch.int64, low=1, high=9), device)
    try:
        nd.set_default_dtype(nd.float64)
        results = [(a / 2).dtype, (a * 2.5).dtype, a.sqrt().dtype]
    finally:
        nd.set_default_dtype(previous)
    assert results == [nd.float64] * 3


# ------------------------------------------------------------------ devices
@pytest.mark.parametrize("spec", ["cpu", "cuda", "cuda:0", "cuda:1", "cuda:3"])
def test_device_parse_str_repr_like_torch(spec):
    d, t = nd.as_device(spec), torch.device(spec)
    assert d.type == t.type and d.index == t.index
    assert str(d) == str(t) and repr(d) == repr(t)
    assert nd.as_device(t) == d
    assert pickle.loads(pickle.dumps(d)) == d


_SPECS = ["cpu", "cuda", "cuda:0", "cuda:1"]


@pytest.mark.parametrize("a", _SPECS)
@pytest.mark.parametrize("b", _SPECS)
def test_device_equality_like_torch(a, b):
    """A bare "cuda" has no index and equals only itself (not cuda:0), as torch.device("cuda")."""
    equal = nd.as_device(a) == nd.as_device(b)
    assert equal == (torch.device(a) == torch.device(b))
    if equal:
        assert hash(nd.as_device(a)) == hash(nd.as_device(b))


def test_device_type_and_index_arguments_like_torch():
    for args in [("cuda", 1), ("cuda", 0), ("cuda", None), ("cpu", None)]:
        d, t = nd.as_device(*args), torch.device(*args)
        assert (d.type, d.index, repr(d)) == (t.type, t.index, repr(t))
    for bad in [("cuda:1", 0), ("cuda", -1)]:
        with pytest.raises(RuntimeError):
            torch.device(*bad)
        with pytest.raises(RuntimeError):
            nd.as_device(*bad)
    with pytest.raises(RuntimeError):
        torch.device("cuda:01")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        nd.as_device("cuda:01")


def test_device_equality_and_hash():
    assert nd.as_device("cuda:0") == nd.Device("cuda", 0)
    assert nd.as_device("cuda") == nd.Device("cuda") and nd.as_device("cuda").index is None
    assert nd.as_device("cuda:0") != nd.as_device("cuda:1")
    assert nd.as_device("cpu") != nd.as_device("cuda:0")
    assert nd.as_device("cpu") == "cpu" and nd.as_device("cuda:1") == "cuda:1"
    assert len({nd.as_device("cpu"), nd.Device("cpu"), nd.as_device("cuda:0"), nd.Device("cuda", 0)}) == 2
    assert len({nd.as_device("cuda"), nd.as_device("cuda:0")}) == 2  # as {torch.device("cuda"), torch.device("cuda:0")}
    assert nd.as_device(1) == nd.Device("cuda", 1)


@pytest.mark.parametrize(
    "spec,exc", [("tpu", RuntimeError), ("cuda:x", RuntimeError), ("cuda:-1", RuntimeError), (3.5, TypeError)]
)
def test_bad_device_specs_raise(spec, exc):
    with pytest.raises(exc) as info:
        nd.as_device(spec)
    if isinstance(spec, str):
        with pytest.raises(exc):
            torch.device(spec)
        assert spec.split(":")[0] in str(info.value) or spec in str(info.value)
