"""Factories on every device: constants, ranges, random numbers, arrays from data."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nd_helpers import assert_same, to_torch

import genesis_ndarray as nd
from device_support import requires_cuda


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [None, nd.float16, nd.bfloat16, nd.float64, nd.int32, nd.bool_],
                         ids=lambda d: "default" if d is None else d.name)
def test_zeros_ones_full(device, shape, dtype):
    tdt = None if dtype is None else dtype.torch
    assert_same(nd.zeros(*shape, dtype=dtype, device=device), torch.zeros(shape, dtype=tdt))
    assert_same(nd.ones(shape, dtype=dtype, device=device), torch.ones(shape, dtype=tdt))
    value = True if dtype is nd.bool_ else 3 if dtype is nd.int32 else -2.75
    assert_same(nd.full(shape, value, dtype=dtype, device=device), torch.full(shape, value, dtype=tdt))
    out = nd.empty(*shape, dtype=dtype, device=device)
    assert out.shape == shape and out.device == nd.as_device(device)


@pytest.mark.parametrize("value", [True, 7, -1.5])
def test_full_infers_dtype_from_value(device, value):
    assert_same(nd.full((2, 2), value, device=device), torch.full((2, 2), value))


@pytest.mark.parametrize("args,dtype", [((5,), None), ((2, 11, 3), None), ((0.0, 1.0, 0.25), None),
                                        ((-3, 4), nd.float64), ((10, 0, -3), None), ((1, 2.5, 0.5), nd.float16),
                                        ((0, 0), None)])
def test_arange(device, args, dtype):
    expected = torch.arange(*args, dtype=None if dtype is None else dtype.torch)
    assert_same(nd.arange(*args, dtype=dtype, device=device), expected)


def test_arange_zero_step_raises(device):
    with pytest.raises(RuntimeError, match="step"):
        nd.arange(0, 3, 0, device=device)


@pytest.mark.parametrize("dtype", [nd.float32, nd.float16, nd.bfloat16, nd.float64], ids=lambda d: d.name)
def test_rand_randn_distribution_and_seed(device, dtype):
    nd.manual_seed(123)
    u = to_torch(nd.rand(4000, dtype=dtype, device=device)).double()
    n = to_torch(nd.randn(4000, dtype=dtype, device=device)).double()
    assert u.min() >= 0 and u.max() <= 1
    assert abs(u.mean() - 0.5) < 0.03 and abs(u.std() - (1 / 12) ** 0.5) < 0.03
    assert abs(n.mean()) < 0.08 and abs(n.std() - 1) < 0.08
    nd.manual_seed(123)
    torch.testing.assert_close(to_torch(nd.rand(4000, dtype=dtype, device=device)).double(), u, rtol=0, atol=0)
    assert not torch.equal(to_torch(nd.rand(4000, dtype=dtype, device=device)).double(), u)


def test_randint(device):
    nd.manual_seed(7)
    r = nd.randint(-3, 5, (2000,), device=device)
    assert r.dtype is nd.int64 and r.shape == (2000,)
    t = to_torch(r)
    assert t.min() == -3 and t.max() == 4
    assert set(t.tolist()) == set(range(-3, 5))
    assert nd.randint(4, size=(3,), dtype=nd.int32, device=device).dtype is nd.int32
    with pytest.raises(RuntimeError, match="from"):
        nd.randint(5, 5, (2,), device=device)


def test_random_needs_floating_dtype(device):
    with pytest.raises(TypeError, match="int32"):
        nd.randn(3, dtype=nd.int32, device=device)


@pytest.mark.parametrize("data", [[1.5, -2.0, 3.25], [[1, 2], [3, 4]], [True, False], 3.5, 7, [[]]],
                         ids=["floats", "ints", "bools", "float", "int", "empty"])
def test_array_from_python_data_like_torch_tensor(device, data):
    assert_same(nd.array(data, device=device), torch.tensor(data))
    assert_same(nd.array(data, dtype=nd.float64, device=device), torch.tensor(data, dtype=torch.float64))


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_, np.float16])
def test_array_and_from_numpy(device, np_dtype):
    src = (np.random.default_rng().standard_normal((3, 4)) * 5).astype(np_dtype)
    a = nd.array(src, device=device)
    assert_same(a, torch.from_numpy(src.copy()))
    b = nd.from_numpy(src, device=device)
    assert_same(b, torch.from_numpy(src.copy()))
    np.testing.assert_array_equal(b.numpy(), src)


def test_array_copies_its_input():
    src = np.random.default_rng().standard_normal(4).astype(np.float32)
    a = nd.array(src)
    src[0] = 1000.0
    assert a.numpy()[0] != 1000.0


def test_from_numpy_is_zero_copy_on_cpu():
    src = np.random.default_rng().standard_normal((2, 3))
    a = nd.from_numpy(src)
    assert a.data_ptr() == src.ctypes.data
    src[1, 2] = 42.0
    assert a.numpy()[1, 2] == 42.0
    a[0, 0] = -7.0
    assert src[0, 0] == -7.0
    view = a.numpy()
    view[0, 1] = 9.0
    assert src[0, 1] == 9.0


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_from_numpy_on_cuda_is_a_copy(device):
    src = np.random.default_rng().standard_normal((2, 3))
    a = nd.from_numpy(src, device=device)
    src[0, 0] = 42.0
    assert a.numpy()[0, 0] != 42.0
