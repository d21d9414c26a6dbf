"""Worker of tests/nn/test_nn_distributed_zero.py (one spawned process per rank): genesis'
ZeroRedundancyOptimizer beside torch's, both behind their own DistributedDataParallel on the same gloo
group, and a single-process optimizer on the whole batch, all from the same weights and data."""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as tdist
from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero

import genesis
import genesis.distributed as dist
import genesis.nn as nn
from genesis.distributed.optim import ZeroRedundancyOptimizer

BATCH = 12  # divides by 1..4 ranks
WIDTHS = [(6, 16), (16, 16), (16, 3), (3, 2)]  # the last layer joins the optimizer later (add_param_group)


def _models(world: int) -> tuple:
    rng = np.random.default_rng(0)  # the same weights on every rank
    ours, theirs = [], []
    for i, (n_in, n_out) in enumerate(WIDTHS):
        g, t = nn.Linear(n_in, n_out), torch.nn.Linear(n_in, n_out).double()
        for gp, tp in ((g.weight, t.weight), (g.bias, t.bias)):
            values = rng.normal(size=tuple(tp.shape))
            gp.detach().copy_(genesis.tensor(values))
            tp.data.copy_(torch.from_numpy(values))
        ours += [g] + ([nn.Tanh()] if i < len(WIDTHS) - 1 else [])
        theirs += [t] + ([torch.nn.Tanh()] if i < len(WIDTHS) - 1 else [])
    return nn.Sequential(*ours), torch.nn.Sequential(*theirs)


def _groups(layers: list, late: bool = False) -> list[dict]:
    """Weights and biases in two groups with their own hyper-parameters; ``late``: the last layer's."""
    layers = layers[-1:] if late else layers[:-1]
    return [
        {"params": [m.weight for m in layers], "weight_decay": 0.1},
        {"params": [m.bias for m in layers], "lr": 2e-2, "weight_decay": 0.0},
    ]


def _linears(model) -> list:
    return [m for m in model if hasattr(m, "weight")]


def _close(ours, theirs, what: str) -> None:
    """Parameters equal to float64 rounding (genesis and torch tensors both have detach().numpy())."""
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(
            a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=what + str(i)
        )


def _share_indices(zero, params) -> list[list[list[int]]]:
    """Per rank, per group: the global indices of that rank's parameters (the partition, comparable)."""
    index = {id(p): i for i, p in enumerate(params)}
    return [[sorted(index[id(p)] for p in g["params"]) for g in groups] for groups in zero._partition_parameters()]


def zero(rank: int, world: int, init_method: str) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    genesis.set_default_dtype(genesis.float64)
    for bucket_view in (False, True):
        _against_torch_and_one_process(rank, world, bucket_view)
    dist.barrier()
    dist.destroy_process_group()


def _against_torch_and_one_process(rank: int, world: int, bucket_view: bool) -> None:
    model, tmodel = _models(world)
    reference, _ = _models(world)
    ddp = nn.parallel.DistributedDataParallel(model)
    tddp = torch.nn.parallel.DistributedDataParallel(tmodel)
    ours = ZeroRedundancyOptimizer(
        _groups(_linears(model)), genesis.optim.AdamW, parameters_as_bucket_view=bucket_view, lr=1e-2
    )
    theirs = TorchZero(_groups(_linears(tmodel)), torch.optim.AdamW, parameters_as_bucket_view=bucket_view, lr=1e-2)
    single = genesis.optim.AdamW(_groups(_linears(reference)), lr=1e-2)
    gparams = [p for g in ours.param_groups for p in g["params"]]
    tparams = [p for g in theirs.param_groups for p in g["params"]]
    assert _share_indices(ours, gparams) == _share_indices(theirs, tparams), "torch's partition"
    shard = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
    for step in range(6):
        data = np.random.default_rng([1, step])
        x, y = data.normal(size=(BATCH, 6)), data.normal(size=(BATCH, 2))
        if step == 2:  # a scheduler's change on the exposed groups reaches the shards
            for opt in (ours, theirs, single):
                opt.param_groups[0]["lr"] *= 0.5
        if step == 3:  # the last layer joins: its parameters are shared out too
            ours.add_param_group(_groups(_linears(model), late=True)[0])
            theirs.add_param_group(_groups(_linears(tmodel), late=True)[0])
            single.add_param_group(_groups(_linears(reference), late=True)[0])
        for opt in (ours, theirs, single):
            opt.zero_grad()
        ((ddp(genesis.tensor(x[shard])) - genesis.tensor(y[shard])) ** 2).mean().backward()
        ((tddp(torch.from_numpy(x[shard])) - torch.from_numpy(y[shard])) ** 2).mean().backward()
        ((reference(genesis.tensor(x)) - genesis.tensor(y)) ** 2).mean().backward()
        for opt in (ours, theirs, single):
            opt.step()
        _close(list(model.parameters()), list(tmodel.parameters()), f"torch's ZeRO, step {step}, parameter ")
        _close(list(model.parameters()), list(reference.parameters()), f"one process, step {step}")
    assert [len(g) for g in ours.param_groups] == [len(g) for g in theirs.param_groups]
    assert [g["lr"] for g in ours.param_groups] == [g["lr"] for g in theirs.param_groups]

    # memory: this rank holds the state of its share only (Adam: two moments the size of each parameter)
    mine = [p for g in ours._partition_parameters()[rank] for p in g["params"]]
    assert {id(p) for p in ours.optim.state} == {id(p) for p in mine} and ours.state is ours.optim.state
    held = sum(v.numel() for s in ours.optim.state.values() for k, v in s.items() if k != "step")
    assert held == 2 * sum(p.numel() for p in mine), (held, mine)
    assert held == sum(v.numel() for s in theirs.optim.state.values() for k, v in s.items() if k != "step")
    everyone = [0] * world
    everyone[rank] = held
    counts = genesis.tensor(everyone)
    dist.all_reduce(counts)
    every = [p for g in ours.param_groups for p in g["params"]]  # the late layer's included
    assert int(counts.sum().item()) == 2 * sum(p.numel() for p in every), "the shares cover the model once"

    # the whole state on rank 0 equals the single-process optimizer's, and torch's
    for opt in (ours, theirs):
        opt.consolidate_state_dict(to=0)
    if rank == 0:
        whole, expected, torch_whole = ours.state_dict(), single.state_dict(), theirs.state_dict()
        assert list(whole["state"]) == list(expected["state"]) == list(torch_whole["state"])
        for i, s in expected["state"].items():
            for key in ("exp_avg", "exp_avg_sq", "step"):
                np.testing.assert_allclose(whole["state"][i][key].numpy(), s[key].numpy(), rtol=1e-9, atol=1e-14)
                np.testing.assert_allclose(
                    whole["state"][i][key].numpy(), torch_whole["state"][i][key].numpy(), rtol=1e-9, atol=1e-14
                )
        assert [g["params"] for g in whole["param_groups"]] == [g["params"] for g in torch_whole["param_groups"]]
        assert [g["lr"] for g in whole["param_groups"]] == [g["lr"] for g in expected["param_groups"]]
    else:
        try:
            ours.state_dict()
        except RuntimeError as e:
            assert "consolidate_state_dict" in str(e), e
        else:
            raise AssertionError("state_dict before consolidating must raise, as torch's")

    # load the whole state on every rank into a fresh optimizer: it keeps its share and trains on as before
    again = ZeroRedundancyOptimizer(
        _groups(_linears(model)) + _groups(_linears(model), late=True)[:1],
        genesis.optim.AdamW,
        parameters_as_bucket_view=bucket_view,
        lr=1e-2,
    )
    saved = single.state_dict()  # copied: a loaded state is not copied (torch's), and both step on from it
    saved["state"] = {i: {k: v.clone() for k, v in s.items()} for i, s in saved["state"].items()}
    again.load_state_dict(saved)
    assert {id(p) for p in again.state} == {id(p) for p in mine}
    assert [g["lr"] for g in again.param_groups] == [g["lr"] for g in single.param_groups]
    for step in range(6, 8):
        data = np.random.default_rng([1, step])
        x, y = data.normal(size=(BATCH, 6)), data.normal(size=(BATCH, 2))
        again.zero_grad()
        single.zero_grad()
        ((ddp(genesis.tensor(x[shard])) - genesis.tensor(y[shard])) ** 2).mean().backward()
        ((reference(genesis.tensor(x)) - genesis.tensor(y)) ** 2).mean().backward()
        again.step()
        single.step()
        _close(list(model.parameters()), list(reference.parameters()), f"after load_state_dict, step {step}")
    tdist.barrier()
