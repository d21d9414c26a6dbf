"""memory_format (genesis_autograd/memory_format.py) against torch: the strides and values of
contiguous / clone / to / the *_like factories / empty in contiguous_format, preserve_format,
channels_last and channels_last_3d, is_contiguous(memory_format=), gradients through a layout change,
and torch's errors."""

from __future__ import annotations

import pytest
import torch

import genesis


def pair(shape, device, layout=None):
    """A float64 torch tensor and the genesis tensor with the same values and strides (``layout``: a
    permutation giving the order of dims in memory)."""
    data = torch.randn(*shape, dtype=torch.float64)
    if layout is not None:
        data = data.permute(*layout).contiguous().permute(*[layout.index(d) for d in range(len(shape))])
    x = genesis.tensor(data.contiguous().numpy(), device=device)
    if layout is not None:
        x = x.permute(*layout).contiguous().permute(*[layout.index(d) for d in range(len(shape))])
    assert x.stride() == data.stride()
    return data, x


def values(t):
    return torch.from_numpy(t.detach().cpu().numpy())


FORMATS = [
    ("channels_last", (2, 3, 4, 5)),
    ("channels_last_3d", (2, 3, 2, 4, 3)),
    ("contiguous_format", (2, 3, 4, 5)),
]


@pytest.mark.parametrize("name,shape", FORMATS, ids=[f[0] for f in FORMATS])
def test_contiguous_clone_and_to_in_a_format(device, name, shape):
    data, x = pair(shape, device, layout=(0, 3, 1, 2) if len(shape) == 4 else None)
    tf, gf = getattr(torch, name), getattr(genesis, name)
    for t_out, g_out in (
        (data.contiguous(memory_format=tf), x.contiguous(memory_format=gf)),
        (data.clone(memory_format=tf), x.clone(memory_format=gf)),
        (data.to(memory_format=tf), x.to(memory_format=gf)),
        (data.to(torch.float32, memory_format=tf), x.to(genesis.float32, memory_format=gf)),
    ):
        assert g_out.stride() == t_out.stride()
        assert g_out.is_contiguous(memory_format=gf) == t_out.is_contiguous(memory_format=tf)
        assert g_out.is_contiguous() == t_out.is_contiguous()
        assert torch.equal(values(g_out), t_out)


def test_already_in_format_returns_self_and_to_copy(device):
    _, x = pair((2, 3, 4, 5), device)
    y = x.contiguous(memory_format=genesis.channels_last)
    assert y.contiguous(memory_format=genesis.channels_last) is y
    assert y.to(memory_format=genesis.channels_last) is y
    copied = y.to(memory_format=genesis.channels_last, copy=True)
    assert copied is not y and copied.stride() == y.stride() and copied.data_ptr() != y.data_ptr()
    assert x.contiguous(memory_format=genesis.contiguous_format) is x


@pytest.mark.parametrize(
    "make", [lambda t: t.transpose(0, 1), lambda t: t.permute(0, 2, 3, 1), lambda t: t[:, :, ::2], lambda t: t]
)
def test_clone_preserves_dense_strides(device, make):
    data, x = pair((2, 3, 4, 6), device)
    t, g = make(data), make(x)
    assert g.clone().stride() == t.clone().stride()
    assert (
        g.clone(memory_format=genesis.contiguous_format).stride()
        == t.clone(memory_format=torch.contiguous_format).stride()
    )
    assert torch.equal(values(g.clone()), t.clone())


LIKES = ["empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"]


@pytest.mark.parametrize("fn", LIKES)
@pytest.mark.parametrize("fmt", ["preserve_format", "contiguous_format", "channels_last"])
def test_like_factories_lay_out_as_torch(device, fn, fmt):
    data, x = pair((2, 3, 4, 5), device, layout=(0, 2, 3, 1))
    for t_in, g_in in ((data, x), (data.transpose(1, 3), x.transpose(1, 3)), (data[:, :, 1:3], x[:, :, 1:3])):
        t_out = getattr(torch, fn)(t_in, memory_format=getattr(torch, fmt))
        g_out = getattr(genesis, fn)(g_in, memory_format=getattr(genesis, fmt))
        assert g_out.stride() == t_out.stride(), (fn, fmt, t_in.stride())
        assert g_out.is_leaf and tuple(g_out.shape) == tuple(t_out.shape)


def test_like_values_and_randint_full_like(device):
    data, x = pair((2, 3, 4, 5), device, layout=(0, 2, 3, 1))
    ones = genesis.ones_like(x)
    assert torch.equal(values(ones), torch.ones_like(data))
    full = genesis.full_like(x, 2.5, memory_format=genesis.contiguous_format)
    assert full.stride() == torch.full_like(data, 2.5, memory_format=torch.contiguous_format).stride()
    assert torch.equal(values(full), torch.full_like(data, 2.5))
    assert genesis.full_like(x, 1.0).stride() == torch.full_like(data, 1.0).stride()
    ints = genesis.randint_like(x, 3, 7, memory_format=genesis.channels_last)
    assert ints.stride() == torch.randint_like(data, 3, 7, memory_format=torch.channels_last).stride()
    drawn = values(ints)
    assert bool(((drawn >= 3) & (drawn < 7)).all()) and len(drawn.unique()) > 1
    assert genesis.randint_like(x, 5).stride() == torch.randint_like(data, 5).stride()


def test_empty_in_a_format(device):
    for fmt, shape in (
        ("channels_last", (2, 3, 4, 5)),
        ("channels_last_3d", (1, 2, 3, 4, 5)),
        ("contiguous_format", (2, 3)),
    ):
        t = torch.empty(*shape, memory_format=getattr(torch, fmt))
        g = genesis.empty(*shape, device=device, memory_format=getattr(genesis, fmt))
        assert g.stride() == t.stride() and g.is_leaf
    assert genesis.empty((2, 3, 4, 5), memory_format=genesis.channels_last).stride() == (60, 1, 15, 3)


def test_gradients_through_a_layout_change(device):
    data, x = pair((2, 3, 4, 5), device)
    w = torch.randn(2, 3, 4, 5, dtype=torch.float64)
    t = data.clone().requires_grad_(True)
    g = x.detach().requires_grad_(True)
    t_out = (t.contiguous(memory_format=torch.channels_last).exp() * w).sum() + (
        t.clone(memory_format=torch.channels_last) * w
    ).sum()
    gw = genesis.tensor(w.numpy(), device=device)
    g_out = (g.contiguous(memory_format=genesis.channels_last).exp() * gw).sum() + (
        g.clone(memory_format=genesis.channels_last) * gw
    ).sum()
    t_out.backward()
    g_out.backward()
    torch.testing.assert_close(values(g.grad), t.grad)
    torch.testing.assert_close(float(g_out.item()), float(t_out.item()))


def test_is_contiguous_with_a_format(device):
    for shape in ((2, 3, 4, 5), (2, 3, 1, 1), (1, 3, 4, 5), (2, 3, 4)):
        data, x = pair(shape, device)
        for fmt in ("contiguous_format", "channels_last", "channels_last_3d"):
            assert x.is_contiguous(memory_format=getattr(genesis, fmt)) == data.is_contiguous(
                memory_format=getattr(torch, fmt)
            )
        if len(shape) == 4:
            cl_t, cl_g = (
                data.contiguous(memory_format=torch.channels_last),
                x.contiguous(memory_format=genesis.channels_last),
            )
            for fmt in ("contiguous_format", "channels_last"):
                assert cl_g.is_contiguous(memory_format=getattr(genesis, fmt)) == cl_t.is_contiguous(
                    memory_format=getattr(torch, fmt)
                )


def test_errors_as_torch(device):
    _, x = pair((2, 3, 4), device)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x.contiguous(memory_format=genesis.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        x.clone(memory_format=genesis.channels_last_3d)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        genesis.zeros_like(x, memory_format=genesis.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        genesis.empty(2, 3, memory_format=genesis.channels_last)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        genesis.empty(2, 3, memory_format=genesis.preserve_format)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the contiguous operator"):
        x.transpose(0, 1).contiguous(memory_format=genesis.preserve_format)
