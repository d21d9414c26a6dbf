"""Creation on every device: constants, ranges (arange, linspace), eye, arrays from data, and the
triangles tril / triu. (Random factories: test_nd_random.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nd_helpers import assert_same, from_torch, raises_like, random_tensor, transposed

import genesis_ndarray as nd
from device_support import requires_cuda

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool


def test_factories_follow_the_defaults_after_resolving_their_arguments(device):
    """The factories resolve (device, dtype) arguments once and reuse the answer; a change of the default
    dtype or device between calls is still seen, and arguments that compare equal but are not the same
    kind (0 and False) are not confused."""
    before = nd.zeros(2, device=device)
    assert before.dtype is nd.float32
    try:
        nd.set_default_dtype(nd.float64)
        for made in (nd.zeros(2, device=device), nd.ones(2, device=device), nd.empty(2, device=device)):
            assert made.dtype is nd.float64
        assert nd.full((2,), 0.5, device=device).dtype is nd.float64
    finally:
        nd.set_default_dtype(nd.float32)
    assert nd.zeros(2, device=device).dtype is nd.float32
    with nd.as_device(device):  # (a Device is a context manager of the default device, as torch's)
        assert nd.empty(3).device == nd.resolve_device(device)
    assert nd.empty(3).device == nd.as_device("cpu")
    with pytest.raises(TypeError, match="cannot interpret False as a device"):
        nd.empty(3, device=False)


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4)])
@pytest.mark.parametrize(
    "dtype",
    [None, nd.float16, nd.bfloat16, nd.float64, nd.int32, nd.bool_],
    ids=lambda d: "default" if d is None else d.name,
)
def test_zeros_ones_full(device, shape, dtype):
    tdt = None if dtype is None else dtype.torch
    assert_same(nd.zeros(*shape, dtype=dtype, device=device), torch.zeros(shape, dtype=tdt))
    assert_same(nd.ones(shape, dtype=dtype, device=device), torch.ones(shape, dtype=tdt))
    value = True if dtype is nd.bool_ else 3 if dtype is nd.int32 else -2.75
    assert_same(nd.full(shape, value, dtype=dtype, device=device), torch.full(shape, value, dtype=tdt))
    out = nd.empty(*shape, dtype=dtype, device=device)
    assert out.shape == shape and out.device == nd.resolve_device(device)


@pytest.mark.parametrize("value", [True, 7, -1.5])
def test_full_infers_dtype_from_value(device, value):
    assert_same(nd.full((2, 2), value, device=device), torch.full((2, 2), value))


@pytest.mark.parametrize(
    "args,dtype",
    [
        ((5,), None),
        ((2, 11, 3), None),
        ((0.0, 1.0, 0.25), None),
        ((-3, 4), nd.float64),
        ((10, 0, -3), None),
        ((1, 2.5, 0.5), nd.float16),
        ((0, 0), None),
    ],
)
def test_arange(device, args, dtype):
    expected = torch.arange(*args, dtype=None if dtype is None else dtype.torch)
    assert_same(nd.arange(*args, dtype=dtype, device=device), expected)


def test_arange_zero_step_raises(device):
    with pytest.raises(RuntimeError, match="step"):
        nd.arange(0, 3, 0, device=device)


# (start, end, steps, dtype): the half types on ends and steps they hold exactly (torch computes them in the
# half type itself, genesis's cuda kernel in float32); integer dtypes truncate the ends first, as torch.
LINSPACE_CASES = [
    (-1.3, 2.9, 37, None),
    (-1.3, 2.9, 1001, nd.float64),
    (2.0, -3.0, 11, nd.float32),
    (0.5, 0.5, 3, None),
    (-8.0, 16.0, 25, nd.bfloat16),
    (-8.0, 16.0, 7, nd.float16),
    (-7.9, 30.2, 12, nd.int64),
    (0, 10, 4, nd.int32),
    (5, 1, 9, nd.int64),
    (3.0, 9.0, 0, None),
    (3.0, 9.0, 1, None),
    (3, 9, 2, nd.int64),
]


@pytest.mark.parametrize("start,end,steps,dtype", LINSPACE_CASES, ids=[str(c) for c in LINSPACE_CASES])
def test_linspace_matches_torch(device, start, end, steps, dtype):
    got = nd.linspace(start, end, steps, dtype=dtype, device=device)
    assert_same(got, torch.linspace(start, end, steps, dtype=None if dtype is None else dtype.torch))


@pytest.mark.parametrize("n,m", [(1, None), (4, None), (3, 5), (6, 2), (0, 3), (3, 0)])
@pytest.mark.parametrize("dtype", [None, nd.float64, nd.bfloat16, nd.int32, nd.bool_], ids=str)
def test_eye_matches_torch(device, n, m, dtype):
    expected = (
        torch.eye(n, dtype=None if dtype is None else dtype.torch)
        if m is None
        else torch.eye(n, m, dtype=None if dtype is None else dtype.torch)
    )
    assert_same(nd.eye(n, m, dtype=dtype, device=device), expected)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, **kw: lib.linspace(0, 1, -1, **kw),
        lambda lib, **kw: lib.eye(-1, **kw),
        lambda lib, **kw: lib.eye(2, -3, **kw),
    ],
    ids=["linspace", "eye-n", "eye-m"],
)
def test_linspace_and_eye_refuse_negative_sizes(device, call):
    raises_like(lambda: call(torch), lambda: call(nd, device=device), "non-negative|greater or equal to 0")


@pytest.mark.parametrize(
    "data",
    [[1.5, -2.0, 3.25], [[1, 2], [3, 4]], [True, False], 3.5, 7, [[]]],
    ids=["floats", "ints", "bools", "float", "int", "empty"],
)
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


# ------------------------------------------------------------------ tril, triu
@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("dtype", [F32, BF16, I64, BOOL], ids=["f32", "bf16", "i64", "bool"])
def test_triangles_match_torch(device, op, diagonal, dtype):
    t = random_tensor((2, 4, 5), dtype)
    assert_same(getattr(from_torch(t, device), op)(diagonal), getattr(torch, op)(t, diagonal))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangles_of_strided_and_wide_inputs(device, op):
    t = random_tensor((6, 4))
    assert_same(getattr(transposed(t, device), op)(1), getattr(torch, op)(t, 1))
    w = random_tensor((3, 7))
    assert_same(getattr(from_torch(w, device), op)(-1), getattr(torch, op)(w, -1))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_triangles_need_two_dims(device, op):
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        getattr(from_torch(random_tensor((4,)), device), op)()


def test_python_numbers_read_straight_into_the_requested_dtype(device):
    # not through float32 first: 0.01 as float64 is float64's 0.01
    assert nd.array(0.01, dtype="float64", device=device).item() == 0.01
    assert nd.array([0.1, 1e-300], dtype="float64", device=device).tolist() == [0.1, 1e-300]
    assert nd.array([1.5, -2.5], dtype="int64", device=device).tolist() == [1, -2]  # torch truncates too
