"""Views and layout (functions/views.py) against torch: reshape / view / permute / transpose / expand /
squeeze / unsqueeze / flatten / narrow / cat / stack / split / chunk (the case table: forward values and
gradients in float64, gradcheck and gradgradcheck), diagonal / unfold / unflatten / movedim /
as_strided (torch's geometry too), and in-place ops on views of non-contiguous bases (CopySlices)."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    I,
    assert_close,
    check_forward_and_gradients,
    check_gradcheck,
    check_gradgradcheck,
    params,
    to_genesis,
    values,
)

import genesis
import genesis_autograd as ag


def _cat(lib, a, b, c):
    return lib.cat([a, b, c], 1)


CASES = [
    ("reshape", lambda lib, a: a.reshape(4, 3), [I((3, 4))]),
    ("reshape-t", lambda lib, a: a.reshape(-1), [I((3, 4), layout="t")]),
    ("view", lambda lib, a: a.view(2, 6), [I((3, 4))]),
    ("permute", lambda lib, a: a.permute(2, 0, 1), [I((2, 3, 4))]),
    ("transpose", lambda lib, a: a.transpose(0, 2), [I((2, 3, 4))]),
    ("T-mT", lambda lib, a: a.T * 2 + a.mT, [I((3, 3))]),
    ("expand", lambda lib, a: a.expand(2, 3, 4), [I((3, 1))]),
    ("expand-t", lambda lib, a: a.expand(2, 4, 3), [I((4, 3), layout="t")]),
    ("squeeze", lambda lib, a: a.squeeze(), [I((3, 1, 4, 1))]),
    ("squeeze-dim", lambda lib, a: a.squeeze(1), [I((3, 1, 4))]),
    ("unsqueeze", lambda lib, a: a.unsqueeze(1), [I((3, 4), layout="t")]),
    ("flatten", lambda lib, a: a.flatten(1), [I((2, 3, 4))]),
    ("narrow", lambda lib, a: a.narrow(1, 1, 2), [I((3, 4))]),
    ("narrow-t", lambda lib, a: a.narrow(0, 1, 2), [I((3, 4), layout="t")]),
    ("cat", _cat, [I((2, 3), False), I((2, 2)), I((2, 4), layout="t")]),
    ("cat-dim0", lambda lib, a, b: lib.cat([a, b]), [I((2, 3)), I((1, 3))]),
    ("stack", lambda lib, a, b: lib.stack([a, b], 1), [I((3, 4), False), I((3, 4))]),
    ("stack-neg", lambda lib, a, b: lib.stack([a, b], -1), [I((3, 4)), I((3, 4), layout="t")]),
    ("split", lambda lib, a: a.split(2, 1), [I((3, 5))]),
    ("split-sizes", lambda lib, a: a.split([1, 3], 0), [I((4, 3))]),
    ("chunk", lambda lib, a: a.chunk(3, -1), [I((2, 7))]),
]
PARAMS = params(CASES)


@pytest.mark.parametrize("case,device", PARAMS)
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


# ---------------------------------------------------------------- diagonal, unfold, movedim, as_strided

# (id, fn applied to a torch tensor and to a genesis Tensor alike, input shape)
VIEWS = [
    ("diagonal", lambda x: x.diagonal(), (4, 5)),
    ("diagonal-offset", lambda x: x.diagonal(2, 1, 2), (3, 4, 6)),
    ("diagonal-neg", lambda x: x.diagonal(-1, -1, 0), (4, 3, 5)),
    ("diagonal-of-t", lambda x: x.t().diagonal(1), (5, 4)),
    ("unfold-overlap", lambda x: x.unfold(1, 3, 1), (3, 7)),
    ("unfold-overlap-step", lambda x: x.unfold(0, 4, 2), (9, 2)),
    ("unfold-few-windows", lambda x: x.unfold(1, 5, 1), (2, 6)),
    ("unfold-gaps", lambda x: x.unfold(-1, 2, 3), (3, 8)),
    ("unfold-of-t", lambda x: x.t().unfold(1, 3, 2), (7, 3)),
    ("unflatten", lambda x: x.unflatten(1, (2, -1)), (3, 6)),
    ("movedim", lambda x: x.movedim((0, 2), (2, 0)), (2, 3, 4)),
    ("moveaxis", lambda x: x.moveaxis(0, -1), (2, 3, 4)),
    ("swapaxes", lambda x: x.swapaxes(0, 1), (3, 4)),
    ("swapdims", lambda x: x.swapdims(2, 0), (2, 3, 4)),
    ("mT", lambda x: x.mT, (2, 3, 4)),
    ("as_strided", lambda x: x.as_strided((3, 2), (1, 4), 1), (4, 5)),
    ("as_strided-overlap", lambda x: x.as_strided((4, 3), (2, 1)), (3, 4)),
    ("as_strided-of-t", lambda x: x.t().as_strided((2, 3), (2, 3), 2), (3, 4)),
    ("chain", lambda x: x.unfold(1, 3, 1).diagonal(0, 0, 2) * 2, (3, 6)),
]


@pytest.mark.parametrize("fn,shape", [(f, s) for _, f, s in VIEWS], ids=[n for n, _, _ in VIEWS])
def test_view_forward_and_gradient_match_torch(device, fn, shape):
    xt = values(shape).requires_grad_()
    yt = fn(xt)
    gt = values(tuple(yt.shape))
    yt.backward(gt)
    x = to_genesis(xt, device, requires_grad=True)
    y = fn(x)
    assert_close(y, yt)
    if yt._base is not None:  # a view: torch's geometry
        assert (y.stride(), y.storage_offset()) == (yt.stride(), yt.storage_offset())
    y.backward(to_genesis(gt, device))
    assert_close(x.grad, xt.grad)


def test_overlapping_windows_accumulate(device):
    x = genesis.ones(6, dtype=genesis.float64, device=device, requires_grad=True)
    x.unfold(0, 3, 1).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 3.0, 2.0, 1.0]  # how many windows hold each element


CHECKED = {
    "diagonal-offset",
    "diagonal-of-t",
    "unfold-overlap",
    "unfold-few-windows",
    "unfold-of-t",
    "as_strided-overlap",
    "as_strided-of-t",
    "chain",
}


@pytest.mark.parametrize(
    "fn,shape", [(f, s) for n, f, s in VIEWS if n in CHECKED], ids=[n for n, _, _ in VIEWS if n in CHECKED]
)
def test_gradcheck_and_gradgradcheck(device, fn, shape):
    x = to_genesis(values(shape), device, requires_grad=True)
    assert ag.gradcheck(fn, [x])
    assert ag.gradgradcheck(lambda t: fn(t) ** 2, [x])


def test_views_share_memory_and_version(device):
    x = genesis.zeros(4, 5, dtype=genesis.float64, device=device)
    for v in (
        x.diagonal(1),
        x.unfold(1, 2, 2),
        x.unflatten(1, (5, 1)),
        x.movedim(0, 1),
        x.swapaxes(0, 1),
        x.as_strided((2, 2), (5, 1), 6),
    ):
        before = x._version_counter
        v.add_(1.0)
        assert x._version_counter == v._version_counter == before + 1
    expect = torch.zeros(4, 5, dtype=torch.float64)
    for v in (
        expect.diagonal(1),
        expect.unfold(1, 2, 2),
        expect.unflatten(1, (5, 1)),
        expect.movedim(0, 1),
        expect.swapaxes(0, 1),
        expect.as_strided((2, 2), (5, 1), 6),
    ):
        v.add_(1.0)
    assert_close(x, expect)


# ---------------------------------------------------------------- in-place on views
def _transposed_slice(x, y):
    a = x.t() * 1  # not contiguous (on cpu: torch keeps the transposed layout)
    b = a.t()[1:]
    b.mul_(2)
    return a


def _augmented_row(x, y):
    a = x * 1
    v = a.t()
    v[0] += 1
    v[1] *= y[0]
    return a.sin()


def _stale_view(x, y):
    a = x.t() * 1
    v = a.t()  # made before the in-place below: it must see the new history
    a[1:3].mul_(y[:2])
    return v * 3


def _diagonal_write(x, y):
    a = x[:, :4].t() * 1
    a.diagonal().copy_(y[0])
    return a


def _unfold_write(x, y):
    a = x.t() * 1
    a.unfold(1, 2, 2).exp_()
    return a


def _two_views(x, y):
    a = x.t() * 1
    a[:, 0].mul_(y.flatten()[:6])
    a.T[2].add_(a[:, 3].detach())
    return a * 2 + a[:, 1:2]


def _as_strided_write(x, y):
    a = x * 1  # as_strided addresses memory: a base laid out alike on every device
    a.t().as_strided((2, 2), (1, 3), a.storage_offset() + 1).div_(y[1, :2])
    return a.t()


INPLACE = [
    ("transposed-slice", _transposed_slice),
    ("augmented-row", _augmented_row),
    ("stale-view", _stale_view),
    ("diagonal-write", _diagonal_write),
    ("unfold-write", _unfold_write),
    ("two-views", _two_views),
    ("as_strided-write", _as_strided_write),
]


@pytest.mark.parametrize("fn", [f for _, f in INPLACE], ids=[n for n, _ in INPLACE])
def test_inplace_on_views_of_a_non_contiguous_base(device, fn):
    xt, yt = values((4, 6)).requires_grad_(), values((4, 4), "pos").requires_grad_()
    out_t = fn(xt, yt)
    gt = values(tuple(out_t.shape))
    out_t.backward(gt)
    x, y = to_genesis(xt, device, requires_grad=True), to_genesis(yt, device, requires_grad=True)
    out = fn(x, y)
    assert_close(out, out_t)
    out.backward(to_genesis(gt, device))
    assert_close(x.grad, xt.grad)
    if yt.grad is None:
        assert y.grad is None
    else:
        assert_close(y.grad, yt.grad)


def test_inplace_writes_through_views_of_a_non_contiguous_root(device):
    """The base itself is laid out transposed (a root, not a view), on every device."""
    yt, zt = values((4,)).requires_grad_(), values((6,)).requires_grad_()

    def f(a, y, z):
        a[1].copy_(z * 2)
        a[:, 2].mul_(y)
        a.diagonal(1).add_(z[:4].exp())
        return a * 3

    out_t = f(torch.zeros(4, 6, dtype=torch.float64), yt, zt)
    gt = values((4, 6))
    out_t.backward(gt)
    a = genesis.Tensor(genesis.zeros(6, 4, dtype=genesis.float64, device=device).data.T)
    assert not a.is_contiguous() and a._base is None
    y, z = to_genesis(yt, device, requires_grad=True), to_genesis(zt, device, requires_grad=True)
    out = f(a, y, z)
    assert_close(out, out_t)
    assert a.requires_grad and not a.is_leaf  # the writes put the base into the graph
    out.backward(to_genesis(gt, device))
    assert_close(y.grad, yt.grad)
    assert_close(z.grad, zt.grad)


def test_gradcheck_through_an_inplace_write_on_a_transposed_base(device):
    y = to_genesis(values((3,)), device, requires_grad=True)

    def f(x, y):
        a = x.t() * 1
        a[1].mul_(y)
        a.diagonal().exp_()
        return a

    x = to_genesis(values((3, 4)), device, requires_grad=True)
    assert ag.gradcheck(f, [x, y])


@pytest.mark.parametrize(
    "op",
    [
        lambda v: v.mul_(2.0),
        lambda v: v.__setitem__(0, 1.0),
        lambda v: v.uniform_(),
        lambda v: v.zero_(),
        lambda v: v.diagonal().add_(1.0),
    ],
    ids=["mul_", "setitem", "uniform_", "zero_", "diagonal-add_"],
)
def test_inplace_on_a_view_of_a_leaf_raises_before_writing(device, op):
    xt = values((3, 3)).requires_grad_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        op(xt.t())
    x = to_genesis(xt, device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        op(x.t())
    assert_close(x, xt)  # nothing was written
    with genesis.no_grad():
        op(x.t())  # allowed without recording, as in torch
    assert x.is_leaf and x.requires_grad


def test_tensor_bad_view_arguments(device):
    x = genesis.zeros(3, 4, device=device)
    with pytest.raises(IndexError):
        x.diagonal(0, 0, 2)
    with pytest.raises(RuntimeError, match="maximum size"):
        x.unfold(0, 4, 1)
    with pytest.raises(RuntimeError, match="don't multiply up"):
        x.unflatten(1, (3, 2))
    with pytest.raises(RuntimeError, match="mT is only supported"):
        _ = genesis.zeros(3, device=device).mT


@pytest.mark.parametrize("second", [(3, 2), (1, 3)], ids=["clash", "broadcastable"])
def test_stack_error_names_both_shapes(device, second):
    a = genesis.zeros(2, 3, device=device)
    b = genesis.zeros(*second, device=device)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size.*\[2, 3\].*\[\d, \d\]"):
        genesis.stack([a, b])


def test_cat_mismatch_raises(device):
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 1"):
        genesis.cat([genesis.zeros(2, 3, device=device), genesis.zeros(3, 3, device=device)], 1)


def test_split_is_one_node_whose_backward_fills_unused_pieces_and_follows_in_place_writes(device: str) -> None:
    """split / chunk make one SplitBackward0 node for all pieces (torch's): pieces without a gradient
    count as zeros, a piece written in place reaches the base's history, and the backward is
    differentiable (create_graph)."""
    import numpy as np

    w = np.random.default_rng().standard_normal((6, 4)).astype(np.float32)

    def in_place(lib, t):
        a = t * 1.5
        x, y, z = a.split(2) if lib is genesis else (a[0:2], a[2:4], a[4:6])  # torch refuses in-place on split's
        y.mul_(3)
        return a.sin().sum() + (x * z).sum() + y.sum()

    def one_piece(lib, t):
        return t.split([1, 2, 3])[1].pow(2).sum()

    def second_order(lib, t):
        a, b = t.chunk(2)
        (g,) = lib.autograd.grad((a * b).pow(2).sum(), t, create_graph=True)
        return g.pow(2).sum()

    for fn in (in_place, one_piece, second_order):
        ours = genesis.tensor(w, device=device, requires_grad=True)
        theirs = torch.tensor(w, requires_grad=True)
        fn(genesis, ours).backward()
        fn(torch, theirs).backward()
        torch.testing.assert_close(torch.from_numpy(ours.grad.cpu().numpy()), theirs.grad, rtol=1e-5, atol=1e-5)
    pieces = genesis.tensor(w, device=device, requires_grad=True).split(2)
    assert {p.grad_fn for p in pieces} == {pieces[0].grad_fn} and pieces[0].grad_fn.name() == "SplitBackward0"
