"""Views share storage: shape, strides and storage_offset equal torch's, and writes reach the base.
Also contiguous, astype, copy_ / fill_ / setitem and transfers between devices."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, to_torch

import genesis_ndarray as nd

F32, F16, BF16, F64, I32, I64, U8, BOOL = (torch.float32, torch.float16, torch.bfloat16, torch.float64,
                                           torch.int32, torch.int64, torch.uint8, torch.bool)

def _empty_slice(x):
    return x[:, 3:]


# (id, fn applied to both a torch tensor and an NDArray, writable): base shape (2, 3, 4)
VIEWS = [
    ("reshape", lambda x: x.reshape(6, 4), True),
    ("reshape-infer", lambda x: x.reshape(-1, 2, 3), True),
    ("view", lambda x: x.view(2, 12), True),
    ("view-split", lambda x: x.view(2, 3, 2, 2), True),
    ("permute", lambda x: x.permute(2, 0, 1), True),
    ("permute-neg", lambda x: x.permute(-1, -3, -2), True),
    ("transpose", lambda x: x.transpose(0, 2), True),
    ("T", lambda x: x[1].T, True),
    ("mT", lambda x: x.mT, True),
    ("expand", lambda x: x[:, :1, :].expand(2, 5, 4), False),
    ("expand-new-dims", lambda x: x[0, 0].expand(3, 2, 4), False),
    ("expand-minus-one", lambda x: x[:, 1:2].expand(-1, 3, -1), False),
    ("squeeze-all", lambda x: x[:, 1:2, None].squeeze(), True),
    ("squeeze-dim", lambda x: x[:, 1:2].squeeze(1), True),
    ("squeeze-noop", lambda x: x.squeeze(0), True),
    ("unsqueeze-0", lambda x: x.unsqueeze(0), True),
    ("unsqueeze-mid", lambda x: x.unsqueeze(2), True),
    ("unsqueeze-last", lambda x: x.unsqueeze(-1), True),
    ("flatten", lambda x: x.flatten(), True),
    ("flatten-1-2", lambda x: x.flatten(1, 2), True),
    ("narrow", lambda x: x.narrow(2, 1, 2), True),
    ("narrow-neg", lambda x: x.narrow(-2, -2, 2), True),
    ("int", lambda x: x[1], True),
    ("neg-int", lambda x: x[-1, -2], True),
    ("slice", lambda x: x[:, 1:3], True),
    ("step", lambda x: x[:, ::2, 1::2], True),
    ("neg-slice", lambda x: x[..., -3:-1], True),
    ("none", lambda x: x[None, :, None], True),
    ("ellipsis", lambda x: x[..., 2], True),
    ("ellipsis-none", lambda x: x[1, ..., None, ::3], True),
    ("mixed", lambda x: x[-1, 1:, None, ::2], True),
    ("empty-slice", _empty_slice, True),
    ("chain", lambda x: x.permute(1, 0, 2)[1:, :, ::2].transpose(0, 1), True),
    ("transpose-then-view", lambda x: x.transpose(0, 1).reshape(3, 2, 2, 2), True),
    ("as_strided", lambda x: x.as_strided((3, 2), (1, 4), 2), True),
    ("diagonal-as-strided", lambda x: x.as_strided((3,), (5,), 0), True),
]


@pytest.mark.parametrize("fn,writable", [(f, w) for _, f, w in VIEWS], ids=[n for n, _, _ in VIEWS])
def test_view_geometry_and_write_through(device, fn, writable, request):
    tb = random_tensor((2, 3, 4), F32)
    base = from_torch(tb, device)
    tv, v = fn(tb), fn(base)
    assert v.shape == tuple(tv.shape)
    assert v.stride() == tv.stride() == v.strides
    assert v.storage_offset() == tv.storage_offset()
    assert v.is_contiguous() == tv.is_contiguous()
    assert_same(v, tv)
    if writable and tv.numel():
        src = random_tensor(tuple(tv.shape), F32)
        tv.copy_(src)
        v.copy_(from_torch(src, device))
        assert_same(base, tb)  # the write went through the view into the base
        v.fill_(-3.5)
        tv.fill_(-3.5)
        assert_same(base, tb)


def test_views_of_a_non_contiguous_base(device):
    full_t = random_tensor((4, 6), F32)
    tb = full_t.t()[1:]  # (5, 4), strides (1, 6), offset 1
    base = from_torch(full_t, device).T[1:]
    assert base.stride() == tb.stride() and base.storage_offset() == tb.storage_offset()
    for fn in (lambda x: x[::2], lambda x: x.unsqueeze(1), lambda x: x.reshape(5, 2, 2),
               lambda x: x.narrow(1, 1, 2), lambda x: x.flatten(0, 0)):
        tv, v = fn(tb), fn(base)
        assert (v.shape, v.stride(), v.storage_offset()) == (tuple(tv.shape), tv.stride(), tv.storage_offset())
        assert_same(v, tv)


@pytest.mark.parametrize("fn", [lambda x: x.T.reshape(12), lambda x: x[:, :3].reshape(9),
                                lambda x: x.T.flatten()], ids=["t", "step", "flatten"])
def test_reshape_copies_where_a_view_is_impossible(device, fn):
    tb = random_tensor((3, 4), F32)
    base = from_torch(tb, device)
    tv, v = fn(tb), fn(base)
    assert_same(v, tv)
    assert v.is_contiguous() and v.stride() == tv.stride()
    before = to_torch(base)
    v.fill_(7.0)
    assert_same(base, before)  # a copy: the base is untouched


def test_view_of_incompatible_strides_raises(device):
    a = from_torch(random_tensor((3, 4), F32), device)
    with pytest.raises(RuntimeError, match=r"view size is not compatible"):
        a.T.view(12)
    with pytest.raises(RuntimeError, match=r"\[5\].*12|12.*\[5\]"):
        a.view(5)


def test_negative_step_is_refused_like_torch(device):
    a = from_torch(random_tensor((4,), F32), device)
    with pytest.raises(ValueError, match="step"):
        a[::-1]


def test_contiguous(device):
    tb = random_tensor((3, 4, 5), F32)
    base = from_torch(tb, device)
    assert base.contiguous().data_ptr() == base.data_ptr()
    v = base.permute(2, 0, 1)[:, 1:]
    c = v.contiguous()
    assert c.is_contiguous() and c.stride() == tb.permute(2, 0, 1)[:, 1:].contiguous().stride()
    assert_same(c, tb.permute(2, 0, 1)[:, 1:])
    c.fill_(0.25)
    assert_same(base, tb)


CASTS = [(F32, F64), (F64, F32), (F32, F16), (F32, BF16), (BF16, F32), (F32, I32), (F64, I64), (I32, F32),
         (F32, BOOL), (BOOL, F32), (I64, U8), (F16, I32), (I32, BOOL), (I64, I32)]


@pytest.mark.parametrize("src,dst", CASTS, ids=[f"{str(a)[6:]}->{str(b)[6:]}" for a, b in CASTS])
def test_astype_and_to_dtype(device, src, dst):
    if src.is_floating_point:
        t = (random_tensor((4, 5), F64) * 5).to(src)
        if dst in (U8,):
            t = t.abs()
    else:
        t = random_tensor((4, 5), src, low=0 if dst == U8 else None, high=100 if dst == U8 else None)
    a = from_torch(t, device)
    assert_same(a.astype(nd.as_dtype(dst)), t.to(dst), rtol=0, atol=0)
    assert_same(a.to(dtype=dst), t.to(dst), rtol=0, atol=0)
    assert_same(a.T.astype(nd.as_dtype(dst)), t.T.to(dst), rtol=0, atol=0)
    assert a.astype(nd.as_dtype(src)) is a


@pytest.mark.parametrize("dst_shape,src_shape,dst_dtype,src_dtype",
                         [((3, 4), (3, 4), F32, F32), ((3, 4), (4,), F32, F64), ((2, 3, 4), (3, 1), F64, F32),
                          ((3, 4), (1, 4), F16, F32), ((3, 4), (3, 4), I32, I64)])
def test_copy_broadcasts_and_casts(device, dst_shape, src_shape, dst_dtype, src_dtype):
    td, ts = random_tensor(dst_shape, dst_dtype), random_tensor(src_shape, src_dtype)
    d = from_torch(td, device)
    ptr = d.data_ptr()
    assert d.copy_(from_torch(ts, device)) is d
    td.copy_(ts)
    assert d.data_ptr() == ptr
    assert_same(d, td)


def test_copy_into_a_strided_view(device):
    tb = random_tensor((4, 6), F32)
    base = from_torch(tb, device)
    src = random_tensor((6, 2), F32)
    base.T[:, ::2].copy_(from_torch(src, device))
    tb.T[:, ::2].copy_(src)
    assert_same(base, tb)


def test_copy_refuses_a_shape_that_does_not_broadcast(device):
    d = from_torch(random_tensor((3, 4), F32), device)
    with pytest.raises(RuntimeError, match=r"3, 4|\(5\)"):
        d.copy_(from_torch(random_tensor((5,), F32), device))


@pytest.mark.parametrize("value", [2.5, -1, True])
@pytest.mark.parametrize("dtype", [F32, I32, F16])
def test_fill_and_zero(device, value, dtype):
    t = random_tensor((3, 4), dtype)
    a = from_torch(t, device)
    a[1:].fill_(value)
    t[1:].fill_(value)
    assert_same(a, t)
    a.T[::2].zero_()
    t.T[::2].zero_()
    assert_same(a, t)


SETITEMS = [
    ("int-scalar", lambda: 1, lambda: 4.5),
    ("slice-scalar", lambda: (slice(1, 3),), lambda: -2.0),
    ("step-tensor", lambda: (slice(None, None, 2), slice(1, None, 2)), lambda: random_tensor((2, 1, 4), F32)),
    ("broadcast-row", lambda: (Ellipsis, 1), lambda: random_tensor((3,), F32)),
    ("none-ellipsis", lambda: (None, 0, Ellipsis, -1), lambda: random_tensor((1, 3), F32)),
    ("full", lambda: (Ellipsis,), lambda: random_tensor((4,), F64)),
]


@pytest.mark.parametrize("index,value", [(i, v) for _, i, v in SETITEMS], ids=[n for n, _, _ in SETITEMS])
def test_setitem_basic_index(device, index, value):
    t = random_tensor((3, 3, 4), F32)
    a = from_torch(t, device)
    idx, val = index(), value()
    t[idx] = val
    a[idx] = from_torch(val, device) if isinstance(val, torch.Tensor) else val
    assert_same(a, t)


@pytest.mark.parametrize("dtype", [F32, BF16, F16, F64, I64, BOOL])
def test_to_device_round_trip(device, dtype):
    t = random_tensor((3, 5), dtype)
    a = nd.from_torch(t.clone(), "cpu")
    there = a.to(device)
    assert there.device == nd.as_device(device) and there.dtype is a.dtype
    back = there.to("cpu")
    assert back.device == nd.as_device("cpu")
    assert torch.equal(back.native, t)
    assert torch.equal(there.T.to("cpu").native, t.T)  # a strided array moves too
    assert there.cpu().shape == (3, 5)
    if dtype != BF16:
        assert (there.numpy() == t.numpy()).all()
    assert there.tolist() == t.tolist()


def test_numpy_is_zero_copy_on_cpu_and_item():
    a = nd.from_torch(random_tensor((2, 3), F32))
    arr = a.numpy()
    arr[0, 0] = 11.0
    assert a[0, 0].item() == 11.0
    assert isinstance(a[1, 2].item(), float)
    with pytest.raises(RuntimeError, match="6 elements"):
        a.item()
    with pytest.raises(TypeError, match="bfloat16"):
        nd.from_torch(random_tensor((2,), BF16)).numpy()
