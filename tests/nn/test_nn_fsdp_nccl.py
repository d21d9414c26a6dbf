"""fully_shard on NCCL: one process per GPU (up to 4: the 4-GPU machine, nvidia-h100-x4), the same checks as
test_nn_fsdp.py's gloo tier (dist_helpers_fsdp.py) on cuda tensors: training equal to one process of the
global batch (nested, reshard or not, activation checkpointing, CPU offload, HSDP meshes, prefetch),
gradient accumulation, clip_grad_norm_, bf16 mixed precision, full state dicts; and a sharded checkpoint
saved on every GPU, loaded on half of them.

Skipped here, with the reason, where there are fewer than two GPUs or no CuPy (the NCCL binding); with
GENESIS_REQUIRE_NCCL=1 (tools/gpu-dist) that is an error instead.
"""

from __future__ import annotations

import os

import pytest
import torch.multiprocessing as mp

from device_support import HAS_CUDA


def _gpus_and_nccl() -> str | None:
    if not HAS_CUDA:
        return "no CUDA device on this machine (the FSDP NCCL tests run on the multi-GPU machine)"
    import genesis

    if genesis.cuda.device_count() < 2:
        return "the FSDP NCCL tests need two GPUs or more (nvidia-h100-x4)"
    try:
        genesis.distributed.nccl.nccl_module()
    except RuntimeError as e:
        return f"CuPy's NCCL binding cannot be used: {e}"
    return None


REASON = _gpus_and_nccl()
if REASON is not None and os.environ.get("GENESIS_REQUIRE_NCCL") == "1":
    raise RuntimeError(f"GENESIS_REQUIRE_NCCL=1, but the FSDP NCCL tests cannot run: {REASON}")
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def _world() -> int:
    import genesis

    return min(4, genesis.cuda.device_count())


def test_nccl_fsdp_training_equals_one_process_of_the_global_batch():
    import dist_helpers
    import dist_helpers_fsdp

    world = _world()
    url = f"tcp://127.0.0.1:{dist_helpers.free_port()}"
    mp.spawn(dist_helpers_fsdp.training, args=(world, url, True), nprocs=world)


def test_nccl_fsdp_checkpoint_saved_on_every_gpu_loads_on_half_and_continues(tmp_path):
    import dist_helpers
    import dist_helpers_fsdp_checkpoint as ckpt

    world, folder = _world(), str(tmp_path / "ckpt")
    mp.spawn(ckpt.save_sharded, args=(world, f"tcp://127.0.0.1:{dist_helpers.free_port()}", folder, True), nprocs=world)
    half = world // 2
    mp.spawn(
        ckpt.load_and_continue, args=(half, f"tcp://127.0.0.1:{dist_helpers.free_port()}", folder, True), nprocs=half
    )
