"""F.pad in every mode for 1-3 padded dims (batched and unbatched, growing and cropping) and the padding
modules (ConstantPad / ZeroPad / ReflectionPad / ReplicationPad / CircularPad 1d-3d) against torch in
float64: values, gradients, reprs, and torch's errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as TF
from nn_helpers import check_forward_backward, check_module, g, module_repr

import genesis.nn as nn
import genesis.nn.functional as F


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


# (padded dims, amounts, input shape): unbatched and batched, uneven, zero and negative amounts.
PADS = [
    (1, (2, 1), (3, 5)),
    (1, (0, 3), (2, 3, 5)),
    (1, (-2, 3), (2, 3, 5)),
    (1, (3, -1), (2, 3, 5)),
    (2, (1, 2, 2, 0), (3, 4, 5)),
    (2, (2, -1, -1, 3), (2, 3, 4, 5)),
    (3, (1, 0, 2, 1, 1, 2), (2, 3, 4, 5)),
    (3, (-1, 1, 1, -2, 2, 1), (1, 2, 3, 4, 5)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims,amounts,shape", [pytest.param(*p, id=f"{p[0]}d-{p[1]}-{len(p[2])}D") for p in PADS])
def test_pad_matches_torch(device, mode, dims, amounts, shape):
    check_forward_backward(
        lambda t: TF.pad(t, amounts, mode=mode), lambda t: F.pad(t, amounts, mode=mode), [rand(*shape)], device
    )


def test_constant_pad_any_rank_and_value(device):
    check_forward_backward(
        lambda t: TF.pad(t, (1, 1, 0, 2, 1, 0, 2, 1), value=-1.5),
        lambda t: F.pad(t, (1, 1, 0, 2, 1, 0, 2, 1), value=-1.5),
        [rand(2, 3, 2, 3)],
        device,
    )


def test_replicate_pads_past_the_input_size(device):
    check_forward_backward(
        lambda t: TF.pad(t, (7, 6), mode="replicate"),
        lambda t: F.pad(t, (7, 6), mode="replicate"),
        [rand(2, 3)],
        device,
    )


MODULES = [
    ("constant1d", lambda m: m.ConstantPad1d(2, 3.5), (2, 3, 4)),
    ("constant2d", lambda m: m.ConstantPad2d((1, 2, 0, 1), -1.0), (2, 3, 4)),
    ("constant3d", lambda m: m.ConstantPad3d(1, 0.5), (1, 2, 3, 4)),
    ("zero1d", lambda m: m.ZeroPad1d((2, -1)), (2, 3, 4)),
    ("zero2d", lambda m: m.ZeroPad2d(1), (3, 4)),
    ("zero3d", lambda m: m.ZeroPad3d((1, 2, 0, 1, 1, 0)), (2, 2, 3, 4)),
    ("reflection1d", lambda m: m.ReflectionPad1d(2), (2, 3, 4)),
    ("reflection2d", lambda m: m.ReflectionPad2d((1, 2, 3, 0)), (3, 4, 5)),
    ("reflection3d", lambda m: m.ReflectionPad3d(1), (1, 2, 3, 3, 4)),
    ("replication1d", lambda m: m.ReplicationPad1d((3, 1)), (3, 4)),
    ("replication2d", lambda m: m.ReplicationPad2d(2), (2, 3, 4, 5)),
    ("replication3d", lambda m: m.ReplicationPad3d((1, 0, 2, 1, 0, 1)), (2, 3, 3, 4)),
    ("circular1d", lambda m: m.CircularPad1d(2), (2, 3, 4)),
    ("circular2d", lambda m: m.CircularPad2d((1, 2, 2, 1)), (3, 4, 5)),
    ("circular3d", lambda m: m.CircularPad3d(1), (1, 2, 3, 3, 4)),
]


@pytest.mark.parametrize("build,shape", [pytest.param(b, s, id=n) for n, b, s in MODULES])
def test_module_matches_torch(device, build, shape):
    tmod, gmod = build(torch.nn), build(nn)
    assert module_repr(gmod) == repr(tmod)
    assert gmod.padding == tmod.padding and getattr(gmod, "value", None) == getattr(tmod, "value", None)
    check_module(tmod, gmod, [rand(*shape)], device)


def test_zero_pads_are_constant_pads():
    assert isinstance(nn.ZeroPad2d(1), nn.ConstantPad2d) and nn.ZeroPad2d(1).value == 0.0


def test_errors_match_torch(device):
    x = g(rand(2, 3, 5), device)
    for mode in ("reflect", "replicate", "circular"):
        with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D input tensor"):
            F.pad(g(rand(5), device), (1, 1), mode=mode)
        with pytest.raises(NotImplementedError, match="Padding size 4 is not supported for 2D input tensor"):
            F.pad(g(rand(3, 5), device), (1, 1, 1, 1), mode=mode)
        with pytest.raises(NotImplementedError, match="Padding size 8 is not supported for 5D input tensor"):
            F.pad(g(rand(1, 2, 2, 3, 5), device), (1,) * 8, mode=mode)
        with pytest.raises(RuntimeError, match=f'Padding mode "{mode}" doesn\'t take in value argument'):
            F.pad(x, (1, 1), mode=mode, value=1.0)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        nn.ReflectionPad1d(1)(g(rand(2, 2, 3, 5), device))
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension"):
        F.pad(x, (5, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        F.pad(x, (6, 1), mode="circular")
    with pytest.raises(RuntimeError, match="Negative padding value is resulting in an empty dimension"):
        F.pad(x, (-3, -2), mode="circular")
    with pytest.raises(RuntimeError, match=r"Expected 3D or 4D \(batch mode\) tensor with possibly 0 batch size"):
        F.pad(g(rand(2, 0, 4), device), (1, 1, 1, 1), mode="reflect")
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.CircularPad1d(1)(g(rand(2, 2, 3, 5), device))
    with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
        nn.CircularPad3d(1)(x)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        nn.ReflectionPad2d((1, 2, 3))(x)
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode mirror"):
        F.pad(x, (1, 1), mode="mirror")
