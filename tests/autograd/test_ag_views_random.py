"""Gradients of diagonal / unfold / unflatten / movedim / as_strided, in-place ops on views of
non-contiguous bases, and the random API at the Tensor level, against torch on every device."""

from __future__ import annotations

import math

import pytest
import torch
from ag_helpers import assert_close, to_genesis, values

import genesis
import genesis_autograd as ag

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


CHECKED = {"diagonal-offset", "diagonal-of-t", "unfold-overlap", "unfold-few-windows", "unfold-of-t",
           "as_strided-overlap", "as_strided-of-t", "chain"}


@pytest.mark.parametrize("fn,shape", [(f, s) for n, f, s in VIEWS if n in CHECKED],
                         ids=[n for n, _, _ in VIEWS if n in CHECKED])
def test_gradcheck_and_gradgradcheck(device, fn, shape):
    x = to_genesis(values(shape), device, requires_grad=True)
    assert ag.gradcheck(fn, [x])
    assert ag.gradgradcheck(lambda t: fn(t) ** 2, [x])


def test_views_share_memory_and_version(device):
    x = genesis.zeros(4, 5, dtype=genesis.float64, device=device)
    for v in (x.diagonal(1), x.unfold(1, 2, 2), x.unflatten(1, (5, 1)), x.movedim(0, 1), x.swapaxes(0, 1),
              x.as_strided((2, 2), (5, 1), 6)):
        before = x._version_counter
        v.add_(1.0)
        assert x._version_counter == v._version_counter == before + 1
    expect = torch.zeros(4, 5, dtype=torch.float64)
    for v in (expect.diagonal(1), expect.unfold(1, 2, 2), expect.unflatten(1, (5, 1)), expect.movedim(0, 1),
              expect.swapaxes(0, 1), expect.as_strided((2, 2), (5, 1), 6)):
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


INPLACE = [("transposed-slice", _transposed_slice), ("augmented-row", _augmented_row),
           ("stale-view", _stale_view), ("diagonal-write", _diagonal_write), ("unfold-write", _unfold_write),
           ("two-views", _two_views), ("as_strided-write", _as_strided_write)]


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


@pytest.mark.parametrize("op", [lambda v: v.mul_(2.0), lambda v: v.__setitem__(0, 1.0), lambda v: v.uniform_(),
                                lambda v: v.zero_(), lambda v: v.diagonal().add_(1.0)],
                         ids=["mul_", "setitem", "uniform_", "zero_", "diagonal-add_"])
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


# ---------------------------------------------------------------- random, Tensor level
def test_random_inplace_on_a_leaf_that_requires_grad(device):
    x = genesis.zeros(3, 4, device=device, requires_grad=True)
    for op in (lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.bernoulli_(0.5),
               lambda t: t.exponential_(), lambda t: t.random_(3)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            op(x)
        before = x._version_counter
        with genesis.no_grad():
            op(x)  # how nn.init fills parameters
        assert x._version_counter == before + 1
        assert x.is_leaf and x.requires_grad and x.grad_fn is None


def test_random_inplace_on_a_non_leaf_gives_zero_gradient_where_it_wrote(device):
    xt = values((3, 4)).requires_grad_()
    yt = xt * 2
    yt[1:].uniform_()
    gt = values((3, 4))
    (yt * gt).sum().backward()
    x = to_genesis(xt, device, requires_grad=True)
    y = x * 2
    version = y._version_counter
    y[1:].uniform_(0.25, 0.5)
    assert y._version_counter == version + 1
    got = torch.from_numpy(y.detach().cpu().numpy())
    assert ((got[1:] >= 0.25) & (got[1:] < 0.5)).all()
    (y * to_genesis(gt, device)).sum().backward()
    assert_close(x.grad, xt.grad)  # 2 * g in row 0, zero in the rows the draw replaced


def test_set_rng_state_replays_tensor_draws(device):
    genesis.manual_seed(2024)
    assert genesis.initial_seed() == 2024
    state = genesis.get_rng_state(device)
    assert isinstance(state, genesis.Tensor) and state.dtype == genesis.uint8
    draws = [genesis.rand(5, device=device), genesis.empty(4, device=device).normal_(),
             genesis.randperm(9, device=device), genesis.bernoulli(genesis.full((6,), 0.5, device=device)),
             genesis.empty(3, 3, device=device).random_(-4, 4)]
    genesis.set_rng_state(state, device)
    again = [genesis.rand(5, device=device), genesis.empty(4, device=device).normal_(),
             genesis.randperm(9, device=device), genesis.bernoulli(genesis.full((6,), 0.5, device=device)),
             genesis.empty(3, 3, device=device).random_(-4, 4)]
    for a, b in zip(draws, again):
        assert a.tolist() == b.tolist()
    genesis.manual_seed(2024)
    assert genesis.rand(5, device=device).tolist() == draws[0].tolist()
    if device == "cuda":  # torch.cuda's names: the same generator
        assert genesis.cuda.get_rng_state().tolist() == genesis.get_rng_state("cuda").tolist()
        genesis.cuda.set_rng_state(state)
        assert genesis.rand(5, device=device).tolist() == draws[0].tolist()


def test_seed_returns_a_fresh_seed_that_replays(device):
    s = genesis.seed()
    assert genesis.initial_seed() == s
    first = genesis.randn(8, device=device).tolist()
    genesis.manual_seed(s)
    assert genesis.randn(8, device=device).tolist() == first
    assert genesis.seed() != s  # 64 random bits: equal with probability 2**-64


def test_randperm_factory(device):
    genesis.seed()
    p = genesis.randperm(257, device=device)
    assert p.dtype == genesis.int64 and p.device.type == device and not p.requires_grad
    assert sorted(p.tolist()) == list(range(257))
    assert genesis.randperm(5, dtype=genesis.float32, device=device).dtype == genesis.float32


def test_bernoulli_and_normal_pass_zero_gradient_like_torch(device):
    genesis.seed()
    pt = torch.rand(5, dtype=torch.float64).requires_grad_()
    torch.bernoulli(pt).sum().backward()
    p = to_genesis(pt, device, requires_grad=True)
    b = genesis.bernoulli(p)
    assert b.requires_grad and set(b.tolist()) <= {0.0, 1.0}
    b.sum().backward()
    assert_close(p.grad, pt.grad)  # zeros
    mt, st = values((3, 1)).requires_grad_(), values((4,), "pos").requires_grad_()
    torch.normal(mt, st).sum().backward()
    m, s = to_genesis(mt, device, requires_grad=True), to_genesis(st, device, requires_grad=True)
    n = genesis.normal(m, s)
    assert tuple(n.shape) == (3, 4) and n.dtype == genesis.float64
    n.sum().backward()
    assert_close(m.grad, mt.grad)
    assert_close(s.grad, st.grad)


def test_normal_with_tensor_mean_and_std_statistics(device):
    seed = genesis.seed()
    n = 100_000
    mean = genesis.tensor([-3.0, 0.0, 5.0], dtype=genesis.float64, device=device).reshape(3, 1).expand(3, n)
    std = genesis.tensor([0.5, 1.0, 2.0], dtype=genesis.float64, device=device).reshape(3, 1)
    got = torch.from_numpy(genesis.normal(mean, std).cpu().numpy())
    for row, (mu, sigma) in enumerate([(-3.0, 0.5), (0.0, 1.0), (5.0, 2.0)]):
        assert abs(got[row].mean().item() - mu) < 6 * sigma / math.sqrt(n), seed
        assert abs(got[row].std().item() - sigma) < 6 * sigma / math.sqrt(2 * n), seed
    with pytest.raises(RuntimeError):
        torch.normal(torch.zeros(3), -torch.ones(3))
    with pytest.raises(RuntimeError, match=r"std >= 0\.0"):
        genesis.normal(genesis.zeros(3, device=device), -genesis.ones(3, device=device))
    with pytest.raises(RuntimeError, match=r"std >= 0\.0"):
        genesis.normal(0.0, -1.0, (3,), device=device)


def test_tensor_bad_view_and_random_arguments(device):
    x = genesis.zeros(3, 4, device=device)
    with pytest.raises(IndexError):
        x.diagonal(0, 0, 2)
    with pytest.raises(RuntimeError, match="maximum size"):
        x.unfold(0, 4, 1)
    with pytest.raises(RuntimeError, match="don't multiply up"):
        x.unflatten(1, (3, 2))
    with pytest.raises(RuntimeError, match="mT is only supported"):
        _ = genesis.zeros(3, device=device).mT
    with pytest.raises(RuntimeError, match=r"\[from, to\)"):
        x.uniform_(1.0, 0.0)
    with pytest.raises(RuntimeError, match="bernoulli_ expects p"):
        x.bernoulli_(2.0)
