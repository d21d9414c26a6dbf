"""nn.modules.batchnorm._NormBase: torch's base of the batch and instance norms (hierarchy, resets, the
num_batches_tracked fill-in of old checkpoints), compared with torch."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, g

import genesis
import genesis.nn as nn
from genesis.nn.modules.batchnorm import _BatchNorm, _NormBase
from genesis.nn.modules.instancenorm import _InstanceNorm


def test_hierarchy_is_torchs():
    for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"):
        assert issubclass(getattr(nn, name), _BatchNorm) and issubclass(getattr(nn, name), _NormBase)
        assert issubclass(getattr(torch.nn, name), torch.nn.modules.batchnorm._BatchNorm)
    for name in ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"):
        assert issubclass(getattr(nn, name), _InstanceNorm) and issubclass(getattr(nn, name), _NormBase)
        assert not issubclass(getattr(nn, name), _BatchNorm)
        assert not issubclass(getattr(torch.nn, name), torch.nn.modules.batchnorm._BatchNorm)


def test_base_wants_a_subclass_check():
    with pytest.raises(NotImplementedError):
        _NormBase(3)._check_input_dim(genesis.randn(2, 3))


@pytest.mark.parametrize("cls", ["BatchNorm2d", "InstanceNorm2d"])
def test_resets_match_torch(device, cls):
    kwargs = dict(affine=True, track_running_stats=True)
    tmod, gmod = getattr(torch.nn, cls)(3, **kwargs).double(), getattr(nn, cls)(3, **kwargs).double().to(device)
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64) * 3 + 1
    tmod(x), gmod(g(x, device))
    with torch.no_grad():
        tmod.weight.mul_(2)
    gmod.load_state_dict(tmod.state_dict())
    assert_close(gmod.running_mean, tmod.running_mean)
    tmod.reset_running_stats(), gmod.reset_running_stats()
    for name, buf in tmod.state_dict().items():
        assert_close(gmod.state_dict()[name], buf)
    assert_close(gmod.weight, tmod.weight)  # reset_running_stats leaves the parameters
    tmod.reset_parameters(), gmod.reset_parameters()
    for name, value in tmod.state_dict().items():
        assert_close(gmod.state_dict()[name], value)


def test_checkpoint_without_num_batches_tracked_loads_as_torch():
    """A state dict from before the counter (no version metadata): torch keeps the module's own counter."""
    tmod, gmod = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    gmod(genesis.randn(4, 3))
    old = {k: v for k, v in tmod.state_dict().items() if k != "num_batches_tracked"}  # a plain dict: no version
    assert not tmod.load_state_dict(old).missing_keys
    result = gmod.load_state_dict(old)
    assert not result.missing_keys and not result.unexpected_keys
    assert gmod.num_batches_tracked.item() == 1
    no_stats = nn.BatchNorm1d(3, track_running_stats=False)
    assert not no_stats.load_state_dict({"weight": genesis.ones(3), "bias": genesis.zeros(3)}).missing_keys
