"""Views share storage: shape, strides and storage_offset equal torch's, and writes reach the base.
Every view op (reshape / view / permute / transpose / expand / squeeze / unsqueeze / flatten / unflatten /
narrow / diagonal / unfold / movedim / as_strided / basic indexing) and torch's errors for bad arguments."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, to_torch

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
    for fn in (
        lambda x: x[::2],
        lambda x: x.unsqueeze(1),
        lambda x: x.reshape(5, 2, 2),
        lambda x: x.narrow(1, 1, 2),
        lambda x: x.flatten(0, 0),
    ):
        tv, v = fn(tb), fn(base)
        assert (v.shape, v.stride(), v.storage_offset()) == (tuple(tv.shape), tv.stride(), tv.storage_offset())
        assert_same(v, tv)


@pytest.mark.parametrize(
    "fn",
    [lambda x: x.T.reshape(12), lambda x: x[:, :3].reshape(9), lambda x: x.T.flatten()],
    ids=["t", "step", "flatten"],
)
def test_reshape_copies_where_a_view_is_impossible(device, fn):
    tb = random_tensor((3, 4), F32)
    base = from_torch(tb, device)
    tv, v = fn(tb), fn(base)
    assert_same(v, tv)
    assert v.is_contiguous() and v.stride() == tv.stride()
    before = to_torch(base)
    v.fill_(7.0)
    assert_same(base, before)  # a copy: the base is untouched


@pytest.mark.parametrize("shape", [(1, 1), (1,), (1, 1, 1)])
def test_a_0d_array_reshaped_is_a_view(device, shape):
    """One element needs no copy to take any all-ones shape (a scalar loss's gradient, reshaped to its
    reduction's kept dims): the strides are torch's, and a write through the view reaches the base."""
    tb = torch.tensor(3.5)
    base = from_torch(tb, device)
    v = base.reshape(*shape)
    assert v.stride() == tb.reshape(*shape).stride()
    v.fill_(7.0)
    assert base.item() == 7.0


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


def _layout_base(layout: str, device):
    """A (4, 5, 6) base as a torch tensor and an NDArray of the same values and layout."""
    if layout == "contiguous":
        t = random_tensor((4, 5, 6), F32)
        return t, from_torch(t, device)
    full = random_tensor((6, 7, 4), F32)  # permuted and sliced: strides (1, 4, 28), offset 4 + 28
    return full.permute(2, 1, 0)[:, 1:6], from_torch(full, device).permute(2, 1, 0)[:, 1:6]


DERIVED_VIEWS = [
    ("diagonal", lambda x: x.diagonal()),
    ("diagonal-offset", lambda x: x.diagonal(2)),
    ("diagonal-neg-offset", lambda x: x.diagonal(-1, 0, 2)),
    ("diagonal-dims", lambda x: x.diagonal(1, 2, 0)),
    ("diagonal-neg-dims", lambda x: x.diagonal(0, -1, -2)),
    ("diagonal-off-the-end", lambda x: x.diagonal(9)),
    ("diagonal-of-slice", lambda x: x[1:, ::2].diagonal(-1, 1, 0)),
    ("unfold", lambda x: x.unfold(2, 2, 2)),
    ("unfold-gaps", lambda x: x.unfold(1, 2, 3)),
    ("unfold-neg-dim", lambda x: x.unfold(-3, 3, 4)),
    ("unfold-whole", lambda x: x.unfold(0, 4, 1)),
    ("unflatten", lambda x: x.unflatten(2, (2, 3))),
    ("unflatten-infer", lambda x: x.unflatten(-1, (3, -1))),
    ("unflatten-ones", lambda x: x.unflatten(0, (1, 4, 1))),
    ("movedim", lambda x: x.movedim(0, 2)),
    ("movedim-many", lambda x: x.movedim((0, -1), (1, 0))),
    ("moveaxis", lambda x: x.moveaxis(-1, 0)),
    ("swapaxes", lambda x: x.swapaxes(0, 2)),
    ("swapdims", lambda x: x.swapdims(-1, 1)),
    ("mT", lambda x: x.mT),
    ("T", lambda x: x[1].T),
    ("as_strided", lambda x: x.as_strided((3, 4), (2, 7), x.storage_offset() + 1)),
    ("chain", lambda x: x.swapaxes(0, 1).diagonal(1, 1, 2).unfold(0, 2, 2)),
]


@pytest.mark.parametrize("layout", ["contiguous", "permuted"])
@pytest.mark.parametrize("fn", [f for _, f in DERIVED_VIEWS], ids=[n for n, _ in DERIVED_VIEWS])
def test_derived_view_geometry_and_write_through(device, fn, layout):
    tb, base = _layout_base(layout, device)
    tv, v = fn(tb), fn(base)
    assert v.shape == tuple(tv.shape)
    assert v.stride() == tv.stride()
    assert v.storage_offset() == tv.storage_offset()
    if tv.numel():  # torch reports 0 as the data_ptr of an empty tensor
        assert v.data_ptr() - base.data_ptr() == tv.data_ptr() - tb.data_ptr()
    assert v.is_contiguous() == tv.is_contiguous()
    assert_same(v, tv)
    if tv.numel():
        src = random_tensor(tuple(tv.shape), F32)
        tv.copy_(src)
        v.copy_(from_torch(src, device))
        assert_same(base, tb)  # the write went through the view into the base


def test_overlapping_unfold_windows_share_memory(device):
    tb = random_tensor((7,), F32)
    base = from_torch(tb, device)
    tv, v = tb.unfold(0, 3, 1), base.unfold(0, 3, 1)
    assert (v.shape, v.stride(), v.storage_offset()) == (tuple(tv.shape), tv.stride(), tv.storage_offset())
    assert_same(v, tv)
    base[3] = 100.0  # one element of the base is in three windows
    tb[3] = 100.0
    assert_same(v, tv)
    got = to_torch(v)
    assert (got == 100.0).sum() == 3


@pytest.mark.parametrize("size", [0, 1])
def test_unfold_of_a_0d_array(device, size):
    t = torch.tensor(2.5)
    a = from_torch(t, device)
    tv, v = t.unfold(0, size, 1), a.unfold(0, size, 1)
    assert (v.shape, v.stride(), v.storage_offset()) == (tuple(tv.shape), tv.stride(), tv.storage_offset())
    assert_same(v, tv)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 1 but size is 2"):
        a.unfold(0, 2, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.unfold(1, 1, 1)


def test_movedim_and_mT_of_small_arrays(device):
    t0 = torch.tensor(1.5)
    a0 = from_torch(t0, device)
    assert a0.movedim(0, 0).shape == () and a0.mT.shape == ()
    a1 = from_torch(random_tensor((3,), F32), device)
    with pytest.raises(RuntimeError, match="mT is only supported on matrices"):
        _ = a1.mT
    with pytest.raises(RuntimeError, match="mT is only supported on matrices"):
        _ = torch.zeros(3).mT


# (call, expected error type, pattern): each checked on torch too, so the class is torch's.
BAD_VIEWS = [
    (lambda x: x.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical"),
    (lambda x: x.diagonal(0, 0, 3), IndexError, "Dimension out of range"),
    (lambda x: x.diagonal(0, -4, 1), IndexError, "Dimension out of range"),
    (lambda x: x.unfold(3, 2, 1), IndexError, "Dimension out of range"),
    (lambda x: x.unfold(1, 6, 1), RuntimeError, "maximum size for tensor at dimension 1 is 5 but size is 6"),
    (lambda x: x.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda x: x.unfold(1, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    (lambda x: x.unflatten(1, (2, 2)), RuntimeError, r"Provided sizes \[2, 2\] don't multiply up to the size of dim 1"),
    (lambda x: x.unflatten(1, ()), RuntimeError, "sizes must be non-empty"),
    (lambda x: x.unflatten(1, (-1, 3)), RuntimeError, "don't multiply up"),
    (lambda x: x.unflatten(1, (-1, -1)), RuntimeError, "only one dimension can be inferred"),
    (lambda x: x.unflatten(3, (1, -1)), IndexError, "Dimension out of range"),
    (lambda x: x.movedim((0, 1), (1,)), RuntimeError, "should contain the same number of dims"),
    (lambda x: x.movedim((0, 0), (1, 2)), RuntimeError, "repeated dim in `source`"),
    (lambda x: x.movedim((0, 1), (2, -1)), RuntimeError, "repeated dim in `destination`"),
    (lambda x: x.movedim(3, 0), IndexError, "Dimension out of range"),
    (lambda x: x.swapaxes(0, 3), IndexError, "Dimension out of range"),
]


@pytest.mark.parametrize("call,error,pattern", BAD_VIEWS, ids=[str(i) for i in range(len(BAD_VIEWS))])
def test_bad_view_arguments_raise_torch_errors(device, call, error, pattern):
    t = random_tensor((4, 5, 6), F32)
    with pytest.raises(error):
        call(t)
    with pytest.raises(error, match=pattern):
        call(from_torch(t, device))
