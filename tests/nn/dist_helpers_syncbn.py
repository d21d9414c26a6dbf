"""Worker of tests/nn/test_nn_norm_more.py's SyncBatchNorm test: each rank (a spawned process) normalises its
part of a batch and checks outputs, gradients and running statistics against torch's BatchNorm on the whole
batch, computed in the same process."""

from __future__ import annotations

import numpy as np
import torch

import genesis
import genesis.distributed as dist
import genesis.nn as nn


def _close(got: genesis.Tensor, want: torch.Tensor, what: str) -> None:
    np.testing.assert_allclose(
        np.asarray(got.detach().numpy()), want.detach().numpy(), rtol=1e-7, atol=1e-9, err_msg=what
    )


def sync_batchnorm(rank: int, world: int, init_method: str) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    gen = torch.Generator().manual_seed(0)  # the same whole batch and loss weights on every rank
    data = torch.randn(4 * world, 3, 5, dtype=torch.float64, generator=gen) * 2 + 1
    weights = torch.randn(4 * world, 3, 5, dtype=torch.float64, generator=gen)
    reference = torch.nn.BatchNorm1d(3, momentum=0.3).double()
    with torch.no_grad():
        reference.weight.uniform_(0.5, 1.5, generator=gen)
        reference.bias.uniform_(-1, 1, generator=gen)
    tx = data.clone().requires_grad_()
    (reference(tx) * weights).sum().backward()

    model = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(3, momentum=0.3))).double()
    assert type(model[0]) is nn.SyncBatchNorm
    with genesis.no_grad():
        model[0].weight.copy_(genesis.tensor(reference.weight.detach().numpy()))
        model[0].bias.copy_(genesis.tensor(reference.bias.detach().numpy()))
    part = slice(4 * rank, 4 * rank + 4)
    x = genesis.tensor(data[part].numpy(), requires_grad=True)
    out = model(x)
    (out * genesis.tensor(weights[part].numpy())).sum().backward()
    whole = torch.nn.functional.batch_norm(data, None, None, reference.weight, reference.bias, True, 0.0, 1e-5)
    _close(out, whole[part], "output")
    _close(x.grad, tx.grad[part], "input gradient")
    for name in ("weight", "bias"):  # each rank holds its part of the sum (DDP would all-reduce them)
        grad = getattr(model[0], name).grad.detach().clone()
        dist.all_reduce(grad)
        _close(grad, getattr(reference, name).grad, f"{name} gradient")
    _close(model[0].running_mean, reference.running_mean, "running_mean")
    _close(model[0].running_var, reference.running_var, "running_var")
    assert int(model[0].num_batches_tracked.item()) == 1
    model.eval()  # eval: the running statistics, no communication
    reference.eval()
    _close(model(genesis.tensor(data[part].numpy())), reference(data[part]), "eval output")
    dist.barrier()
    dist.destroy_process_group()
