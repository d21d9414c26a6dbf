"""The 1-D / 3-D, adaptive, power-average, unpooling and fractional pooling layers and functions against
torch, in float64: outputs, indices, input gradients, and the argument errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, check_module, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


def x(*shape):
    return lambda: [torch.randn(*shape, dtype=torch.float64)]


def positive(*shape):
    return lambda: [torch.rand(*shape, dtype=torch.float64) + 0.1]


CASES = [
    ("maxpool1d", lambda nn: nn.MaxPool1d(2), x(2, 3, 7)),
    ("maxpool1d-options", lambda nn: nn.MaxPool1d(3, 2, 1, dilation=2, ceil_mode=True), x(3, 10)),
    ("maxpool3d", lambda nn: nn.MaxPool3d(2), x(1, 2, 4, 5, 4)),
    ("maxpool3d-options", lambda nn: nn.MaxPool3d((2, 3, 2), (1, 2, 2), (1, 1, 0), ceil_mode=True), x(2, 4, 5, 5)),
    ("avgpool1d", lambda nn: nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False), x(2, 3, 8)),
    ("avgpool3d", lambda nn: nn.AvgPool3d(2, padding=1), x(1, 2, 3, 4, 5)),
    ("avgpool3d-divisor", lambda nn: nn.AvgPool3d((2, 3, 2), 2, ceil_mode=True, divisor_override=5), x(2, 5, 5, 4)),
    ("adaptiveavg1d", lambda nn: nn.AdaptiveAvgPool1d(4), x(2, 3, 7)),
    ("adaptiveavg3d", lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)), x(1, 2, 5, 3, 7)),
    ("adaptiveavg3d-divisible", lambda nn: nn.AdaptiveAvgPool3d(2), x(2, 4, 6, 2)),
    ("adaptivemax1d", lambda nn: nn.AdaptiveMaxPool1d(3), x(2, 3, 7)),
    ("adaptivemax2d", lambda nn: nn.AdaptiveMaxPool2d((3, None)), x(2, 3, 7, 5)),
    ("adaptivemax2d-up", lambda nn: nn.AdaptiveMaxPool2d(5), x(3, 4, 3)),
    ("adaptivemax3d", lambda nn: nn.AdaptiveMaxPool3d((2, 3, 4)), x(1, 2, 5, 4, 7)),
    ("lppool1d", lambda nn: nn.LPPool1d(2, 3, 2), positive(2, 3, 8)),
    ("lppool2d", lambda nn: nn.LPPool2d(1.5, (2, 3), ceil_mode=True), positive(2, 3, 5, 7)),
    ("lppool3d", lambda nn: nn.LPPool3d(3, 2), positive(1, 2, 4, 4, 5)),
]


@pytest.mark.parametrize("build,inputs", [pytest.param(b, i, id=n) for n, b, i in CASES])
def test_layer_matches_torch(device, build, inputs):
    tmod, gmod = build(torch.nn).double(), build(nn).double()
    assert repr(gmod) == repr(tmod)
    gmod.to(device)
    check_module(tmod, gmod, inputs(), device)


@pytest.mark.parametrize(
    "name,shape,kwargs",
    [
        ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
        ("max_pool2d", (2, 3, 8, 7), dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True)),
        ("max_pool3d", (2, 5, 4, 6), dict(kernel_size=2, stride=(1, 2, 2), padding=1)),
        ("adaptive_max_pool1d", (2, 3, 7), dict(output_size=4)),
        ("adaptive_max_pool2d", (2, 3, 7, 5), dict(output_size=(3, 4))),
        ("adaptive_max_pool3d", (2, 5, 4, 6), dict(output_size=(2, 3, 4))),
    ],
)
def test_indices_match_torch(device, name, shape, kwargs):
    data = torch.randn(*shape, dtype=torch.float64)
    check_forward_backward(
        lambda t: getattr(torch.nn.functional, name)(t, return_indices=True, **kwargs),
        lambda t: getattr(F, name)(t, return_indices=True, **kwargs),
        [data],
        device,
    )
    _, idx = getattr(F, f"{name}_with_indices")(g(data, device), **kwargs)
    assert_close(idx, getattr(torch.nn.functional, name)(data, return_indices=True, **kwargs)[1])


@pytest.mark.parametrize(
    "nd,shape,kwargs",
    [
        (1, (2, 3, 8), dict(kernel_size=2)),
        (2, (2, 3, 6, 7), dict(kernel_size=3, stride=2, padding=1, output_size=(6, 7))),
        (2, (3, 6, 7), dict(kernel_size=2, output_size=(1, 3, 6, 7))),
        (3, (1, 2, 4, 6, 5), dict(kernel_size=2, output_size=(4, 6, 5))),
    ],
)
def test_max_unpool_matches_torch(device, nd, shape, kwargs):
    pool_kwargs = {k: v for k, v in kwargs.items() if k != "output_size"}
    data = torch.randn(*shape, dtype=torch.float64)
    values, idx = getattr(torch.nn.functional, f"max_pool{nd}d")(data, return_indices=True, **pool_kwargs)
    check_forward_backward(
        lambda v, i: getattr(torch.nn.functional, f"max_unpool{nd}d")(v, i, **kwargs),
        lambda v, i: getattr(F, f"max_unpool{nd}d")(v, i, **kwargs),
        [values, idx],
        device,
    )
    layer, tlayer = getattr(nn, f"MaxUnpool{nd}d")(**pool_kwargs), getattr(torch.nn, f"MaxUnpool{nd}d")(**pool_kwargs)
    assert repr(layer) == repr(tlayer)
    out = layer(g(values, device), g(idx, device), kwargs.get("output_size"))
    assert_close(out, tlayer(values, idx, kwargs.get("output_size")))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize(
    "nd,shape,kwargs",
    [
        (2, (2, 3, 9, 8), dict(kernel_size=(2, 3), output_size=(5, 4))),
        (2, (3, 7, 7), dict(kernel_size=2, output_ratio=(0.6, 0.6))),
        (3, (2, 2, 7, 8, 6), dict(kernel_size=(2, 3, 2), output_ratio=(0.5, 0.5, 0.7))),
    ],
)
def test_fractional_max_pool_matches_torch(device, dtype, nd, shape, kwargs):
    data = torch.randn(*shape, dtype=dtype)
    batch = 1 if len(shape) == nd + 1 else shape[0]
    samples = torch.rand(batch, shape[-nd - 1], nd, dtype=dtype)
    name = f"fractional_max_pool{nd}d"
    tol = {} if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-6)
    check_forward_backward(
        lambda t: getattr(torch.nn.functional, name)(t, return_indices=True, _random_samples=samples, **kwargs),
        lambda t: getattr(F, name)(t, return_indices=True, _random_samples=g(samples, device), **kwargs),
        [data],
        device,
        **tol,
    )


def test_fractional_max_pool_layer_draws_fresh_windows(device):
    layer = nn.FractionalMaxPool2d(2, output_size=4, return_indices=True)
    values, idx = layer(genesis.randn(2, 3, 9, 9, device=device))
    assert tuple(values.shape) == tuple(idx.shape) == (2, 3, 4, 4)
    samples = torch.rand(1, 2, 3, dtype=torch.float64)
    tlayer = torch.nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=samples)
    glayer = nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=g(samples, device))
    assert list(glayer.state_dict()) == list(tlayer.state_dict())
    data = torch.randn(1, 2, 6, 7, 8, dtype=torch.float64)
    assert_close(glayer(g(data, device)), tlayer(data))


def test_top_level_pool_names(device):
    data = torch.randn(2, 3, 9, dtype=torch.float64)
    assert_close(genesis.max_pool1d(g(data, device), 3, 2), torch.max_pool1d(data, 3, 2))
    assert_close(genesis.avg_pool1d(g(data, device), 3), torch.avg_pool1d(data, 3))
    assert_close(genesis.adaptive_avg_pool1d(g(data, device), 4), torch.adaptive_avg_pool1d(data, 4))
    for got, want in zip(genesis.adaptive_max_pool1d(g(data, device), 4), torch.adaptive_max_pool1d(data, 4)):
        assert_close(got, want)
    for got, want in zip(genesis.max_pool1d_with_indices(g(data, device), 2), torch.max_pool1d_with_indices(data, 2)):
        assert_close(got, want)
    vol = torch.randn(1, 2, 4, 4, 4, dtype=torch.float64)
    assert_close(genesis.max_pool3d(g(vol, device), 2), torch.max_pool3d(vol, 2))


def test_errors(device):
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool3d(genesis.randn(2, 3, 2, 4, 4, device=device), 3)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.avg_pool1d(genesis.randn(2, 3, 6, device=device), 3, padding=2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool3d(genesis.randn(1, 3, 4, 4, 4, device=device), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match=r"adaptive_max_pool2d\(\): Expected 3D or 4D tensor"):
        F.adaptive_max_pool2d(genesis.randn(3, 4, device=device), 2)
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool3d\(\): Expected 4D or 5D tensor"):
        F.adaptive_avg_pool3d(genesis.randn(3, 4, device=device), 2)
    values = genesis.randn(1, 1, 2, 2, device=device)
    index = genesis.tensor([[[[0, 1], [2, 3]]]], device=device)
    with pytest.raises(ValueError, match=r"invalid output_size \"\(7, 7\)\" \(dim 0 must be between 2 and 6\)"):
        F.max_unpool2d(values, index, 2, output_size=(7, 7))
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 30 \(output volumes are of size 4x4\)"):
        F.max_unpool2d(values, genesis.tensor([[[[0, 1], [2, 30]]]], device=device), 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got: Float"):
        F.max_unpool2d(values, index.float(), 2)
    with pytest.raises(ValueError, match="requires specifying either an output_size or an output_ratio"):
        F.fractional_max_pool2d(genesis.randn(1, 1, 5, 5, device=device), 2)
    with pytest.raises(RuntimeError, match="pool height 2 too large relative to input height 5"):
        F.fractional_max_pool2d(genesis.randn(1, 1, 5, 5, device=device), 2, output_size=5)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio may be specified"):
        nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
