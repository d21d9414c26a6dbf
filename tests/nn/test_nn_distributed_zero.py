"""ZeroRedundancyOptimizer (genesis.distributed.optim): at world size 1 in this process (torch's errors,
a plain optimizer's steps), and at world size 3 over gloo in spawned processes against torch's
ZeroRedundancyOptimizer and a single-process optimizer on the concatenated batch (dist_helpers_zero)."""

from __future__ import annotations

import tempfile

import dist_helpers
import dist_helpers_zero
import numpy as np
import pytest
import torch.multiprocessing as mp

import genesis
import genesis.distributed as dist
import genesis.nn as nn
from genesis.distributed.optim import ZeroRedundancyOptimizer


@pytest.fixture
def world_of_one():
    url = "file://" + tempfile.mktemp(prefix="genesis-zero-")
    dist.init_process_group("gloo", init_method=url, rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_arguments_refused_as_torch(world_of_one):
    model = nn.Linear(3, 2)
    with pytest.raises(NotImplementedError, match="overlap_with_ddp"):
        ZeroRedundancyOptimizer(model.parameters(), genesis.optim.SGD, overlap_with_ddp=True, lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        ZeroRedundancyOptimizer(model.weight, genesis.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="did not receive any parameters"):
        ZeroRedundancyOptimizer([], genesis.optim.SGD, lr=0.1)
    with pytest.raises(ValueError, match="same dense type"):
        ZeroRedundancyOptimizer([model.weight, genesis.zeros(2, dtype=genesis.float64)], genesis.optim.SGD, lr=0.1)
    opt = ZeroRedundancyOptimizer(model.parameters(), genesis.optim.SGD, lr=0.1)
    with pytest.raises(RuntimeError, match=r"consolidate_state_dict\(to=0\)"):
        opt.state_dict()


@pytest.mark.parametrize("bucket_view", [False, True])
def test_world_of_one_steps_as_the_wrapped_optimizer(world_of_one, bucket_view):
    genesis.manual_seed(0)
    model, twin = nn.Linear(5, 4), nn.Linear(5, 4)
    twin.load_state_dict(model.state_dict())
    zero = ZeroRedundancyOptimizer(
        model.parameters(), genesis.optim.Adam, parameters_as_bucket_view=bucket_view, lr=1e-2, betas=(0.8, 0.9)
    )
    plain = genesis.optim.Adam(twin.parameters(), lr=1e-2, betas=(0.8, 0.9))
    assert zero.param_groups[0]["betas"] == (0.8, 0.9) and zero.param_groups[0]["eps"] == 1e-8  # synced back
    for _ in range(3):
        x = genesis.randn(8, 5)
        for m, opt in ((model, zero), (twin, plain)):
            opt.zero_grad()
            (m(x) ** 2).mean().backward()
            opt.step()
        for p, q in zip(model.parameters(), twin.parameters()):
            assert np.array_equal(p.detach().numpy(), q.detach().numpy())
    zero.consolidate_state_dict()
    saved, expected = zero.state_dict(), plain.state_dict()
    assert list(saved["state"]) == list(expected["state"]) == [0, 1]
    for i in expected["state"]:
        assert np.array_equal(saved["state"][i]["exp_avg"].numpy(), expected["state"][i]["exp_avg"].numpy())


def test_shards_match_torch_and_one_process_at_world_size_three():
    world = 3
    mp.spawn(dist_helpers_zero.zero, args=(world, f"tcp://127.0.0.1:{dist_helpers.free_port()}"), nprocs=world)
