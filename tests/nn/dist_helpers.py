"""Worker functions of tests/nn/test_nn_distributed.py: each runs in a spawned process (one per rank),
checks its results itself (an AssertionError reaches the parent through torch.multiprocessing.spawn)."""

from __future__ import annotations

import os
import socket
import time
from datetime import timedelta

import numpy as np

import genesis
import genesis.distributed as dist
import genesis.nn as nn

DTYPES = ["float32", "float64", "bfloat16", "int32", "int64"]
SIZES = [1, 7, 1000]


def _finish() -> None:
    """End a worker whose checks all passed: leave the groups together; the process then exits
    normally (interpreter teardown included: it must not abort, see destroy_process_group)."""
    dist.barrier()  # nobody tears down the group while another rank still uses it
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _data(rank: int, size: int, dtype: str, salt: int = 0) -> np.ndarray:
    """Small integers: every sum, product and average below is exact in every dtype (bfloat16 included)."""
    values = np.random.default_rng([rank, size, salt]).integers(-4, 5, size=size)
    return values.astype(np.float64)


def _tensor(values: np.ndarray, dtype: str) -> genesis.Tensor:
    return genesis.tensor(values, dtype=genesis.float64).to(getattr(genesis, dtype))


def _equal(t: genesis.Tensor, expected: np.ndarray, what: str) -> None:
    got = t.to(genesis.float64).numpy()
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    assert np.array_equal(got, expected), (what, got, expected)


def collectives(rank: int, world: int, init_method: str) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    assert (dist.get_rank(), dist.get_world_size(), dist.is_initialized()) == (rank, world, True)
    ranks = range(world)
    for dtype in DTYPES:
        floating = dtype.startswith(("float", "bfloat"))
        for n in SIZES:
            mine, every = _data(rank, n, dtype), [_data(r, n, dtype) for r in ranks]
            ops = {
                dist.ReduceOp.SUM: np.sum(every, 0),
                dist.ReduceOp.MAX: np.max(every, 0),
                dist.ReduceOp.MIN: np.min(every, 0),
                dist.ReduceOp.PRODUCT: np.prod(every, 0),
            }
            if floating:
                ops[dist.ReduceOp.AVG] = np.sum(every, 0) / world
            for op, expected in ops.items():
                t = _tensor(mine, dtype)
                assert dist.all_reduce(t, op=op) is None
                _equal(t, expected, (dtype, n, op))
            t = _tensor(mine, dtype)
            dist.broadcast(t, src=world - 1)
            _equal(t, every[-1], (dtype, n, "broadcast"))
            outs = [genesis.zeros(n, dtype=getattr(genesis, dtype)) for _ in ranks]
            dist.all_gather(outs, _tensor(mine, dtype))
            for r in ranks:
                _equal(outs[r], every[r], (dtype, n, "all_gather", r))
            out = genesis.zeros(world * n, dtype=getattr(genesis, dtype))
            dist.all_gather_into_tensor(out, _tensor(mine, dtype))
            _equal(out, np.concatenate(every), (dtype, n, "all_gather_into_tensor"))
            stacked = genesis.zeros(world, n, dtype=getattr(genesis, dtype))
            dist.all_gather_into_tensor(stacked, _tensor(mine, dtype))
            _equal(stacked, np.stack(every), (dtype, n, "all_gather_into_tensor stacked"))
            big = [_data(r, n * world, dtype, salt=1) for r in ranks]
            out = genesis.zeros(n, dtype=getattr(genesis, dtype))
            dist.reduce_scatter_tensor(out, _tensor(big[rank], dtype))
            _equal(out, np.sum(big, 0)[rank * n : (rank + 1) * n], (dtype, n, "reduce_scatter_tensor"))
            out = genesis.zeros(world * n, dtype=getattr(genesis, dtype))
            dist.all_to_all_single(out, _tensor(big[rank], dtype))
            _equal(out, np.concatenate([b[rank * n : (rank + 1) * n] for b in big]), (dtype, n, "all_to_all"))
    # all_to_all with uneven splits: rank r sends r + 1 + peer rows to each peer
    sends = [rank + 1 + peer for peer in ranks]
    recvs = [r + 1 + rank for r in ranks]
    payload = np.concatenate([np.full(k, 10 * rank + peer, dtype=np.float64) for peer, k in enumerate(sends)])
    out = genesis.zeros(sum(recvs), dtype=genesis.float64)
    dist.all_to_all_single(out, genesis.tensor(payload), recvs, sends)
    _equal(out, np.concatenate([np.full(recvs[r], 10 * r + rank, dtype=np.float64) for r in ranks]), "uneven a2a")
    # a strided view is written in place
    base = genesis.tensor(np.arange(12.0).reshape(3, 4) * (rank + 1))
    view = base.transpose(0, 1)
    dist.all_reduce(view)
    _equal(base, np.arange(12.0).reshape(3, 4) * sum(r + 1 for r in ranks), "strided view")
    # async: several in flight, waited out of order
    tensors = [genesis.full((64,), float(rank + i)) for i in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    for i, work in reversed(list(enumerate(works))):
        assert work.wait()
        assert work.is_completed()
        _equal(tensors[i], np.full(64, float(sum(r + i for r in ranks))), ("async", i))
    # point to point: a ring, then receive from any source
    t = genesis.full((5,), float(rank))
    got = genesis.zeros(5)
    if rank == 0:
        dist.send(t, 1)
        assert dist.recv(got, None) == world - 1
    else:
        dist.recv(got, rank - 1)
        dist.send(t, (rank + 1) % world)
    _equal(got, np.full(5, float((rank - 1) % world)), "send/recv")
    # subgroups: every rank calls new_group; the ranks outside get NON_GROUP_MEMBER
    pair, solo = dist.new_group([0, 1]), dist.new_group([world - 1])
    t = genesis.ones(3)
    dist.all_reduce(t, group=pair)
    _equal(t, np.full(3, 2.0), "subgroup")
    assert dist.get_rank(solo) == (0 if rank == world - 1 else -1)
    assert dist.get_world_size(pair) == 2
    _finish()
    assert not dist.is_initialized()


# ----------------------------------------------------------------------------- DDP
class Net(nn.Module):
    """Two branches: ``skip`` unused when forward is told so (find_unused_parameters)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)
        self.skip = nn.Linear(6, 3)
        self.register_buffer("steps", genesis.zeros(()))

    def forward(self, x, use_skip: bool = True):
        out = self.fc2(self.fc1(x).tanh())
        return out + self.skip(x) if use_skip else out


def _batches(step: int) -> tuple[genesis.Tensor, genesis.Tensor]:
    rng = np.random.default_rng(step)
    return genesis.tensor(rng.normal(size=(8, 6))), genesis.tensor(rng.normal(size=(8, 3)))


def _loss(model, x, y, **kw):
    return ((model(x, **kw) - y) ** 2).mean()


def _grads(model) -> list:
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def _close(got: list, expected: list, what: str) -> None:
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None or g is None:
            assert g is None and e is None, (what, i, g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14, err_msg=f"{what} param {i}")


def ddp(rank: int, world: int, port: int, as_view: bool = True) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    os.environ["LOCAL_RANK"] = str(rank)
    dist.init_process_group("gloo")  # env://, as under torchrun
    assert dist.get_local_rank() == rank
    genesis.set_default_dtype(genesis.float64)
    genesis.manual_seed(0)
    reference = Net()  # the same weights on every rank: the single-process run on the whole batch
    genesis.manual_seed(1 + rank)  # different weights per rank: DDP must broadcast rank 0's
    model = Net()
    model.load_state_dict(reference.state_dict()) if rank == 0 else None
    model.steps.fill_(float(rank + 5))
    wrapped = nn.parallel.DistributedDataParallel(  # several buckets
        model, bucket_cap_mb=0.0005, gradient_as_bucket_view=as_view
    )
    assert len(wrapped.reducer.buckets) > 1
    _close(
        [p.detach().numpy() for p in model.parameters()],
        [p.detach().numpy() for p in reference.parameters()],
        "broadcast",
    )
    assert float(model.steps.item()) == 5.0
    shard = slice(rank * 8 // world, (rank + 1) * 8 // world)

    # gradients: the average over ranks of each half's mean loss == the whole batch's mean loss
    opt, ref_opt = genesis.optim.SGD(model.parameters(), lr=0.1), genesis.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        x, y = _batches(step)
        opt.zero_grad()
        _loss(wrapped, x[shard], y[shard]).backward()
        ref_opt.zero_grad()
        _loss(reference, x, y).backward()
        _close(_grads(model), _grads(reference), f"ddp step {step}")
        for i, p in enumerate(model.parameters()):  # views of the bucket, or tensors of their own
            assert (p.grad is wrapped.reducer.slot[i]) == as_view, (i, as_view)
        opt.step()
        ref_opt.step()

    # no_sync: two local backwards, then a synchronised one, average the sum of the three
    opt.zero_grad()
    ref_opt.zero_grad()
    for step in range(3):
        x, y = _batches(10 + step)
        if step < 2:
            with wrapped.no_sync():
                _loss(wrapped, x[shard], y[shard]).backward()
            local = _grads(model)
        else:
            _loss(wrapped, x[shard], y[shard]).backward()
        _loss(reference, x, y).backward()
    assert any(not np.allclose(a, b) for a, b in zip(local, _grads(reference)) if a is not None)
    _close(_grads(model), _grads(reference), "no_sync")

    # zero_grad(set_to_none=False): the slots are zeroed in place and accumulated into, with no copy
    opt.zero_grad(set_to_none=False)
    ref_opt.zero_grad(set_to_none=False)
    x, y = _batches(20)
    _loss(wrapped, x[shard], y[shard]).backward()
    _loss(reference, x, y).backward()
    _close(_grads(model), _grads(reference), "set_to_none=False")
    _finish()


def ddp_unused(rank: int, world: int, init_method: str) -> None:
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    genesis.set_default_dtype(genesis.float64)
    genesis.manual_seed(0)
    reference = Net()
    model = Net()
    model.load_state_dict(reference.state_dict())
    wrapped = nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    x, y = _batches(0)
    shard = slice(rank * 8 // world, (rank + 1) * 8 // world)
    # skip unused on every rank: its grads stay None, the others average
    _loss(wrapped, x[shard], y[shard], use_skip=False).backward()
    _loss(reference, x, y, use_skip=False).backward()
    _close(_grads(model), _grads(reference), "unused everywhere")
    # skip used on rank 0 only: every rank gets the average, rank 0's gradient over the world size
    model.zero_grad()
    _loss(wrapped, x[shard], y[shard], use_skip=rank == 0).backward()
    reference.zero_grad()
    _loss(reference, x[: 8 // world], y[: 8 // world]).backward()  # rank 0's shard, skip used
    expected = reference.skip.weight.grad.numpy() / world
    np.testing.assert_allclose(model.skip.weight.grad.numpy(), expected, rtol=1e-12, atol=1e-14)
    # without find_unused_parameters, an unused parameter is reported at the next forward (torch's error)
    plain = nn.parallel.DistributedDataParallel(Net())
    _loss(plain, x, y, use_skip=False).backward()
    try:
        plain(x)
    except RuntimeError as e:
        assert "find_unused_parameters=True" in str(e), e
    else:
        raise AssertionError("an unused parameter without find_unused_parameters must be reported")
    _finish()


TIMEOUT = 3.0  # seconds: the group timeout of failing()


def failing(rank: int, world: int, init_method: str, queue, mode: str) -> None:
    """Rank 1 dies before the collective (``mode="dies"``) or stays alive without joining it
    (``"stalls"``); rank 0 must get an error naming the collective and its rank, not hang."""
    timeout = timedelta(seconds=TIMEOUT)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world, timeout=timeout)
    # Both ranks connected before rank 1 leaves: gloo's init may still be connecting rank 0's pairs when rank 1's
    # returns, and a rank 1 that exited then failed rank 0's init, not the collective (seen once in CI).
    dist.barrier()
    if rank == 1:
        if mode == "stalls":
            time.sleep(3 * TIMEOUT)
        raise SystemExit(3)
    start = time.monotonic()
    try:
        dist.all_reduce(genesis.ones(10))
        queue.put((False, "no error", time.monotonic() - start))
    except Exception as e:
        queue.put((isinstance(e, RuntimeError), str(e), time.monotonic() - start))
