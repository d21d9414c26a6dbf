"""Indexing through the IndexPlan: x[index], x[index] = v and index_put_ against torch, on every device.

The plan tests at the end run the CUDA backend's algorithm (view, mask -> nonzero, offsets,
one strided gather) with torch ops on the CPU, so the geometry is checked without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

import genesis_ndarray as nd
from device_support import requires_cuda
from genesis_ndarray import getitem as plan_module
from genesis_ndarray.shape import basic_index

SHAPE = (5, 6, 7)


def _i(*values):
    return torch.tensor(values, dtype=torch.int64)


def _cases():
    """(name, index builder over torch): each builder returns an index of torch tensors / Python items."""
    g = torch.Generator().manual_seed(1)

    def ints(high, *shape):
        return torch.randint(-high, high, shape, generator=g)

    def mask(*shape):
        return torch.rand(shape, generator=g) > 0.5

    return [
        ("int_tensor", lambda: ints(5, 4)),
        ("int_tensor_repeats", lambda: _i(0, 3, 3, -1, 0)),
        ("int_tensor_2d", lambda: ints(5, 2, 3)),
        ("list", lambda: [0, 4, -2, 1]),
        ("two_adjacent", lambda: (ints(5, 4), ints(6, 4))),
        ("three_broadcast", lambda: (ints(5, 3, 1), ints(6, 1, 4), ints(7, 4))),
        ("slice_then_adv", lambda: (slice(1, 4), ints(6, 2, 2))),
        ("adv_slice_adv_separated", lambda: (ints(5, 3), slice(None, None, 2), ints(7, 3))),
        ("int_and_adv_separated", lambda: (ints(5, 3), 2, ints(7, 3))),
        ("adv_int_adjacent", lambda: (1, ints(6, 3), ints(7, 3))),
        ("ellipsis_adv", lambda: (Ellipsis, ints(7, 5))),
        ("none_adv", lambda: (None, ints(5, 2), None, slice(2, 5))),
        ("mask_full", lambda: mask(5, 6, 7)),
        ("mask_leading", lambda: mask(5, 6)),
        ("mask_middle", lambda: (slice(None), mask(6))),
        ("mask_and_int", lambda: (mask(5), slice(None), ints(7, 1))),
        ("bool_scalar_true", lambda: True),
        ("bool_scalar_false", lambda: (slice(None), False)),
        ("empty_list", lambda: []),
        ("zero_d_int_tensor", lambda: torch.tensor(3)),
        ("int32_index", lambda: ints(5, 4).to(torch.int32)),
    ]


CASES = _cases()


def _to_nd_index(index, device):
    if isinstance(index, tuple):
        return tuple(_to_nd_index(i, device) for i in index)
    if isinstance(index, torch.Tensor):
        return nd.from_torch(index.clone(), device)
    return index


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_getitem_matches_torch(device, name, make):
    xt = random_tensor(SHAPE)
    index = make()
    expected = xt[index]
    got = from_torch(xt, device)[_to_nd_index(index, device)]
    assert_same(got, expected)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_setitem_tensor_and_scalar(device, name, make):
    index = make()
    xt = random_tensor(SHAPE)
    positions = torch.arange(xt.numel()).view(SHAPE)[index]
    repeats = positions.unique().numel() != positions.numel()
    # A value broadcast from its last dim (one value per slot unless a slot repeats: then which
    # write wins is unspecified, and one value for all), and a scalar.
    shape = positions.shape
    value = random_tensor((1,) if repeats or not shape else shape[-1:])
    for v in (value, 2.5):
        expected = xt.clone()
        expected[index] = v
        x = from_torch(xt, device)
        x[_to_nd_index(index, device)] = from_torch(v, device) if isinstance(v, torch.Tensor) else v
        assert_same(x, expected)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_index_put_accumulates(device, name, make):
    index = make()
    xt = random_tensor(SHAPE, dtype=torch.float64)
    values = random_tensor(xt[index].shape, dtype=torch.float64)
    expected = _reference_accumulate(xt, index, values)
    x = from_torch(xt, device)
    x.index_put_(_to_nd_index(index, device), from_torch(values, device), accumulate=True)
    assert_same(x, expected)


def _reference_accumulate(xt: torch.Tensor, index, values: torch.Tensor) -> torch.Tensor:
    """xt with values added at index, repeated positions summed (index_add_ over flat positions)."""
    out = xt.clone()
    positions = torch.arange(out.numel()).view(out.shape)[index]
    out.view(-1).index_add_(0, positions.reshape(-1), values.expand(positions.shape).reshape(-1))
    return out


def test_repeated_indices_sum(device):
    x = nd.zeros(4, dtype="float32", device=device)
    idx = nd.from_torch(_i(1, 1, 3, 1), device)
    x.index_put_(idx, nd.from_torch(torch.ones(4), device), accumulate=True)
    assert x.tolist() == [0.0, 3.0, 0.0, 1.0]


def test_index_of_non_contiguous_view(device):
    xt = random_tensor((6, 8))
    x = from_torch(xt, device)
    idx = _i(0, -1, 2)
    assert_same(x.T[1::2][nd.from_torch(idx, device)], xt.T[1::2][idx])
    y = x.T
    y[nd.from_torch(idx, device), 1:3] = 0.5
    xt.T[idx, 1:3] = 0.5
    assert_same(x, xt)


@pytest.mark.parametrize("index", [_i(5), _i(0, -6), (slice(None), _i(7))], ids=["high", "low", "dim1"])
def test_out_of_range_raises_index_error(device, index):
    x = from_torch(random_tensor((5, 6)), device)
    with pytest.raises(IndexError):
        x[_to_nd_index(index, device)]
    with pytest.raises(IndexError):
        x[_to_nd_index(index, device)] = 1.0
    # The error leaves the device usable.
    assert_same(x[nd.from_torch(_i(1), device)], x.cpu().native[_i(1)])


def test_bad_indices_raise_like_torch(device):
    x = from_torch(random_tensor((3, 4)), device)
    with pytest.raises(IndexError):
        x[nd.from_torch(torch.tensor([0.5]), device)]
    with pytest.raises(IndexError):
        x[nd.from_torch(torch.ones(4, dtype=torch.bool), device)]  # mask of the wrong size
    with pytest.raises(IndexError):
        x[nd.from_torch(_i(0, 1), device), nd.from_torch(_i(0, 1, 2), device)]  # no broadcast
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(RuntimeError):
        x[nd.from_torch(_i(0, 1), device)] = nd.from_torch(torch.ones(3), device)


def test_numpy_index(device):
    xt = random_tensor((5, 3))
    idx = np.array([4, 0, 0])
    assert_same(from_torch(xt, device)[idx], xt[torch.from_numpy(idx)])


# ------------------------------------------------------------------ basic indices written
SETITEMS = [
    ("int-scalar", lambda: 1, lambda: 4.5),
    ("slice-scalar", lambda: (slice(1, 3),), lambda: -2.0),
    ("step-tensor", lambda: (slice(None, None, 2), slice(1, None, 2)), lambda: random_tensor((2, 1, 4), torch.float32)),
    ("broadcast-row", lambda: (Ellipsis, 1), lambda: random_tensor((3,), torch.float32)),
    ("none-ellipsis", lambda: (None, 0, Ellipsis, -1), lambda: random_tensor((1, 3), torch.float32)),
    ("full", lambda: (Ellipsis,), lambda: random_tensor((4,), torch.float64)),
]


@pytest.mark.parametrize("index,value", [(i, v) for _, i, v in SETITEMS], ids=[n for n, _, _ in SETITEMS])
def test_setitem_basic_index(device, index, value):
    t = random_tensor((3, 3, 4), torch.float32)
    a = from_torch(t, device)
    idx, val = index(), value()
    t[idx] = val
    a[idx] = from_torch(val, device) if isinstance(val, torch.Tensor) else val
    assert_same(a, t)


# ------------------------------------------------------------------ index arrays on the cpu
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_indexing_with_cpu_index_arrays(device):
    t = random_tensor((5, 4))
    x = from_torch(t, device)
    idx, mask = torch.tensor([4, 0, 4]), random_tensor((5,), torch.bool)
    assert_same(x[from_torch(idx, "cpu")], t[idx])
    assert_same(x[from_torch(mask, "cpu")], t[mask])
    assert_same(x[from_torch(idx, "cpu"), 1:], t[idx, 1:])
    x[from_torch(idx, "cpu")] = from_torch(torch.full((3, 4), 7.0), device)
    t[idx] = 7.0
    assert_same(x, t)


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cpu_array_refuses_cuda_index(device):
    x = from_torch(random_tensor((5, 4)), "cpu")
    with pytest.raises(RuntimeError, match="indices should be either on cpu or on the same device"):
        x[from_torch(torch.tensor([1]), device)]


# ------------------------------------------------------------------ the plan on the CPU
def _simulate_gather(xt: torch.Tensor, index) -> torch.Tensor:
    """The CUDA backend's getitem, step for step, with torch ops (no GPU needed)."""
    items = tuple(i.item() if isinstance(i, torch.Tensor) and i.ndim == 0 else i for i in plan_module.normalize(index))
    items = tuple(torch.tensor(i) if isinstance(i, list) else i for i in items)
    if any(isinstance(i, torch.Tensor) and i.numel() == 0 for i in items):
        items = tuple(
            i.long() if isinstance(i, torch.Tensor) and i.numel() == 0 and i.is_floating_point() else i for i in items
        )
    plan = plan_module.parse(tuple(xt.shape), items)
    shape, strides, offset = basic_index(tuple(xt.shape), xt.stride(), xt.storage_offset(), plan.view)
    base = xt.as_strided(shape, strides, offset)
    if plan.kind is plan_module.IndexKind.VIEW:
        return base
    dims, arrays = [], []
    for adv in plan.advanced:
        a = torch.tensor(adv.array, dtype=torch.int64) if isinstance(adv.array, list) else adv.array
        if adv.is_mask:
            nz = a.nonzero()
            dims += [adv.dim + j for j in range(a.ndim)]
            arrays += [nz[:, j] for j in range(a.ndim)]
        else:
            dims.append(adv.dim)
            arrays.append(a.long())
    lay = plan_module.layout(tuple(base.shape), tuple(dims), [tuple(a.shape) for a in arrays])
    if not lay.shape or 0 in lay.shape:
        return torch.empty(lay.shape, dtype=xt.dtype)
    offsets = sum(torch.remainder(a, base.shape[d]) * base.stride(d) for d, a in zip(dims, arrays))
    offsets = offsets.expand(lay.bshape)
    nb, at = len(lay.bshape), lay.at
    sizes = tuple(base.shape[d] for d in lay.rest)
    st = tuple(base.stride(d) for d in lay.rest)
    extent = 1 + sum((base.shape[d] - 1) * base.stride(d) for d in dims)
    x = xt.as_strided(
        sizes[:at] + lay.bshape[:-1] + (extent,) + sizes[at:],
        st[:at] + (0,) * (nb - 1) + (1,) + st[at:],
        base.storage_offset(),
    )
    idx = offsets.as_strided(
        lay.shape, (0,) * at + offsets.stride() + (0,) * (len(sizes) - at), offsets.storage_offset()
    )
    return torch.gather(x, at + nb - 1, idx)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_plan_gather_algorithm(name, make):
    xt = random_tensor((8, 6, 7))[1:6]  # an offset base, so offsets are relative to it
    index = make()
    torch.testing.assert_close(_simulate_gather(xt, index), xt[index], rtol=0, atol=0)


def test_plan_layout_and_permutations():
    lay = plan_module.layout((5, 6, 7, 8), (1, 3), [(2, 1), (4,)])
    assert lay.shape == (2, 4, 5, 7) and lay.at == 0
    lay = plan_module.layout((5, 6, 7, 8), (1, 2), [(3,), (3,)])
    assert lay.shape == (5, 3, 8) and lay.at == 1
    result = torch.zeros(lay.shape)
    b_first = result.permute(lay.to_b_first())
    assert tuple(b_first.shape) == (3, 5, 8)
    assert tuple(b_first.permute(lay.to_result()).shape) == lay.shape


def test_plan_kinds():
    k = plan_module.IndexKind
    assert plan_module.parse((3, 4), (0, slice(None))).kind is k.VIEW
    assert plan_module.parse((3, 4), _i(0)).kind is k.GATHER
    assert plan_module.parse((3, 4), _i(0), write=True).kind is k.SCATTER
    assert plan_module.parse((3, 4), 1, write=True, value_is_array=True).kind is k.COPY
    assert plan_module.parse((3, 4), 1, write=True).kind is k.FILL
