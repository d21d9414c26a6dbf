"""Memory ops against torch: contiguous, astype / to(dtype), copy_ (broadcasting, casting, into views),
fill_ / zero_, transfers between devices, numpy / item / tolist, and DLPack exchange with torch."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

import genesis_ndarray as nd

F32, F16, BF16, F64, I32, I64, U8, BOOL = (
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
)


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


CASTS = [
    (F32, F64),
    (F64, F32),
    (F32, F16),
    (F32, BF16),
    (BF16, F32),
    (F32, I32),
    (F64, I64),
    (I32, F32),
    (F32, BOOL),
    (BOOL, F32),
    (I64, U8),
    (F16, I32),
    (I32, BOOL),
    (I64, I32),
]


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


@pytest.mark.parametrize(
    "dst_shape,src_shape,dst_dtype,src_dtype",
    [
        ((3, 4), (3, 4), F32, F32),
        ((3, 4), (4,), F32, F64),
        ((2, 3, 4), (3, 1), F64, F32),
        ((3, 4), (1, 4), F16, F32),
        ((3, 4), (3, 4), I32, I64),
    ],
)
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


@pytest.mark.parametrize("dtype", [F32, BF16, F16, F64, I64, BOOL])
def test_to_device_round_trip(device, dtype):
    t = random_tensor((3, 5), dtype)
    a = nd.from_torch(t.clone(), "cpu")
    there = a.to(device)
    assert there.device == nd.resolve_device(device) and there.dtype is a.dtype
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


# ------------------------------------------------------------------ DLPack
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16, torch.bool])
def test_dlpack_round_trip(device, dtype):
    xt = random_tensor((3, 4), dtype=dtype).to(device)
    a = nd.from_dlpack(xt)
    assert a.device == nd.resolve_device(device) and a.shape == (3, 4) and a.dtype.torch == dtype
    assert a.data_ptr() == xt.data_ptr()  # zero copy
    back = torch.from_dlpack(a)
    assert back.data_ptr() == xt.data_ptr()
    torch.testing.assert_close(back.cpu(), xt.cpu())


def test_dlpack_arrays_share_their_device_object(device):
    # Device equality falls back to a Python __eq__ when the objects differ; the optimizers compare the
    # devices of hundreds of tensors per step, so an imported array must carry the canonical object.
    a, b = nd.from_dlpack(random_tensor((3,)).to(device)), nd.from_dlpack(random_tensor((2,)).to(device))
    assert a.device is b.device is nd.resolve_device(device)
    assert nd.zeros(a.shape, device=a.device).device is a.device and (a + a).device is a.device


def test_dlpack_shares_memory_and_strides(device):
    xt = torch.arange(12.0).reshape(3, 4).to(device)
    view = xt[:, 1::2]
    a = nd.from_dlpack(view)
    assert a.strides == view.stride()
    a.fill_(-1.0)
    assert (xt[:, 1::2] == -1).all() and xt[0, 0] == 0
    b = from_torch(torch.arange(6.0).reshape(2, 3), device).T
    bt = torch.from_dlpack(b)
    assert bt.stride() == b.strides and bt.device.type == device
    torch.testing.assert_close(bt.cpu(), torch.arange(6.0).reshape(2, 3).T)


def test_dlpack_keeps_producer_alive(device):
    a = nd.from_dlpack(torch.arange(5, device=device) * 2)  # the torch tensor has no other reference
    assert a.tolist() == [0, 2, 4, 6, 8]
    assert a.__dlpack_device__()[0] == (1 if device == "cpu" else 2)
