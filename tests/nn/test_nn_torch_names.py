"""torch names issue #13 asked for: genesis.cuda.OutOfMemoryError, Tensor.__cuda_array_interface__,
and the names composed of existing ops (mm ... einsum, flip / roll / repeat / tile), values and
gradients against torch in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
import genesis_storage
from device_support import requires_cuda


def test_out_of_memory_error_is_the_allocators_class():
    assert genesis.cuda.OutOfMemoryError is genesis_storage.OutOfMemoryError
    assert issubclass(genesis.cuda.OutOfMemoryError, MemoryError)
    assert "OutOfMemoryError" in genesis.cuda.__all__


def test_a_cpu_tensor_has_no_cuda_array_interface():
    t = genesis.ones(3)
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="non-CUDA tensor"):
        t.__cuda_array_interface__  # noqa: B018


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])  # cpu: the test above
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8", "bool"])
def test_cuda_array_interface(device, dtype):
    g = genesis.tensor(np.arange(24).reshape(4, 6) % 2, dtype=dtype, device=device)
    cai = g.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["shape"] == (4, 6) and cai["strides"] is None
    assert cai["typestr"] == {"float32": "<f4", "float16": "<f2", "int64": "<i8", "uint8": "|u1", "bool": "|b1"}[dtype]
    assert cai["data"] == (g.data_ptr(), False)
    assert isinstance(cai["stream"], int) and cai["stream"] != 0
    view = g.t()[1:]  # strided: strides in bytes; starts at g's column 1, one element in
    item = np.dtype(dtype).itemsize
    assert view.__cuda_array_interface__["strides"] == (item, 6 * item)
    assert view.__cuda_array_interface__["data"][0] == g.data_ptr() + item
    back = genesis_storage.from_cuda_array_interface(view)  # zero-copy round trip
    np.testing.assert_array_equal(back.numpy(), view.cpu().numpy())
    with pytest.raises(RuntimeError, match="requires grad"):
        genesis.ones(2, device=device, requires_grad=True).__cuda_array_interface__  # noqa: B018


def _compare(device, fn_torch, fn_genesis, *shapes):
    """Values and input gradients of fn on fresh float64 inputs, torch against genesis."""
    rng = np.random.default_rng()
    arrays = [rng.standard_normal(s) for s in shapes]
    tins = [torch.tensor(a, requires_grad=True) for a in arrays]
    gins = [genesis.tensor(a, device=device, requires_grad=True) for a in arrays]
    tout, gout = fn_torch(*tins), fn_genesis(*gins)
    assert tuple(gout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(gout.detach().cpu().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = rng.standard_normal(tuple(tout.shape))
    (tout * torch.tensor(weights)).sum().backward()
    (gout * genesis.tensor(weights, device=device)).sum().backward()
    for t, g in zip(tins, gins):
        np.testing.assert_allclose(g.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "args", "shapes"),
    [
        ("mm", (), [(3, 4), (4, 5)]),
        ("bmm", (), [(2, 3, 4), (2, 4, 5)]),
        ("mv", (), [(3, 4), (4,)]),
        ("dot", (), [(5,), (5,)]),
        ("outer", (), [(3,), (4,)]),
        ("ger", (), [(3,), (2,)]),
        ("addmm", (), [(3, 5), (3, 4), (4, 5)]),
        ("addmm", (), [(5,), (3, 4), (4, 5)]),
        ("baddbmm", (), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
        ("diff", (), [(4, 6)]),
        ("flip", ((0, 2),), [(2, 3, 4)]),
        ("roll", (2, 1), [(3, 5)]),
        ("roll", ((1, -1), (0, 1)), [(3, 4)]),
        ("roll", (3,), [(2, 3)]),
        ("tile", ((2, 1, 3),), [(3, 2)]),
    ],
)
def test_composed_functions_match_torch(device, name, args, shapes):
    _compare(device, lambda *t: getattr(torch, name)(*t, *args), lambda *g: getattr(genesis, name)(*g, *args), *shapes)


def test_addmm_scaling_and_diff_options(device):
    _compare(
        device,
        lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=-2.0),
        lambda c, a, b: genesis.addmm(c, a, b, beta=0.5, alpha=-2.0),
        (3, 5),
        (3, 4),
        (4, 5),
    )
    _compare(
        device,
        lambda x, p: torch.diff(x, n=2, dim=0, prepend=p),
        lambda x, p: genesis.diff(x, n=2, dim=0, prepend=p),
        (5, 3),
        (2, 3),
    )


def test_addmm_with_beta_zero_ignores_nan_in_input(device):
    c = np.full((2, 2), np.nan)
    a, b = np.eye(2), np.ones((2, 2))
    expected = torch.addmm(torch.tensor(c), torch.tensor(a), torch.tensor(b), beta=0)
    got = genesis.addmm(
        genesis.tensor(c, device=device), genesis.tensor(a, device=device), genesis.tensor(b, device=device), beta=0
    )
    np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())


@pytest.mark.parametrize(
    ("method", "args", "shape"),
    [("flip", (1,), (3, 4)), ("roll", (-1,), (2, 3)), ("repeat", (2, 1, 3), (2, 3)), ("tile", ((2,),), (2, 3))],
)
def test_rearranging_methods_match_torch(device, method, args, shape):
    _compare(device, lambda t: getattr(t, method)(*args), lambda g: getattr(g, method)(*args), shape)


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
        ("i,j->ij", [(3,), (4,)]),
        ("i,i->", [(5,), (5,)]),
        ("ij->ji", [(2, 3)]),
        ("ij->", [(2, 3)]),
        ("ij,jk", [(2, 3), (3, 4)]),
        ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("ijk,k->ij", [(2, 3, 4), (4,)]),
        ("ab,b->", [(2, 3), (1,)]),
        ("abc,bc->a", [(2, 3, 1), (1, 4)]),
    ],
)
def test_einsum_matches_torch(device, equation, shapes):
    _compare(device, lambda *t: torch.einsum(equation, *t), lambda *g: genesis.einsum(equation, *g), *shapes)
