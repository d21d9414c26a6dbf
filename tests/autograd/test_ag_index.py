"""Index ops (functions/index.py): gradients of gather / scatter / scatter_add / index_select / index_add /
masked_fill / masked_select / take_along_dim (and their in-place forms) against torch in float64, on every
device; gradcheck / gradgradcheck of each; non-differentiable nonzero; version checks; and cuda tensors
indexed by cpu index tensors."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import assert_close, compare, index_tensor, to_genesis, values

import genesis
from device_support import requires_cuda
from genesis.autograd import gradcheck, gradgradcheck


def _index(shape, high):
    return torch.randint(0, high, shape)


def _unique_index(shape, dim, size):
    keys = torch.rand(*shape[:dim], size, *shape[dim + 1 :])
    return keys.argsort(dim=dim).narrow(dim, 0, shape[dim])


def _grad(x):
    return x.detach().requires_grad_()


# ------------------------------------------------------------------ gather / take_along_dim
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_grad_repeated_indices_accumulate(device, dim):
    x = _grad(values((4, 5, 6)))
    shape = [4, 5, 6]
    shape[dim] = 9
    index = _index(tuple(shape), x.shape[dim])
    compare(device, lambda x, i: x.gather(dim, i), [x], [index])


def test_gather_grad_transposed_input(device):
    x = _grad(values((5, 4)))
    index = _index((3, 6), 4)
    compare(device, lambda x, i: x.t().gather(0, i.t()), [x], [index])


@pytest.mark.parametrize("dim", [None, 2, -2])
def test_take_along_dim_grad_broadcast(device, dim):
    x = _grad(values((1, 4, 5)))  # broadcast against the index over dim 0 (and dim 1 for dim=2)
    index = {None: _index((8,), 20), 2: _index((3, 1, 7), 5), -2: _index((3, 6, 5), 4)}[dim]
    compare(device, lambda x, i: x.take_along_dim(i, dim), [x], [index])


# ------------------------------------------------------------------ scatter / scatter_add
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("needs", ["both", "self", "src"])
def test_scatter_grads(device, dim, needs):
    x, src = values((4, 6)), values((3, 4))
    index = _unique_index((3, 4), dim % 2, x.shape[dim])
    x.requires_grad_(needs in ("both", "self"))
    src.requires_grad_(needs in ("both", "src"))
    compare(device, lambda x, s, i: x.scatter(dim, i, s) * 1.5, [x, src], [index])


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_scatter_src_larger_than_index_grad(device, op):
    # Only src's leading block (index's shape) is read; the rest gets zero gradient. torch's own
    # backward refuses this case (gradient of index's shape), so torch runs on the block itself.
    x, src = values((4, 6)), _grad(values((4, 5)))
    index = _unique_index((3, 4), 1, 6)
    compare(
        device,
        lambda x, s, i: getattr(x, op)(1, i, s[:3, :4]),
        [x, src],
        [index],
        genesis_fn=lambda x, s, i: getattr(x, op)(1, i, s),
    )


def test_scatter_scalar_grad(device):
    x = _grad(values((4, 6)))
    index = _unique_index((4, 3), 1, 6)
    compare(device, lambda x, i: x.scatter(1, i, 2.0), [x], [index])


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("needs", ["both", "src"])
def test_scatter_add_grads_repeated_indices(device, dim, needs):
    x, src = values((3, 5)), values((3, 5))
    index = _index((3, 5), x.shape[dim])
    x.requires_grad_(needs == "both")
    src.requires_grad_(True)
    compare(device, lambda x, s, i: x.scatter_add(dim, i, s), [x, src], [index])


# ------------------------------------------------------------------ index_select / index_add
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_grad_repeated_indices_accumulate(device, dim):
    x = _grad(values((4, 5, 3)))
    index = torch.tensor([2, 0, 2, 2, 1])
    compare(device, lambda x, i: x.index_select(dim, i), [x], [index])


def test_index_select_grad_zero_d_index_and_zero_d_input(device):
    compare(device, lambda x, i: x.index_select(1, i), [_grad(values((3, 4)))], [torch.tensor(2)])
    compare(device, lambda x, i: x.index_select(0, i), [_grad(values(()))], [torch.tensor([0])])


@pytest.mark.parametrize("alpha", [1, -0.5])
@pytest.mark.parametrize("needs", ["both", "self", "source"])
def test_index_add_grads(device, alpha, needs):
    x, src = values((5, 3)), values((4, 3))
    x.requires_grad_(needs in ("both", "self"))
    src.requires_grad_(needs in ("both", "source"))
    index = torch.tensor([4, 1, 4, 0])
    compare(device, lambda x, s, i: x.index_add(0, i, s, alpha=alpha), [x, src], [index])


def test_index_add_grad_transposed_source(device):
    x, src = _grad(values((3, 5))), _grad(values((4, 3)))
    index = torch.tensor([4, 1, 4, 0])
    compare(device, lambda x, s, i: x.index_add(-1, i, s.t()), [x, src], [index])


# ------------------------------------------------------------------ masked_fill / masked_select
def test_masked_fill_grad(device):
    x = _grad(values((4, 5)))
    mask = torch.rand(4, 5) > 0.5
    compare(device, lambda x, m: x.masked_fill(m, 3.0), [x], [mask])


@pytest.mark.parametrize("needs", ["both", "value"])
def test_masked_fill_value_tensor_grad(device, needs):
    x, v = values((4, 5)), values(())
    x.requires_grad_(needs == "both")
    v.requires_grad_(True)
    mask = torch.rand(5) > 0.5  # broadcast over rows: each True column adds 4 slots to v's gradient
    mask[0] = True
    compare(device, lambda x, v, m: x.masked_fill(m, v), [x, v], [mask])


def test_masked_fill_grad_broadcast_self(device):
    x = _grad(values((5,)))
    mask = torch.rand(3, 5) > 0.5
    compare(device, lambda x, m: x.masked_fill(m, -1.0), [x], [mask])


def test_masked_select_grad_broadcast(device):
    x = _grad(values((4, 5)))
    compare(device, lambda x, m: x.masked_select(m), [x], [torch.rand(4, 5) > 0.5])
    compare(device, lambda x, m: x.masked_select(m), [x], [torch.rand(5) > 0.3])
    compare(device, lambda x, m: x.masked_select(m), [_grad(values((5,)))], [torch.rand(3, 5) > 0.3])


def test_masked_select_grad_zero_d_and_empty(device):
    compare(device, lambda x, m: x.masked_select(m), [_grad(values(()))], [torch.tensor(True)])
    compare(
        device,
        lambda x, m: (x.masked_select(m) * 2).sum(),
        [_grad(values((3, 2)))],
        [torch.zeros(3, 2, dtype=torch.bool)],
    )


# ------------------------------------------------------------------ nonzero
def test_nonzero_has_no_grad(device):
    x = genesis.randn(4, 5, dtype="float64", device=device, requires_grad=True)
    assert not x.nonzero().requires_grad
    assert all(not t.requires_grad for t in x.nonzero(as_tuple=True))
    xt = torch.tensor(x.detach().cpu().numpy())
    assert_close(x.nonzero(), xt.nonzero())


# ------------------------------------------------------------------ in-place forms
def _inplace_cases():
    return [
        ("scatter_", lambda y, s, i, m: y.scatter_(1, i, s[:, :2])),
        ("scatter__scalar", lambda y, s, i, m: y.scatter_(1, i, 0.5)),
        ("scatter_add_", lambda y, s, i, m: y.scatter_add_(1, i, s[:, :2])),
        ("index_add_", lambda y, s, i, m: y.index_add_(1, i[0], s[:, :2], alpha=2.0)),
        ("masked_fill_", lambda y, s, i, m: y.masked_fill_(m, 1.25)),
        ("masked_fill__tensor_value", lambda y, s, i, m: y.masked_fill_(m, s[0, 0])),
    ]


INPLACE = _inplace_cases()


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_grads(device, case):
    _, op = case
    x, src = _grad(values((3, 4))), _grad(values((3, 4)))
    index = _unique_index((3, 2), 1, 4)
    mask = torch.rand(3, 4) > 0.5

    def fn(x, s, i, m):
        y = x * 2  # a non-leaf: in-place is allowed
        out = op(y, s, i, m)
        assert out is y
        return y * y

    compare(device, fn, [x, src], [index, mask])


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_on_a_view_of_a_non_leaf(device, case):
    _, op = case
    x, src = _grad(values((2, 3, 4))), _grad(values((3, 4)))
    index = _unique_index((3, 2), 1, 4)
    mask = torch.rand(3, 4) > 0.5

    def fn(x, s, i, m):
        y = x * 1.5
        op(y[1], s, i, m)  # writes through the view into y
        return y

    compare(device, fn, [x, src], [index, mask])


@pytest.mark.parametrize("case", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_on_a_leaf_that_requires_grad_raises(device, case):
    _, op = case
    x = genesis.randn(3, 4, dtype="float64", device=device, requires_grad=True)
    src = genesis.randn(3, 4, dtype="float64", device=device)
    index = index_tensor(_unique_index((3, 2), 1, 4), device)
    mask = index_tensor(torch.rand(3, 4) > 0.5, device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        op(x, src, index, mask)
    with genesis.no_grad():  # allowed without grad recording
        op(x, src, index, mask)


def test_inplace_bumps_version_and_saved_input_check(device):
    x = genesis.randn(3, 4, dtype="float64", device=device, requires_grad=True)
    y = x * 1.0
    z = y * y  # saves y for backward
    before = y._version_counter
    y.masked_fill_(index_tensor(torch.rand(3, 4) > 0.5, device), 0.0)
    assert y._version_counter == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_modified_index_before_backward_raises(device):
    xt = _grad(values((3, 4)))
    it = torch.tensor([[0, 1], [2, 3], [1, 1]])
    yt = xt.gather(1, it)
    it.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        yt.sum().backward()
    x = to_genesis(xt, device, requires_grad=True)
    i = index_tensor(torch.tensor([[0, 1], [2, 3], [1, 1]]), device)
    y = x.gather(1, i)
    i.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_index_argument_must_be_a_tensor(device):
    x = genesis.randn(3, 4, device=device)
    with pytest.raises(TypeError, match="must be Tensor"):
        x.gather(1, [[0]])
    with pytest.raises(TypeError):
        torch.randn(3, 4).gather(1, [[0]])


# ------------------------------------------------------------------ gradcheck / gradgradcheck (float64)
def _gradcheck_cases():
    i_rep = torch.tensor([[0, 2, 2, 1], [3, 3, 0, 0], [1, 1, 1, 1]])  # repeats within rows
    i_uni = torch.tensor([[0, 2], [3, 1], [1, 0]])
    mask = torch.tensor([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
    return [
        ("gather", lambda x, s, v, d: x.gather(1, index_tensor(i_rep, d)), (0,)),
        ("gather_t", lambda x, s, v, d: x.t().gather(0, index_tensor(i_rep.t().contiguous(), d)), (0,)),
        ("scatter", lambda x, s, v, d: x.scatter(-1, index_tensor(i_uni, d), s[:, :2]), (0, 1)),
        ("scatter_add", lambda x, s, v, d: x.scatter_add(1, index_tensor(i_rep, d), s), (0, 1)),
        ("index_select", lambda x, s, v, d: x.index_select(1, index_tensor(torch.tensor([3, 0, 3]), d)), (0,)),
        (
            "index_add",
            lambda x, s, v, d: x.index_add(1, index_tensor(torch.tensor([3, 0, 3, 3]), d), s, alpha=0.5),
            (0, 1),
        ),
        ("masked_fill", lambda x, s, v, d: x.masked_fill(index_tensor(mask, d), v), (0, 2)),
        ("masked_select", lambda x, s, v, d: x.masked_select(index_tensor(mask, d)), (0,)),
        ("take_along_dim", lambda x, s, v, d: x.take_along_dim(index_tensor(i_rep, d), -1), (0,)),
        ("take_along_dim_flat", lambda x, s, v, d: x.take_along_dim(index_tensor(torch.tensor([11, 0, 11]), d)), (0,)),
    ]


GRADCHECK = _gradcheck_cases()


def _leaves(device, grad_positions):
    xs = [values((3, 4)), values((3, 4)), values(())]
    return [to_genesis(t, device, requires_grad=i in grad_positions) for i, t in enumerate(xs)]


@pytest.mark.parametrize("case", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_gradcheck(device, case):
    _, fn, grads = case
    leaves = _leaves(device, grads)
    assert gradcheck(lambda x, s, v: fn(x, s, v, device), leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("case", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_gradgradcheck(device, case):
    _, fn, grads = case
    leaves = _leaves(device, grads)
    # squared, so that the second derivative is not identically zero
    assert gradgradcheck(lambda x, s, v: fn(x, s, v, device) ** 2, leaves, eps=1e-6, atol=1e-5, rtol=1e-3)


def test_gradcheck_catches_a_wrong_scatter_rule(device):
    # With repeated indices scatter keeps one write per slot; torch's (and our) src gradient
    # gives every repeat the slot's gradient, which finite differences disagree with: this
    # shows that gradcheck here does look at the src gradient.
    x = to_genesis(values((3, 4)), device, requires_grad=True)
    s = to_genesis(values((3, 4)), device, requires_grad=True)
    i = index_tensor(torch.tensor([[0, 0], [1, 1], [2, 2]]), device)
    assert not gradcheck(lambda x, s: x.scatter(1, i, s[:, :2]), [x, s], raise_exception=False)


# ------------------------------------------------------------------ cuda tensors, cpu indices
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_tensor_indexed_by_cpu_index_tensors(device):
    xt = _grad(values((5, 4)))
    idx = torch.tensor([4, 0, 4, 2])
    mask = torch.tensor([True, False, True, True, False])
    x = to_genesis(xt, device, requires_grad=True)
    gi, gm = genesis.tensor(idx.numpy()), genesis.tensor(mask.numpy())  # on the cpu
    y = x[gi] * 2 + x[gm, 1:].sum()
    yt = xt[idx] * 2 + xt[mask, 1:].sum()
    assert_close(y, yt)
    g = values(tuple(yt.shape))
    y.backward(to_genesis(g, device))
    yt.backward(g)
    assert_close(x.grad, xt.grad)
    z = x.detach() * 1
    z[gi] = 0.0
    zt = xt.detach() * 1
    zt[idx] = 0.0
    assert_close(z, zt)
    z[gm] = to_genesis(values((3, 4)), device)  # a value tensor on the device, a cpu mask
    assert tuple(z.shape) == (5, 4)


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_cuda_gather_refuses_cpu_index(device):
    x = genesis.randn(3, 4, device=device)
    with pytest.raises(RuntimeError, match="same device"):
        x.gather(1, genesis.tensor([[0, 1]]))
    with pytest.raises(RuntimeError, match="same device"):
        x.index_select(1, genesis.tensor([0]))


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_masked_fill_of_a_cuda_tensor_with_a_cpu_value_tensor(device):
    xt, vt = values((3, 4)), _grad(values(()))
    mask = torch.rand(3, 4) > 0.5
    mask[0, 0] = True
    v = to_genesis(vt, "cpu", requires_grad=True)
    y = to_genesis(xt, device).masked_fill(index_tensor(mask, device), v)
    yt = xt.masked_fill(mask, vt)
    assert_close(y, yt)
    g = values((3, 4))
    y.backward(to_genesis(g, device))
    yt.backward(g)
    assert v.grad.device == genesis.device("cpu")
    assert_close(v.grad, vt.grad)
