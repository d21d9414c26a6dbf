"""fully_shard (genesis.distributed.fsdp) on cpu over gloo: losses, updated parameters, gradient
accumulation, clip_grad_norm_, mixed precision and state dicts against single-process training of the
same global batch (world sizes 1 and 3, spawned processes; the workers are in dist_helpers_fsdp.py), FSDP's
own Python-level calls per parameter per step against a budget, and torch's errors in process. The NCCL tests
are test_nn_fsdp_nccl.py (GPU machine)."""

from __future__ import annotations

import dist_helpers
import dist_helpers_fsdp
import pytest
import torch.multiprocessing as mp


@pytest.mark.parametrize("world", [1, 3])
def test_fsdp_training_equals_one_process_of_the_global_batch(world):
    mp.spawn(dist_helpers_fsdp.training, args=(world, f"tcp://127.0.0.1:{dist_helpers.free_port()}"), nprocs=world)


def test_a_checkpoint_saved_on_three_ranks_loads_on_two_and_training_continues_as_uninterrupted(tmp_path):
    import dist_helpers_fsdp_checkpoint as ckpt

    folder = str(tmp_path / "ckpt")
    mp.spawn(ckpt.save_sharded, args=(3, f"tcp://127.0.0.1:{dist_helpers.free_port()}", folder), nprocs=3)
    mp.spawn(ckpt.load_and_continue, args=(2, f"tcp://127.0.0.1:{dist_helpers.free_port()}", folder), nprocs=2)


def test_int_reshard_after_forward_and_optimizer_state_from_rank0_at_world_size_four():
    import dist_helpers_fsdp_reshard as reshard

    mp.spawn(reshard.world_of_four, args=(4, f"tcp://127.0.0.1:{dist_helpers.free_port()}"), nprocs=4)


# ----------------------------------------------------------------------------- world size 1, in process: torch's errors
@pytest.fixture
def world_of_one():
    import tempfile

    import genesis.distributed as dist

    dist.init_process_group(
        "gloo", init_method="file://" + tempfile.mktemp(prefix="genesis-fsdp-"), rank=0, world_size=1
    )
    yield
    dist.destroy_process_group()


def _raises_as_torch(ours, theirs, match: str) -> None:
    """Both calls raise the same class; ours with a message matching ``match``."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(expected.type, match=match):
        ours()


def test_bad_input_raises_torchs_exceptions(world_of_one):
    import copy

    import torch
    from torch.distributed.device_mesh import init_device_mesh as torch_mesh
    from torch.distributed.fsdp import fully_shard as torch_fully_shard

    import genesis
    import genesis.nn as nn
    from genesis.distributed.device_mesh import init_device_mesh
    from genesis.distributed.fsdp import FSDPModule, fully_shard

    _raises_as_torch(
        lambda: fully_shard(nn.ModuleList([nn.Linear(2, 2)])),
        lambda: torch_fully_shard(torch.nn.ModuleList([torch.nn.Linear(2, 2)])),
        "does not support containers that do not implement forward",
    )

    class Scalar(nn.Module):
        def __init__(self, lib) -> None:
            super().__init__()
            self.scale = lib.nn.Parameter(lib.tensor(2.0))

        def forward(self, x):
            return x * self.scale

    class TorchScalar(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor(2.0))

    _raises_as_torch(
        lambda: fully_shard(Scalar(genesis)), lambda: torch_fully_shard(TorchScalar()), "scalar parameters"
    )
    _raises_as_torch(
        lambda: init_device_mesh("cpu", (2,)), lambda: torch_mesh("cpu", (2,)), "bigger than default world size 1"
    )
    _raises_as_torch(
        lambda: init_device_mesh("cpu", (1,), mesh_dim_names=("a", "b")),
        lambda: torch_mesh("cpu", (1,), mesh_dim_names=("a", "b")),
        "same length",
    )
    _raises_as_torch(
        lambda: init_device_mesh("cpu", (1,))["dp"], lambda: torch_mesh("cpu", (1,))["dp"], "without mesh_dim_names"
    )
    _raises_as_torch(
        lambda: fully_shard(nn.Linear(2, 2), mesh=init_device_mesh("cpu", (1, 1, 1), mesh_dim_names=("a", "b", "c"))),
        lambda: torch_fully_shard(
            torch.nn.Linear(2, 2), mesh=torch_mesh("cpu", (1, 1, 1), mesh_dim_names=("a", "b", "c"))
        ),
        "1D or 2D DeviceMesh",
    )
    for bad in (2, 0, 1.5):
        _raises_as_torch(
            lambda bad=bad: fully_shard(nn.Linear(2, 2), reshard_after_forward=bad),
            lambda bad=bad: torch_fully_shard(torch.nn.Linear(2, 2), reshard_after_forward=bad),
            "reshard_after_forward",
        )
    ours, theirs = fully_shard(nn.Linear(2, 3)), torch_fully_shard(torch.nn.Linear(2, 3))
    _raises_as_torch(lambda: ours.set_reshard_after_forward(1), lambda: theirs.set_reshard_after_forward(1), "bool")
    _raises_as_torch(lambda: copy.deepcopy(ours), lambda: copy.deepcopy(theirs), "deepcopy")
    _raises_as_torch(
        lambda: ours.set_modules_to_forward_prefetch([nn.Linear(1, 1)]),
        lambda: theirs.set_modules_to_forward_prefetch([torch.nn.Linear(1, 1)]),
        "Expects FSDPModule",
    )
    # a module without parameters is accepted, as by torch, and runs
    relu = fully_shard(nn.ReLU())
    assert isinstance(relu, FSDPModule) and type(relu).__name__ == "FSDPReLU"
    x = genesis.randn(4)
    assert (relu(x).numpy() == x.relu().numpy()).all()


def test_unshard_reshard_and_the_sharded_parameters_at_world_size_one(world_of_one):
    import numpy as np

    import genesis
    import genesis.nn as nn
    from genesis.distributed.fsdp import ShardedParameter, fully_shard

    genesis.manual_seed(0)
    model = nn.Linear(3, 5)
    weight = model.weight.detach().numpy().copy()
    fully_shard(model)
    assert isinstance(model.weight, ShardedParameter) and model.weight.shard_spec.global_shape == (5, 3)
    handle = model.unshard(async_op=True)
    handle.wait()
    assert not isinstance(model.weight, ShardedParameter)
    np.testing.assert_array_equal(model.weight.detach().numpy(), weight)
    model.reshard()
    assert isinstance(model.weight, ShardedParameter)
    np.testing.assert_array_equal(model.weight.full_tensor().numpy(), weight)


# ----------------------------------------------------------------------------- both devices, in process
def test_chunked_row_copies_of_the_flat_layout_match_numpy(device):
    """Parameter rows into their (world, chunk, row) slots of the flat buffers and back, padding ignored."""
    from types import SimpleNamespace

    import numpy as np

    import genesis
    from genesis.distributed.fsdp.param_group import _copy_rows, _rows_view

    world, rows, row, offset, stride = 3, 7, 5, 4, 30  # chunk 3: rank 2 holds one row and two of padding
    spec = SimpleNamespace(chunk=3, row_numel=row)
    slot = SimpleNamespace(spec=spec, offset=offset)
    values = np.random.default_rng(0).normal(size=(rows, row))
    flat = genesis.zeros(world * stride, dtype=genesis.float64, device=device)
    source = genesis.tensor(values, device=device).data  # (the copies work on NDArrays: the host-cost path)
    _copy_rows(_rows_view(flat.data, slot, world, stride), source, 3, rows, True)
    expected = np.zeros(world * stride)
    padded = np.concatenate([values, np.zeros((2, row))]).reshape(world, 3 * row)
    for r in range(world):
        expected[r * stride + offset : r * stride + offset + 3 * row] = padded[r]
    np.testing.assert_array_equal(flat.cpu().numpy(), expected)
    _copy_rows(_rows_view(flat.data, slot, world, stride), source, 3, rows, True, add=True)
    back = genesis.zeros(rows, row, dtype=genesis.float64, device=device)
    _copy_rows(back.data, _rows_view(flat.data, slot, world, stride), 3, rows, False)
    np.testing.assert_array_equal(back.cpu().numpy(), 2 * values)


class _Loopback:
    """A one-rank backend for cuda tensors (NCCL needs a GPU machine): the collectives are copies."""

    def all_gather_into_tensor(self, output, input):
        from genesis.distributed import Work

        output.copy_(input.reshape(output.shape))
        return Work.completed()

    def reduce_scatter_tensor(self, output, input, op):
        from genesis.distributed import Work

        output.copy_(input.reshape(output.shape))
        return Work.completed()

    def all_reduce(self, tensor, op):
        from genesis.distributed import Work

        return Work.completed()


def test_world_of_one_trains_as_the_bare_module_on_both_devices(world_of_one, device, monkeypatch):
    """At world size 1 fully_shard changes nothing numerically: every step equals the bare module's, with
    bf16 mixed precision against a bf16 copy too (the cuda case runs the cuda path with a loopback backend)."""
    import copy

    import numpy as np
    from dist_helpers_fsdp import make_net

    import genesis
    import genesis.distributed as dist
    from genesis.distributed.device_mesh import init_device_mesh
    from genesis.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    if device == "cuda":
        original = dist.ProcessGroup.backend_for
        monkeypatch.setattr(
            dist.ProcessGroup,
            "backend_for",
            lambda self, t: _Loopback() if t.device.type == "cuda" else original(self, t),
        )
    mesh = init_device_mesh(device, (1,))
    for policy in (MixedPrecisionPolicy(), MixedPrecisionPolicy(param_dtype=genesis.bfloat16)):
        ref, model = make_net().to(device), make_net().to(device)
        for block in model.blocks:
            fully_shard(block, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
        low = policy.param_dtype or genesis.float32
        opts = [genesis.optim.AdamW(m.parameters(), lr=1e-2) for m in (ref, model)]
        for step in range(2):
            x = genesis.randn(4, 5, device=device)
            twin = copy.deepcopy(ref).to(low)  # the reference's compute copy
            losses = []
            for m, opt in zip((twin, model), opts):
                opt.zero_grad()
                loss = (m(x.to(low)).float() ** 2).mean()
                loss.backward()
                losses.append(loss.item())
            for p, q in zip(ref.parameters(), twin.parameters()):
                p.grad = q.grad.float()
            opts[0].step()
            opts[1].step()
            assert losses[0] == losses[1], (policy, step, losses)
            for p, q in zip(ref.parameters(), model.parameters()):
                np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(), rtol=0, atol=1e-6)
