"""torch's top-level nn ops with signatures of their own (genesis.embedding, convolution, grid_sampler,
constant_pad_nd, feature_dropout, norm_except_dim, rms_norm, bilinear, affine_grid_generator,
embedding_renorm_) against torch in float64: values, gradients and torch's errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, g, to_torch

import genesis


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def test_embedding_weight_first_and_padding_idx(device):
    weight, idx = rand(6, 3), torch.tensor([[0, 2, 5], [2, 2, 1]])
    check_forward_backward(
        lambda w: torch.embedding(w, idx), lambda w: genesis.embedding(w, g(idx, device)), [weight], device
    )
    # padding_idx >= 0: that row gets no gradient; a negative one means no padding row (torch's aten form)
    for p in (2, -1, -3):
        check_forward_backward(
            lambda w, p=p: torch.embedding(w, idx, p),
            lambda w, p=p: genesis.embedding(w, g(idx, device), p),
            [weight],
            device,
        )


def test_embedding_renorm_scales_named_rows_in_place(device):
    data, idx = rand(5, 4) * 2, torch.tensor([0, 3, 3])
    w = g(data, device)
    out = genesis.embedding_renorm_(w, g(idx, device), 1.5, 2.0)
    assert out is w
    assert_close(w, torch.embedding_renorm_(data.clone(), idx, 1.5, 2.0))


CONVS = [
    ("conv1d", (2, 4, 7), (6, 2, 3), False, [2], [1], [1], [0], 2),
    ("conv2d", (2, 3, 5, 6), (4, 3, 3, 2), False, [1, 2], [1, 0], [2, 1], [0, 0], 1),
    ("conv3d", (1, 2, 4, 4, 3), (3, 2, 2, 2, 2), False, [1, 1, 1], [0, 1, 0], [1, 1, 1], [0, 0, 0], 1),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), True, [2], [1], [1], [1], 1),
    ("conv_transpose2d", (1, 4, 3, 4), (4, 1, 3, 2), True, [2, 1], [0, 1], [1, 2], [1, 0], 2),
]


@pytest.mark.parametrize(
    "xs,ws,transposed,stride,padding,dilation,out_pad,groups", [c[1:] for c in CONVS], ids=[c[0] for c in CONVS]
)
def test_convolution_picks_the_conv_by_rank(device, xs, ws, transposed, stride, padding, dilation, out_pad, groups):
    bias_size = ws[1] * groups if transposed else ws[0]
    args = (stride, padding, dilation, transposed, out_pad, groups)
    check_forward_backward(
        lambda x, w, b: torch.convolution(x, w, b, *args),
        lambda x, w, b: genesis.convolution(x, w, b, *args),
        [rand(*xs), rand(*ws), rand(bias_size)],
        device,
    )


def test_convolution_without_bias_and_bad_weight(device):
    x, w = rand(2, 3, 6), rand(4, 3, 2)
    check_forward_backward(
        lambda x, w: torch.convolution(x, w, None, [1], [0], [1], False, [0], 1),
        lambda x, w: genesis.convolution(x, w, None, [1], [0], [1], False, [0], 1),
        [x, w],
        device,
    )
    with pytest.raises(RuntimeError, match="weight should have at least three dimensions"):
        genesis.convolution(g(x, device), g(rand(4, 3), device), None, [1], [0], [1], False, [0], 1)


def test_constant_pad_nd(device):
    for pad, value in (([1, 2], 0), ([2, 0, 1, 1], 1.5), ([-1, 2], -2.0)):
        check_forward_backward(
            lambda x, pad=pad, value=value: torch.constant_pad_nd(x, pad, value),
            lambda x, pad=pad, value=value: genesis.constant_pad_nd(x, pad, value),
            [rand(2, 3, 4)],
            device,
        )
    with pytest.raises(RuntimeError, match="Length of pad must be even"):
        genesis.constant_pad_nd(g(rand(2, 3), device), [1, 2, 3])


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_mode", [0, 1, 2])
def test_grid_sampler_2d_enums(device, mode, padding_mode):
    grid = torch.rand(2, 3, 2, 2, dtype=torch.float64) * 2.4 - 1.2
    for fn in ("grid_sampler", "grid_sampler_2d"):
        check_forward_backward(
            lambda x, gr, fn=fn: getattr(torch, fn)(x, gr, mode, padding_mode, False),
            lambda x, gr, fn=fn: getattr(genesis, fn)(x, gr, mode, padding_mode, False),
            [rand(2, 2, 4, 5), grid],
            device,
        )


def test_grid_sampler_3d_and_rank_errors(device):
    grid = torch.rand(1, 2, 2, 3, 3, dtype=torch.float64) * 2 - 1
    check_forward_backward(
        lambda x, gr: torch.grid_sampler_3d(x, gr, 0, 1, True),
        lambda x, gr: genesis.grid_sampler_3d(x, gr, 0, 1, True),
        [rand(1, 2, 3, 4, 3), grid],
        device,
    )
    x4, g4 = g(rand(2, 3, 4, 4), device), g(rand(2, 3, 3, 2), device)
    with pytest.raises(RuntimeError, match="expected 5D input and grid"):
        genesis.grid_sampler_3d(x4, g4, 0, 0, False)
    with pytest.raises(RuntimeError, match="expected 4D input and grid"):
        genesis.grid_sampler_2d(g(rand(3, 4, 4), device), g4, 0, 0, False)


def test_affine_grid_generator(device):
    for size, align in (([2, 3, 4, 5], False), ([2, 1, 3, 2, 4], True)):
        theta = rand(2, len(size) - 2, len(size) - 1)
        check_forward_backward(
            lambda t, size=size, align=align: torch.affine_grid_generator(t, size, align),
            lambda t, size=size, align=align: genesis.affine_grid_generator(t, size, align),
            [theta],
            device,
        )


def test_bilinear_and_rms_norm(device):
    check_forward_backward(torch.bilinear, genesis.bilinear, [rand(4, 3), rand(4, 2), rand(5, 3, 2), rand(5)], device)
    check_forward_backward(
        lambda x, w: torch.rms_norm(x, [3, 4], w, 1e-3),
        lambda x, w: genesis.rms_norm(x, [3, 4], w, 1e-3),
        [rand(2, 3, 4), rand(3, 4)],
        device,
    )
    check_forward_backward(lambda x: torch.rms_norm(x, [4]), lambda x: genesis.rms_norm(x, [4]), [rand(3, 4)], device)


@pytest.mark.parametrize(
    "shape,pow,dim", [((3, 4, 2), 2, 0), ((3, 4, 2), 2, 1), ((3, 4, 2), 3, 2), ((3, 4), 2, -1), ((5,), 2, 0)]
)
def test_norm_except_dim(device, shape, pow, dim):
    check_forward_backward(
        lambda v: torch.norm_except_dim(v, pow, dim),
        lambda v: genesis.norm_except_dim(v, pow, dim),
        [rand(*shape)],
        device,
    )


def test_feature_dropout_drops_whole_channels(device):
    genesis.manual_seed(3)
    data = torch.rand(8, 6, 5, dtype=torch.float64) + 0.5
    x = g(data, device, requires_grad=True)
    out = genesis.feature_dropout(x, 0.5, True)
    result = to_torch(out)
    kept = (result != 0).all(dim=2)
    dropped = (result == 0).all(dim=2)
    assert bool((kept | dropped).all()), "each (sample, channel) is kept or dropped as a whole"
    assert 0 < int(kept.sum()) < 48
    assert_close(out[kept], data[kept] * 2.0)
    out.sum().backward()
    assert_close(x.grad, kept.unsqueeze(2).expand(8, 6, 5).to(torch.float64) * 2.0)
    # 2-D input: one draw per element (N, C), as torch
    flat = to_torch(genesis.feature_dropout(g(torch.ones(40, 6, dtype=torch.float64), device), 0.5, True))
    assert set(flat.unique().tolist()) <= {0.0, 2.0} and 0 < int((flat == 0).sum()) < 240


def test_feature_dropout_identity_inplace_and_errors(device):
    data = rand(2, 3, 4)
    x = g(data, device)
    assert genesis.feature_dropout(x, 0.5, False) is x
    y = g(torch.ones(4, 5, 3, dtype=torch.float64), device)
    assert genesis.feature_dropout_(y, 1.0, True) is y
    assert float(to_torch(y).abs().sum()) == 0.0
    with pytest.raises(RuntimeError, match=r"dropout probability has to be between 0 and 1, but got 1\.5"):
        genesis.feature_dropout(x, 1.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        genesis.feature_dropout(g(rand(3), device), 0.5, True)
