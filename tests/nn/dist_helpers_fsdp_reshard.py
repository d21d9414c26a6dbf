"""Workers of tests/nn/test_nn_fsdp.py at world size 4: ``reshard_after_forward`` as an int (parameters kept
sharded over N consecutive ranks between forward and backward) and set_optimizer_state_dict from rank 0's
full state dict (``broadcast_from_rank0``), each against single-process training of the same global batch."""

from __future__ import annotations

import warnings

import dist_helpers_fsdp as helpers
from dist_helpers_fsdp import (
    _train_and_compare,
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
from genesis.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from genesis.distributed.fsdp import ShardedParameter


def _kept_between_forward_and_backward(rank: int, world: int, n: int) -> None:
    """After forward each block keeps world / n of the ``world`` flat shards (a 1/n of the parameters),
    its post-forward group is the n consecutive ranks around this one, and backward frees them."""
    model = shard(make_net(), reshard_after_forward=n)
    loss = loss_fn(model, *local_batch(0, rank, world))
    for block in model.blocks:
        group = block._fsdp_state.group
        assert group.post_forward_group.ranks == list(range(rank // n * n, rank // n * n + n))
        assert group._kept is not None and group._kept.numel() == world // n * group.numel
        assert all(isinstance(p, ShardedParameter) for p in block.parameters())
    loss.backward()
    assert all(b._fsdp_state.group._kept is None for b in model.blocks)
    with genesis.no_grad():  # nothing to keep for a backward that will not come
        loss_fn(model, *local_batch(0, rank, world))
    assert all(b._fsdp_state.group._kept is None for b in model.blocks)
    # a forward whose backward never comes, then the parameters change: the next forward sees the new ones
    loss_fn(model, *local_batch(0, rank, world))
    ref = make_net()
    with genesis.no_grad():
        for p in (*model.parameters(), *ref.parameters()):
            p.mul_(0.5)
        got = mean_over_ranks(loss_fn(model, *local_batch(1, rank, world)))
        want = loss_fn(ref, *global_batch(1)).item()
    assert abs(got - want) < helpers.TOL, (got, want)


def _int_reshard_after_forward(rank: int, world: int) -> None:
    _kept_between_forward_and_backward(rank, world, 2)
    _train_and_compare(rank, world, True, 2, "adamw")  # type: ignore[arg-type]
    _train_and_compare(rank, world, True, 2, "sgd", "non_reentrant")  # type: ignore[arg-type]
    with warnings.catch_warnings(record=True) as caught:  # torch's reading: 1 is False, the world True
        warnings.simplefilter("always")
        one = shard(make_net(), reshard_after_forward=1)
    assert any("reshard_after_forward=1 (int)" in str(w.message) for w in caught)
    whole = shard(make_net(), reshard_after_forward=world)
    for model, kept in ((one, False), (whole, True)):
        state = model.blocks[0]._fsdp_state
        assert state.reshard_after_forward is kept and state.group.post_forward_group is None


def _optimizer_from_rank0(rank: int, world: int) -> None:
    """Rank 0's full model and optimizer state dicts, broadcast into a fresh sharded model and optimizer:
    the next steps equal an uninterrupted single-process run's."""
    ref, model = make_net(), shard(make_net())
    opt_ref = genesis.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1)
    opt = genesis.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for step in range(2):
        for m, o, batch in ((ref, opt_ref, global_batch(60 + step)), (model, opt, local_batch(60 + step, rank, world))):
            o.zero_grad()
            loss_fn(m, *batch).backward()
            o.step()
    saving = StateDictOptions(full_state_dict=True, cpu_offload=True)
    full_model, full_optim = (
        get_model_state_dict(model, options=saving),
        get_optimizer_state_dict(model, opt, options=saving),
    )
    assert (full_optim != {}) == (rank == 0)
    fresh = shard(make_net(seed=1))
    fresh_opt = genesis.optim.AdamW(fresh.parameters(), lr=0.5, weight_decay=0.0)  # replaced by rank 0's groups
    loading = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    set_model_state_dict(fresh, full_model, options=loading)
    set_optimizer_state_dict(fresh, fresh_opt, full_optim, options=loading)
    assert fresh_opt.param_groups[0]["lr"] == 1e-2 and fresh_opt.param_groups[0]["betas"] == (0.9, 0.999)
    for p in fresh.parameters():  # each rank holds its rows of the moments
        assert tuple(fresh_opt.state[p]["exp_avg"].shape) == tuple(p.to_local().shape)
    for step in range(2, 4):
        opt_ref.zero_grad()
        want = loss_fn(ref, *global_batch(60 + step))
        want.backward()
        opt_ref.step()
        fresh_opt.zero_grad()
        got = loss_fn(fresh, *local_batch(60 + step, rank, world))
        got.backward()
        fresh_opt.step()
        assert abs(mean_over_ranks(got) - want.item()) < helpers.TOL, (step, got.item(), want.item())
    assert_params_equal(ref, fresh, helpers.TOL, "optimizer state broadcast from rank 0")


def world_of_four(rank: int, world: int, url: str) -> None:
    init(rank, world, url)
    _int_reshard_after_forward(rank, world)
    _optimizer_from_rank0(rank, world)
    dist.barrier()
    dist.destroy_process_group()
