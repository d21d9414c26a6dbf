"""genesis.distributed on NCCL: two processes, one GPU each (the 2-GPU machine, nvidia-h200-x2).

Skipped here, with the reason, where there are fewer than two GPUs or no CuPy (the NCCL binding).
The workers are in dist_helpers_nccl.py; each checks its own results.
"""

from __future__ import annotations

import pytest
import torch.multiprocessing as mp

from device_support import HAS_CUDA


def _two_gpus_and_nccl() -> str | None:
    if not HAS_CUDA:
        return "no CUDA device on this machine (the NCCL tests run on the 2-GPU machine)"
    import genesis

    if genesis.cuda.device_count() < 2:
        return "the NCCL tests need two GPUs (nvidia-h200-x2)"
    if not genesis.distributed.is_nccl_available():
        return "CuPy's NCCL binding (cupy-cuda12x) is not installed"
    return None


REASON = _two_gpus_and_nccl()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_nccl_collectives_exact_for_several_dtypes_and_sizes_async_ordering():
    import dist_helpers
    import dist_helpers_nccl

    mp.spawn(dist_helpers_nccl.collectives, args=(2, dist_helpers.free_port()), nprocs=2)


def test_nccl_ddp_gradients_equal_the_whole_batch():
    import dist_helpers
    import dist_helpers_nccl

    mp.spawn(dist_helpers_nccl.ddp, args=(2, dist_helpers.free_port()), nprocs=2)
