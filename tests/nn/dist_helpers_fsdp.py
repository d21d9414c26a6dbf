"""Worker functions of tests/nn/test_nn_fsdp.py: each runs in a spawned process (one per rank) over gloo and
checks its own results against single-process training of the same global batch, computed in the worker
(an AssertionError reaches the parent through torch.multiprocessing.spawn)."""

from __future__ import annotations

import copy
import os

import numpy as np

import genesis
import genesis.distributed as dist
import genesis.nn as nn
from genesis.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
)
from genesis.distributed.device_mesh import init_device_mesh
from genesis.distributed.fsdp import CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, ShardedParameter, fully_shard
from genesis.utils.checkpoint import checkpoint

GLOBAL_BATCH = 12  # divides by every world size used (1, 2, 3, 4)
DEVICE = "cpu"  # "cuda" in the NCCL workers (each process' current device is its GPU)
TOL = 1e-6  # losses and parameters against one process (cuda: its own summation orders, 1e-5)


class Block(nn.Module):
    """A pre-norm residual MLP block: the shapes (7, 14) do not divide by 3 (padded shards)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x: genesis.Tensor) -> genesis.Tensor:
        return x + self.fc2(self.fc1(self.norm(x)).tanh())


class Net(nn.Module):
    """Input projection, residual blocks, a head of 2 outputs (a (2, 7) weight: rank 2 of 3 holds no row)."""

    def __init__(self, d: int = 7, n: int = 3) -> None:
        super().__init__()
        self.checkpointing: str | None = None  # "reentrant" / "non_reentrant": activation checkpointing
        self.inp = nn.Linear(5, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, 2)

    def forward(self, x: genesis.Tensor) -> genesis.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            if self.checkpointing is None:
                h = block(h)
            else:
                h = checkpoint(block, h, use_reentrant=self.checkpointing == "reentrant")
        return self.head(h)


def make_net(seed: int = 0, dtype: genesis.dtype = genesis.float32) -> Net:
    genesis.manual_seed(seed)
    return Net().to(device=DEVICE, dtype=dtype)


def global_batch(step: int, dtype: genesis.dtype = genesis.float32) -> tuple[genesis.Tensor, genesis.Tensor]:
    rng = np.random.default_rng(100 + step)
    x, y = rng.normal(size=(GLOBAL_BATCH, 5)), rng.normal(size=(GLOBAL_BATCH, 2))
    return genesis.tensor(x, dtype=dtype, device=DEVICE), genesis.tensor(y, dtype=dtype, device=DEVICE)


def local_batch(step: int, rank: int, world: int, dtype: genesis.dtype = genesis.float32) -> tuple:
    x, y = global_batch(step, dtype)
    n = GLOBAL_BATCH // world
    return x[rank * n : (rank + 1) * n], y[rank * n : (rank + 1) * n]


def loss_fn(model: nn.Module, x: genesis.Tensor, y: genesis.Tensor) -> genesis.Tensor:
    return ((model(x).float() - y.float()) ** 2).mean()


def mean_over_ranks(value: genesis.Tensor) -> float:
    t = value.detach().float().reshape(1).clone()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    return float(t.item())


def shard(model: Net, nested: bool = True, **kwargs) -> Net:
    if nested:
        for block in model.blocks:
            fully_shard(block, **kwargs)
    fully_shard(model, **kwargs)
    return model


def assert_params_equal(ref: nn.Module, model: nn.Module, atol: float, what: str) -> None:
    full = {k: v.full_tensor() if isinstance(v, ShardedParameter) else v for k, v in model.named_parameters()}
    for name, p in ref.named_parameters():
        got, want = full[name].float().cpu().numpy(), p.detach().float().cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=atol, err_msg=f"{what}: {name}")


def init(rank: int, world: int, url: str, cuda: bool = False) -> None:
    """Join the group: gloo on cpu, or NCCL with this rank's GPU as the current device."""
    global DEVICE, TOL
    if not cuda:
        dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
        return
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # NVLink multicast off, as the device notes require
    genesis.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=url, rank=rank, world_size=world)
    DEVICE, TOL = "cuda", 1e-5


def _finish() -> None:
    dist.barrier()
    dist.destroy_process_group()


# ----------------------------------------------------------------------------- training equals one process
def _train_and_compare(
    rank: int, world: int, nested: bool, reshard: bool | None, opt_name: str, checkpointing: str | None = None, **kw
) -> None:
    ref, model = make_net(), shard(make_net(), nested=nested, reshard_after_forward=reshard, **kw)
    model.checkpointing = checkpointing
    assert isinstance(model, FSDPModule) and type(model).__name__ == "FSDPNet"
    assert nested == isinstance(model.blocks[0], FSDPModule)
    assert all(isinstance(p, ShardedParameter) for p in model.parameters())
    make_opt = {
        "adamw": lambda ps: genesis.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
        "adamw_foreach": lambda ps: genesis.optim.AdamW(ps, lr=1e-2, foreach=True),
        "sgd": lambda ps: genesis.optim.SGD(ps, lr=0.05, momentum=0.9),
    }[opt_name]
    opt_ref, opt = make_opt(ref.parameters()), make_opt(model.parameters())
    for step in range(3):
        x, y = global_batch(step)
        opt_ref.zero_grad()
        want = loss_fn(ref, x, y)
        want.backward()
        opt_ref.step()
        opt.zero_grad()
        got = loss_fn(model, *local_batch(step, rank, world))
        got.backward()
        opt.step()
        what = (step, nested, reshard, opt_name, checkpointing, kw)
        assert abs(mean_over_ranks(got) - want.item()) < TOL, what
        assert all(isinstance(p, ShardedParameter) for p in model.parameters())  # resharded after backward
    assert_params_equal(ref, model, TOL, f"{what}")


def _grad_accumulation(rank: int, world: int) -> None:
    """Two micro-batches, the first without synchronisation: the same step as one process over both."""
    ref, model = make_net(), shard(make_net())
    opt_ref, opt = genesis.optim.SGD(ref.parameters(), lr=0.1), genesis.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt_ref.zero_grad()
        opt.zero_grad()
        for micro in range(2):
            x, y = global_batch(10 * step + micro)
            loss_fn(ref, x, y).backward()
            model.set_requires_gradient_sync(micro == 1)
            loss_fn(model, *local_batch(10 * step + micro, rank, world)).backward()
            if micro == 0:
                assert all(p.grad is None for p in model.parameters())  # nothing reduced yet
        opt_ref.step()
        opt.step()
    assert_params_equal(ref, model, TOL, "gradient accumulation")


def _clip_grad_norm(rank: int, world: int) -> None:
    """clip_grad_norm_ over the shards' gradients gives the global norm, and clips as one process does."""
    ref, model = make_net(), shard(make_net())
    opt_ref, opt = genesis.optim.SGD(ref.parameters(), lr=0.5), genesis.optim.SGD(model.parameters(), lr=0.5)
    for step in range(2):
        x, y = global_batch(20 + step)
        opt_ref.zero_grad()
        (10 * loss_fn(ref, x, y)).backward()
        want = nn.utils.clip_grad_norm_(ref.parameters(), max_norm=0.3)
        opt_ref.step()
        opt.zero_grad()
        (10 * loss_fn(model, *local_batch(20 + step, rank, world))).backward()
        got = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.3)
        opt.step()
        assert want.item() > 0.3  # the clipping is exercised
        assert abs(got.item() - want.item()) < TOL * max(1.0, want.item()), (got.item(), want.item())
        inf_ref = nn.utils.clip_grad_norm_(ref.parameters(), max_norm=1e9, norm_type=float("inf"))
        inf = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e9, norm_type=float("inf"))
        assert abs(inf.item() - inf_ref.item()) < TOL / 10, (inf.item(), inf_ref.item())
    assert_params_equal(ref, model, TOL, "clip_grad_norm_")


def _mixed_precision(rank: int, world: int) -> None:
    """bf16 compute, fp32 reduction and master weights, against one process doing the same."""
    ref, model = make_net(), make_net()
    policy = MixedPrecisionPolicy(param_dtype=genesis.bfloat16, reduce_dtype=genesis.float32)
    shard(model, mp_policy=policy)
    opt_ref, opt = genesis.optim.AdamW(ref.parameters(), lr=1e-2), genesis.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(3):
        x, y = global_batch(30 + step)
        low = copy.deepcopy(ref).to(genesis.bfloat16)  # the reference's bf16 compute copy
        want = loss_fn(low, x.to(genesis.bfloat16), y)
        want.backward()
        for p, q in zip(ref.parameters(), low.parameters()):
            p.grad = q.grad.float()
        opt_ref.step()
        opt_ref.zero_grad()
        opt.zero_grad()
        got = loss_fn(model, *local_batch(30 + step, rank, world))
        got.backward()
        assert all(p.dtype == genesis.float32 and p.grad.dtype == genesis.float32 for p in model.parameters())
        opt.step()
        assert abs(mean_over_ranks(got) - want.item()) < 2e-2 * max(1.0, abs(want.item())), (got.item(), want.item())
    assert_params_equal(ref, model, 3e-2, "bf16 mixed precision")


def _full_state_dict(rank: int, world: int) -> None:
    """get_model_state_dict(full_state_dict=True, cpu_offload=True): rank 0 gets the whole model, equal to
    one process'; set_model_state_dict(broadcast_from_rank0=True) loads it back on every rank."""
    ref, model = make_net(), shard(make_net())
    opt_ref, opt = genesis.optim.AdamW(ref.parameters(), lr=1e-2), genesis.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = global_batch(40)
    loss_fn(ref, x, y).backward()
    opt_ref.step()
    loss_fn(model, *local_batch(40, rank, world)).backward()
    opt.step()
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    full = get_model_state_dict(model, options=options)
    full_optim = get_optimizer_state_dict(model, opt, options=options)
    if rank == 0:
        want = ref.state_dict()
        assert list(full) == list(want)
        for k in want:
            np.testing.assert_allclose(full[k].numpy(), want[k].cpu().numpy(), rtol=0, atol=TOL, err_msg=k)
        ref_state = opt_ref.state_dict()["state"]
        names = [n for n, _ in ref.named_parameters()]
        for i, name in enumerate(names):
            for key in ("exp_avg", "exp_avg_sq"):
                got = full_optim["state"][name][key].numpy()
                np.testing.assert_allclose(got, ref_state[i][key].cpu().numpy(), rtol=0, atol=TOL, err_msg=name)
    else:
        assert full == {}
    # rank 0's full state dict, broadcast, replaces every rank's shards
    fresh = shard(make_net(seed=1))
    set_model_state_dict(
        fresh, full if rank == 0 else {}, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
    )
    assert_params_equal(ref, fresh, TOL, "set_model_state_dict from rank 0")


def _device_mesh_as_torch(rank: int, world: int) -> None:
    """The 1-D and 2-D meshes give torch's ranks, sizes and slices (torch's mesh over the same gloo world)."""
    from torch.distributed.device_mesh import init_device_mesh as torch_mesh

    for shape, names in [
        ((world,), ("dp",)),
        ((1, world), ("replicate", "shard")),
        ((world, 1), ("replicate", "shard")),
    ]:
        ours, theirs = (
            init_device_mesh("cpu", shape, mesh_dim_names=names),
            torch_mesh("cpu", shape, mesh_dim_names=names),
        )
        assert ours.mesh.tolist() == theirs.mesh.tolist() and ours.ndim == theirs.ndim and ours.size() == theirs.size()
        for name in names:
            assert ours.get_local_rank(name) == theirs.get_local_rank(name), (shape, name)
            assert ours.size(names.index(name)) == theirs.size(names.index(name))
            assert ours[name].mesh.tolist() == theirs[name].mesh.tolist(), (shape, name)
            assert ours.get_group(name).size() == theirs.get_group(name).size()
        assert ours.get_coordinate() == theirs.get_coordinate()


def _prefetch(rank: int, world: int) -> None:
    """Once the first forward has recorded the order, a block's backward has the previous block's all-gather
    issued, and from the second iteration on a block's forward the next one's; the explicit lists
    (set_modules_to_forward_prefetch / set_modules_to_backward_prefetch) replace the recorded order."""
    model = shard(make_net())
    blocks = list(model.blocks)
    seen: dict[str, bool] = {}

    def started(i: int) -> bool:
        group = blocks[i]._fsdp_state.group
        return group._unshard is not None or group.is_unsharded

    def in_forward(module, args, output):
        seen["forward"] = started(2)
        output.register_hook(lambda grad: seen.__setitem__("backward", started(0)))

    blocks[1].fc1.register_forward_hook(in_forward)
    for step in range(3):
        if step == 2:
            blocks[1].set_modules_to_forward_prefetch([])
            blocks[1].set_modules_to_backward_prefetch([blocks[0]])
        seen.clear()
        loss_fn(model, *local_batch(step, rank, world)).backward()
        assert seen == {"forward": step == 1, "backward": True}, (step, seen)
        assert not any(started(i) for i in range(3))  # everything freed after backward


def _global_shapes(rank: int, world: int) -> None:
    """Sharded parameters report the global shape / size / numel / dim, as torch's DTensor parameters do
    (torch's fully_shard over the same gloo world), while to_local(), the gradients and the optimizer
    state are this rank's rows; state-dict values report the global shape too."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh as torch_mesh
    from torch.distributed.fsdp import fully_shard as torch_fully_shard

    ref, model = make_net(), shard(make_net())
    # A cpu mesh, as the gloo world is: torch's default mesh is on cuda wherever a GPU is present, and refuses a
    # world that the GPUs do not divide (3 ranks on a 2-GPU machine).
    theirs = torch_fully_shard(torch.nn.Linear(5, 7), mesh=torch_mesh("cpu", (world,)))
    for p in (model.inp.weight, model.inp.bias):
        q = theirs.weight if p.ndim == 2 else theirs.bias
        assert tuple(p.shape) == tuple(q.shape) and p.numel() == q.numel() and p.dim() == q.dim() == p.ndim
        assert tuple(p.to_local().shape) == tuple(q.to_local().shape) and p.size(0) == q.size(0)
    for (name, want), p in zip(ref.named_parameters(), model.parameters()):
        assert tuple(p.shape) == tuple(want.shape) == tuple(p.size()) and p.numel() == want.numel(), name
        assert tuple(p.to_local().shape) == p.shard_spec.local_shape, name
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in ref.parameters())
    opt = genesis.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn(model, *local_batch(0, rank, world)).backward()
    opt.step()
    for p in model.parameters():
        local = tuple(p.to_local().shape)
        assert tuple(p.grad.shape) == local and tuple(opt.state[p]["exp_avg"].shape) == local
    sd = get_model_state_dict(model)
    head = sd["head.weight"]
    assert tuple(head.shape) == (2, 7) and tuple(head.to_local().shape) == tuple(model.head.weight.to_local().shape)


# ----------------------------------------------------------------------------- host cost
# FSDP's own Python-level calls per parameter in one training step (forward, backward, optimizer step), over the
# same step of the bare model: the all-gather copy-out, the reduce-scatter copy-in and the bookkeeping run for
# every parameter in every step, so their host cost is a design property, held here without timing anything.
# Measured on this Net (22 parameters in 4 groups): 95 per parameter on 1 rank, 114 on 3, with one chunk_split /
# chunk_cat_ per group each way; per-parameter NDArray copies took 146 and 326, Tensor-level copies 390 and 809.
FSDP_CALLS_PER_PARAM = {1: 110, 3: 130}


def _calls(step) -> int:
    import sys

    count = [0]

    def profiler(frame: object, event: str, arg: object) -> None:
        if event in ("call", "c_call"):
            count[0] += 1

    sys.setprofile(profiler)
    try:
        step()
    finally:
        sys.setprofile(None)
    return count[0]


def _host_calls(rank: int, world: int) -> None:
    def stepper(model: nn.Module):
        opt = genesis.optim.AdamW(model.parameters(), lr=1e-2)
        x, y = local_batch(0, rank, world)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            loss_fn(model, x, y).backward()
            opt.step()

        for _ in range(2):  # warm: states, plans, caches
            step()
        return step

    bare, sharded = stepper(make_net()), stepper(shard(make_net()))
    params = sum(1 for _ in make_net().parameters())
    own = (_calls(sharded) - _calls(bare)) / params
    assert own <= FSDP_CALLS_PER_PARAM[world], (
        f"FSDP's own host calls per parameter per step at world size {world}: {own:.0f}, budget "
        f"{FSDP_CALLS_PER_PARAM[world]}"
    )


def training(rank: int, world: int, url: str, cuda: bool = False) -> None:
    init(rank, world, url, cuda)
    kind = "cuda" if cuda else "cpu"
    _device_mesh_as_torch(rank, world)
    for nested, reshard, opt_name, checkpointing, kw in [
        (True, None, "adamw", None, {}),
        (True, False, "sgd", "non_reentrant", {}),
        (False, True, "adamw_foreach", None, {"offload_policy": CPUOffloadPolicy()}),
        (True, True, "sgd", "reentrant", {}),
        (True, None, "adamw", None, {"mesh": init_device_mesh(kind, (world, 1), mesh_dim_names=("r", "s"))}),
        (True, None, "sgd", None, {"mesh": init_device_mesh(kind, (1, world), mesh_dim_names=("r", "s"))}),
    ]:
        _train_and_compare(rank, world, nested, reshard, opt_name, checkpointing, **kw)
    _prefetch(rank, world)
    if not cuda:  # torch's fully_shard over gloo as the reference
        _global_shapes(rank, world)
    _grad_accumulation(rank, world)
    _clip_grad_norm(rank, world)
    _mixed_precision(rank, world)
    _full_state_dict(rank, world)
    if not cuda:
        _host_calls(rank, world)
    _finish()
