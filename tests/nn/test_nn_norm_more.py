"""BatchNorm3d, InstanceNorm1d/2d/3d, LocalResponseNorm and their functional / top-level forms against torch,
in float64: outputs, input and parameter gradients, running statistics, and the argument errors."""

from __future__ import annotations

import re

import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, check_module, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


def x(*shape):
    return lambda: [torch.randn(*shape, dtype=torch.float64) * 2 + 0.5]


def without_bias(text: str) -> str:
    """torch before 2.13 (the GPU machine's) does not print the norms' bias argument."""
    return re.sub(r", bias=(True|False)", "", text)


CASES = [
    ("batchnorm3d", lambda nn: nn.BatchNorm3d(3), x(2, 3, 2, 3, 2)),
    ("batchnorm3d-noaffine-momentum-none", lambda nn: nn.BatchNorm3d(2, affine=False, momentum=None), x(2, 2, 2, 2, 3)),
    ("instancenorm1d", lambda nn: nn.InstanceNorm1d(3), x(2, 3, 5)),
    ("instancenorm1d-unbatched-affine", lambda nn: nn.InstanceNorm1d(3, affine=True), x(3, 6)),
    ("instancenorm2d-track", lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True), x(2, 3, 3, 4)),
    (
        "instancenorm3d",
        lambda nn: nn.InstanceNorm3d(2, eps=1e-3, momentum=0.3, track_running_stats=True),
        x(2, 2, 2, 3, 2),
    ),
    ("lrn-3d", lambda nn: nn.LocalResponseNorm(3, alpha=0.5, beta=0.6, k=2.0), x(2, 5, 4)),
    ("lrn-4d-even", lambda nn: nn.LocalResponseNorm(4, alpha=0.3), x(2, 6, 3, 3)),
    ("lrn-5d", lambda nn: nn.LocalResponseNorm(2), x(1, 4, 2, 3, 2)),
]


@pytest.mark.parametrize("build,inputs", [pytest.param(b, i, id=n) for n, b, i in CASES])
def test_layer_matches_torch(device, build, inputs):
    tmod, gmod = build(torch.nn).double(), build(nn).double()
    assert without_bias(repr(gmod)) == without_bias(repr(tmod))
    assert list(gmod.state_dict()) == list(tmod.state_dict())
    gmod.to(device)
    for _ in range(2):  # twice: the running statistics' second update starts from the first
        check_module(tmod, gmod, inputs(), device)
    for name, buf in tmod.named_buffers():
        assert_close(dict(gmod.named_buffers())[name], buf)
    tmod.eval(), gmod.eval()
    check_module(tmod, gmod, inputs(), device)


def test_instance_norm_eval_uses_running_stats(device):
    tmod = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True).double()
    gmod = nn.InstanceNorm2d(3, affine=True, track_running_stats=True).double().to(device)
    check_module(tmod, gmod, x(2, 3, 4, 4)(), device)
    tmod.eval(), gmod.eval()
    check_module(tmod, gmod, x(2, 3, 4, 4)(), device)


def test_functional_instance_norm_matches_torch(device):
    data = torch.randn(2, 3, 4, 5, dtype=torch.float64)
    mean, var = torch.randn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
    gmean, gvar = g(mean, device), g(var, device)
    weight, bias = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    check_forward_backward(
        lambda t, w, b: torch.nn.functional.instance_norm(t, mean, var, w, b, momentum=0.2, eps=1e-3),
        lambda t, w, b: F.instance_norm(t, gmean, gvar, w, b, momentum=0.2, eps=1e-3),
        [data, weight, bias],
        device,
    )
    assert_close(gmean, mean)
    assert_close(gvar, var)
    check_forward_backward(
        lambda t: torch.nn.functional.instance_norm(t, mean, var, use_input_stats=False),
        lambda t: F.instance_norm(t, gmean, gvar, use_input_stats=False),
        [data],
        device,
    )


def test_top_level_norms(device):
    data = torch.randn(4, 3, 5, dtype=torch.float64)
    w, b = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    mean, var = torch.randn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
    check_forward_backward(
        lambda t, w, b: torch.batch_norm(t, w, b, mean, var, False, 0.1, 1e-5, False),
        lambda t, w, b: genesis.batch_norm(t, w, b, g(mean, device), g(var, device), False, 0.1, 1e-5, False),
        [data, w, b],
        device,
    )
    check_forward_backward(
        lambda t, w, b: torch.instance_norm(t, w, b, None, None, True, 0.1, 1e-5, False),
        lambda t, w, b: genesis.instance_norm(t, w, b, None, None, True, 0.1, 1e-5, False),
        [data, w, b],
        device,
    )
    check_forward_backward(
        lambda t, w, b: torch.group_norm(t, 3, w, b),
        lambda t, w, b: genesis.group_norm(t, 3, w, b),
        [data, w, b],
        device,
    )
    check_forward_backward(
        lambda t: torch.layer_norm(t, (3, 5)), lambda t: genesis.layer_norm(t, (3, 5)), [data], device
    )


def test_errors(device):
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        nn.BatchNorm3d(3).to(device)(genesis.randn(2, 3, 4, 4, device=device))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(genesis.randn(3, 4, device=device))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(4\), but got: 3"):
        nn.InstanceNorm1d(4, affine=True).to(device)(genesis.randn(2, 3, 5, device=device))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(4)(genesis.randn(2, 3, 5, device=device))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(genesis.randn(2, 3, 1, 1, device=device))
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2 dimensions\)"):
        F.local_response_norm(genesis.randn(2, 3, device=device), 2)


def test_sync_batchnorm_without_a_group_is_batchnorm(device):
    tmod = torch.nn.SyncBatchNorm(3, momentum=0.2).double()
    gmod = nn.SyncBatchNorm(3, momentum=0.2).double()
    assert without_bias(repr(gmod)) == without_bias(repr(tmod))
    assert list(gmod.state_dict()) == list(tmod.state_dict())
    gmod.to(device)
    tref = torch.nn.BatchNorm2d(3, momentum=0.2).double()  # torch's SyncBatchNorm wants a GPU: its plain form
    check_module(tref, gmod, x(2, 3, 3, 4)(), device)
    for name, buf in tref.named_buffers():
        assert_close(dict(gmod.named_buffers())[name], buf)


def test_convert_sync_batchnorm_replaces_only_batchnorms():
    model = nn.Sequential(nn.BatchNorm2d(3, affine=False), nn.Sequential(nn.BatchNorm1d(4)), nn.InstanceNorm1d(2))
    model[1][0].eval()
    weight = model[1][0].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert [type(m).__name__ for m in converted.modules()] == [
        "Sequential",
        "SyncBatchNorm",
        "Sequential",
        "SyncBatchNorm",
        "InstanceNorm1d",
    ]
    assert converted[1][0].weight is weight and not converted[1][0].training
    assert converted[0].weight is None and converted[0].num_features == 3


def test_sync_batchnorm_over_two_gloo_processes():
    import tempfile

    import dist_helpers_syncbn
    import torch.multiprocessing as mp

    url = "file://" + tempfile.mktemp(prefix="genesis-syncbn-")
    mp.spawn(dist_helpers_syncbn.sync_batchnorm, args=(2, url), nprocs=2)
