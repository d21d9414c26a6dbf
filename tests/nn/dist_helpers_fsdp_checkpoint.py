"""Workers of tests/nn/test_nn_fsdp.py for sharded checkpoints: train on 3 ranks and save, then load on 2
ranks and continue; the losses and parameters must equal an uninterrupted single-process run's."""

from __future__ import annotations

import os

import dist_helpers_fsdp as helpers
from dist_helpers_fsdp import (
    assert_params_equal,
    global_batch,
    init,
    local_batch,
    loss_fn,
    make_net,
    mean_over_ranks,
    shard,
)

import genesis
import genesis.distributed as dist
import genesis.distributed.checkpoint as dcp
from genesis.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from genesis.distributed.fsdp import ShardedTensor

SAVED_STEPS, MORE_STEPS = 2, 3


def _optimizer(model: genesis.nn.Module) -> genesis.optim.Optimizer:
    return genesis.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)


def _step(model, opt, step: int, rank: int, world: int) -> float:
    opt.zero_grad()
    loss = loss_fn(model, *local_batch(50 + step, rank, world))
    loss.backward()
    opt.step()
    return mean_over_ranks(loss)


def _uninterrupted() -> tuple[list[float], genesis.nn.Module]:
    ref = make_net()
    opt = _optimizer(ref)
    losses = []
    for step in range(SAVED_STEPS + MORE_STEPS):
        opt.zero_grad()
        loss = loss_fn(ref, *global_batch(50 + step))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, ref


def save_sharded(rank: int, world: int, url: str, folder: str, cuda: bool = False) -> None:
    init(rank, world, url, cuda)
    model = shard(make_net())
    opt = _optimizer(model)
    for step in range(SAVED_STEPS):
        _step(model, opt, step, rank, world)
    model_sd, optim_sd = get_state_dict(model, opt)
    assert isinstance(model_sd["blocks.0.fc1.weight"], ShardedTensor)
    assert isinstance(optim_sd["state"]["blocks.0.fc1.weight"]["exp_avg"], ShardedTensor)
    dcp.save({"model": model_sd, "optim": optim_sd, "step": SAVED_STEPS}, checkpoint_id=folder)
    assert sorted(os.listdir(folder)) == [".metadata.json"] + [f"__{r}_0.safetensors" for r in range(world)]
    dist.barrier()
    dist.destroy_process_group()


def load_and_continue(rank: int, world: int, url: str, folder: str, cuda: bool = False) -> None:
    init(rank, world, url, cuda)
    model = shard(make_net(seed=1))  # another initialisation: everything must come from the checkpoint
    opt = _optimizer(model)
    model_sd, optim_sd = get_state_dict(model, opt)
    state = {"model": model_sd, "optim": optim_sd, "step": 0}
    dcp.load(state, checkpoint_id=folder)
    assert state["step"] == SAVED_STEPS
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    want, ref = _uninterrupted()
    for step in range(SAVED_STEPS, SAVED_STEPS + MORE_STEPS):
        got = _step(model, opt, step, rank, world)
        assert abs(got - want[step]) < helpers.TOL, (step, got, want[step])
    assert_params_equal(ref, model, helpers.TOL, "resumed on another world size")
    dist.barrier()
    dist.destroy_process_group()
