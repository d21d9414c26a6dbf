"""fully_shard (genesis.distributed.fsdp) on cpu over gloo: losses, updated parameters, gradient
accumulation, clip_grad_norm_, mixed precision and state dicts against single-process training of the
same global batch (world sizes 1 and 3, spawned processes; the workers are in dist_helpers_fsdp.py), and
torch's errors in process. The NCCL tests are test_nn_fsdp_nccl.py (GPU machine)."""

from __future__ import annotations

import dist_helpers
import dist_helpers_fsdp
import pytest
import torch.multiprocessing as mp


@pytest.mark.parametrize("world", [1, 3])
def test_fsdp_training_equals_one_process_of_the_global_batch(world):
    mp.spawn(dist_helpers_fsdp.training, args=(world, f"tcp://127.0.0.1:{dist_helpers.free_port()}"), nprocs=world)
