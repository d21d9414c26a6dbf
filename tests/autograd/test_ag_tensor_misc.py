"""Tensor's small methods (issue #30 item 5, part B 4): new_* factories, casts by name, queries, host-memory
state, the cpu callbacks, fill_diagonal_, sum_to_size (with its gradient), as_subclass, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis


def g_of(t: torch.Tensor, device: str, requires_grad: bool = False) -> genesis.Tensor:
    return genesis.tensor(t.detach().numpy(), device=device, requires_grad=requires_grad)


def same(got, want) -> None:
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-7, atol=1e-9)


def test_new_factories(device):
    t = torch.randn(2, 3, dtype=torch.float64)
    g = g_of(t, device)
    for name, args in (("new_zeros", ((2, 5),)), ("new_ones", (4, 1)), ("new_full", ((3,), 2.5))):
        got, want = getattr(g, name)(*args), getattr(t, name)(*args)
        same(got, want)
        assert got.device == g.device
    same(g.new_tensor([1, 2]), t.new_tensor([1, 2]))
    same(g.new_zeros(2, dtype=genesis.int32), t.new_zeros(2, dtype=torch.int32))
    same(genesis.tensor([1, 2]).new_tensor([1.5]), torch.tensor([1, 2]).new_tensor([1.5]))
    assert g.new_empty(3, 2).shape == (3, 2) and g.new_empty(3).dtype == genesis.float64
    strided = g.new_empty_strided((2, 3), (1, 2))
    assert strided.shape == (2, 3) and strided.stride() == t.new_empty_strided((2, 3), (1, 2)).stride()
    leaf = g.new_ones(2, requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf
    with pytest.raises(RuntimeError, match="negative dimension"):
        g.new_zeros(-1)


def test_casts_by_name(device):
    t = torch.randn(3, 4, dtype=torch.float64) * 10
    g = g_of(t, device)
    same(g.abs().byte(), t.abs().byte())
    same(g.char(), t.char())
    same(
        g.type_as(genesis.tensor([1], dtype=genesis.int32, device=device)),
        t.type_as(torch.tensor([1], dtype=torch.int32)),
    )
    x = g_of(torch.randn(3, dtype=torch.float64), device, requires_grad=True)
    x.type_as(genesis.zeros(1, dtype=genesis.float32)).sum().backward()  # a cast: the gradient flows back
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_queries(device):
    t = torch.randn(3, 4, dtype=torch.float32)
    g = g_of(t, device)
    assert (g.nbytes, g.itemsize, g.nelement(), g.ndimension()) == (t.nbytes, t.itemsize, t.nelement(), t.ndimension())
    assert g.is_cpu == (device == "cpu") and g.get_device() == (-1 if device == "cpu" else 0)
    for dtype in ("float32", "int64", "uint8", "bool", "int8"):
        assert genesis.zeros(1, dtype=dtype).is_signed() == torch.zeros(1, dtype=getattr(torch, dtype)).is_signed()
    assert g.is_same_size(genesis.zeros(3, 4)) and not g.is_same_size(genesis.zeros(4, 3))
    assert genesis.tensor([2.0], device=device).is_nonzero() and not genesis.tensor([[0]], device=device).is_nonzero()
    for bad, msg in ((g, "more than one value"), (genesis.zeros(0, device=device), "no values")):
        with pytest.raises(RuntimeError, match=msg):
            bad.is_nonzero()
        with pytest.raises(RuntimeError, match=msg):
            (t if msg.startswith("more") else torch.zeros(0)).is_nonzero()
    assert genesis.is_nonzero(genesis.tensor(1)) and genesis.is_same_size(g, g) and genesis.is_signed(g)
    assert g.layout == g.layout and repr(g.layout) == "genesis.strided" and not g.is_inference()
    y = (g_of(t, device, True) * 2).split(2, 1)
    assert [p.output_nr for p in y] == [0, 1] and g.output_nr == 0
    assert g.const_data_ptr() == g.data_ptr()


@pytest.mark.parametrize(
    "make",
    [
        lambda m, d: m.zeros(3, 4, device=d),
        lambda m, d: m.zeros(3, 4, device=d).t(),
        lambda m, d: m.zeros(2, 3, 4, device=d).permute(2, 0, 1),
        lambda m, d: m.zeros(3, 4, device=d).expand(2, 3, 4),
        lambda m, d: m.zeros(2, 1, 3, device=d),
        lambda m, d: m.zeros(2, 3, 4, 5, device=d).permute(0, 2, 3, 1),
        lambda m, d: m.zeros(4, 6, device=d)[:, ::2],
    ],
)
def test_dim_order(make, device):
    assert make(genesis, device).dim_order() == make(torch, "cpu").dim_order()  # made on the device: a move copies


def test_host_memory_state(device):
    g = genesis.zeros(4, device=device)
    assert g.is_pinned() is False
    if device == "cpu":
        assert g.is_shared() is False
        assert g.share_memory_() is g and g.is_shared()
        with pytest.raises(RuntimeError, match="only supported on CUDA tensors"):
            g.record_stream(None)
    else:
        assert g.is_shared() and g.share_memory_() is g
        g.record_stream(genesis.cuda.current_stream())
        with pytest.raises(RuntimeError, match="cannot pin"):
            g.pin_memory()


def test_pin_memory_with_a_gpu():
    if not genesis.cuda.is_available():
        with pytest.raises(RuntimeError):
            genesis.zeros(2).pin_memory()
        with pytest.raises(RuntimeError):
            torch.zeros(2).pin_memory()
        return
    pinned = genesis.arange(4.0).pin_memory()
    assert pinned.is_pinned() and pinned.tolist() == [0.0, 1.0, 2.0, 3.0] and pinned.pin_memory() is pinned


def test_callbacks_cpu_only(device):
    t = torch.randn(2, 3, dtype=torch.float64)
    g = g_of(t, device)
    if device != "cpu":
        for call in (lambda: g.apply_(abs), lambda: g.map_(g, max), lambda: g.map2_(g, g, min)):
            with pytest.raises(TypeError, match="only implemented on CPU tensors"):
                call()
        return
    other, third = torch.randn(3, dtype=torch.float64), torch.randn(2, 1, dtype=torch.float64)
    want = (
        t.clone()
        .apply_(lambda v: v * v - 1)
        .map_(other, lambda a, b: a + 2 * b)
        .map2_(other, third, lambda a, b, c: a * b + c)
    )
    version = g._version[0]
    got = g.apply_(lambda v: v * v - 1).map_(g_of(other, "cpu"), lambda a, b: a + 2 * b)
    got = got.map2_(g_of(other, "cpu"), g_of(third, "cpu"), lambda a, b, c: a * b + c)
    assert got is g and g._version[0] == version + 3
    same(g, want)
    with pytest.raises(RuntimeError, match="Can't call apply_\\(\\) on Variable that requires grad"):
        genesis.zeros(2, requires_grad=True).apply_(abs)


@pytest.mark.parametrize(
    "shape, wrap", [((3, 4), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False), ((2, 5), True)]
)
def test_fill_diagonal_(shape, wrap, device):
    t = torch.randn(shape, dtype=torch.float64)
    g = g_of(t, device)
    assert g.fill_diagonal_(2.5, wrap=wrap) is g
    same(g, t.fill_diagonal_(2.5, wrap=wrap))
    x = g_of(torch.randn(3, 3, dtype=torch.float64), device, requires_grad=True)
    y = x * 3
    y.fill_diagonal_(0.0)
    y.sum().backward()
    assert x.grad.tolist() == [[0.0 if i == j else 3.0 for j in range(3)] for i in range(3)]
    for bad, msg in (
        (genesis.zeros(3), "dimensions must larger than 1"),
        (genesis.zeros(2, 3, 4), "all dimensions of input must be of equal length"),
    ):
        with pytest.raises(RuntimeError, match=msg):
            bad.fill_diagonal_(1)


def test_sum_to_size(device):
    t = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    g = g_of(t, device, requires_grad=True)
    for size in ((3, 1), (1, 3, 4), (2, 1, 1), ()):
        got, want = (
            g.sum_to_size(*size) if size else g.sum_to_size(size),
            t.sum_to_size(*size) if size else t.sum_to_size(size),
        )
        same(got, want)
    w = torch.randn(3, 1, dtype=torch.float64)
    (t.sum_to_size(3, 1) * w).sum().backward()
    (g.sum_to_size((3, 1)) * g_of(w, device)).sum().backward()
    same(g.grad, t.grad)
    with pytest.raises(RuntimeError, match=r"size \{\[2, 4\]\} is not expandable to size \{\[2, 3, 4\]\}"):
        g.sum_to_size(2, 4)


def test_as_subclass(device):
    class Tagged(genesis.Tensor):
        pass

    x = g_of(torch.randn(3, dtype=torch.float64), device, requires_grad=True)
    y = (x * 2).as_subclass(Tagged)
    assert type(y) is Tagged and y.data_ptr() is not None
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError):
        x.as_subclass(int)
