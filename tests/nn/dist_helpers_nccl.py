"""Workers of tests/nn/test_nn_distributed_nccl.py: one process per GPU, NCCL through CuPy."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import numpy as np

import genesis
import genesis.distributed as dist
import genesis.nn as nn
from genesis.distributed.optim import ZeroRedundancyOptimizer

DTYPES = ["float32", "float64", "bfloat16", "float16", "int32", "int64"]
SIZES = [1, 7, 1000, 1 << 20]


def _init(rank: int, world: int, port: int, timeout: timedelta | None = None) -> str:
    os.environ["NCCL_NVLS_ENABLE"] = "0"  # NVLink multicast off, as the device notes require
    genesis.cuda.set_device(rank)  # before anything allocates; a bare "cuda" then means cuda:{rank}
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=timeout)
    return f"cuda:{rank}"


def _data(rank: int, n: int, salt: int = 0) -> np.ndarray:
    return np.random.default_rng([rank, n, salt]).integers(-4, 5, size=n).astype(np.float64)


def _tensor(values: np.ndarray, dtype: str, device: str) -> genesis.Tensor:
    return genesis.tensor(values, dtype=genesis.float64, device=device).to(getattr(genesis, dtype))


def _equal(t: genesis.Tensor, expected: np.ndarray, what) -> None:
    got = t.to(genesis.float64).cpu().numpy()
    assert np.array_equal(got, expected), (what, got[:8], expected[:8])


def collectives(rank: int, world: int, port: int) -> None:
    device = _init(rank, world, port)
    ranks = range(world)
    for dtype in DTYPES:
        for n in SIZES:
            mine, every = _data(rank, n), [_data(r, n) for r in ranks]
            ops = {dist.ReduceOp.SUM: np.sum(every, 0), dist.ReduceOp.MAX: np.max(every, 0)}
            ops[dist.ReduceOp.MIN], ops[dist.ReduceOp.PRODUCT] = np.min(every, 0), np.prod(every, 0)
            if not dtype.startswith("int"):
                ops[dist.ReduceOp.AVG] = np.sum(every, 0) / world
            for op, expected in ops.items():
                t = _tensor(mine, dtype, device)
                dist.all_reduce(t, op=op)
                _equal(t, expected, (dtype, n, op))
            t = _tensor(mine, dtype, device)
            dist.broadcast(t, src=1)
            _equal(t, every[1], (dtype, n, "broadcast"))
            out = genesis.zeros(world * n, dtype=getattr(genesis, dtype), device=device)
            dist.all_gather_into_tensor(out, _tensor(mine, dtype, device))
            _equal(out, np.concatenate(every), (dtype, n, "all_gather_into_tensor"))
            outs = [genesis.zeros(n, dtype=getattr(genesis, dtype), device=device) for _ in ranks]
            dist.all_gather(outs, _tensor(mine, dtype, device))
            for r in ranks:
                _equal(outs[r], every[r], (dtype, n, "all_gather", r))
            big = [_data(r, n * world, salt=1) for r in ranks]
            out = genesis.zeros(n, dtype=getattr(genesis, dtype), device=device)
            dist.reduce_scatter_tensor(out, _tensor(big[rank], dtype, device))
            _equal(out, np.sum(big, 0)[rank * n : (rank + 1) * n], (dtype, n, "reduce_scatter_tensor"))
            out = genesis.zeros(world * n, dtype=getattr(genesis, dtype), device=device)
            dist.all_to_all_single(out, _tensor(big[rank], dtype, device))
            _equal(out, np.concatenate([b[rank * n : (rank + 1) * n] for b in big]), (dtype, n, "all_to_all"))
    # async ordering: the result is read on the current stream right after wait(), with no host sync
    for _ in range(3):
        t = genesis.full((1 << 22,), float(rank + 1), device=device)
        t.mul_(2.0)  # queued on the current stream before the all-reduce: the NCCL stream must wait for it
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        t.add_(1.0)  # queued after: the current stream must wait for NCCL
        _equal(t[:4], np.full(4, 2.0 * sum(r + 1 for r in ranks) + 1), "async ordering")
    t = genesis.full((5,), float(rank), device=device)
    got = genesis.zeros(5, device=device)
    if rank == 0:
        dist.send(t, 1)
        dist.recv(got, 1)
    else:
        dist.recv(got, 0)
        dist.send(t, 0)
    _equal(got, np.full(5, float(1 - rank)), "send/recv")
    dist.barrier()
    dist.destroy_process_group()


def ddp(rank: int, world: int, port: int) -> None:
    device = _init(rank, world, port)
    genesis.manual_seed(0)
    reference = nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 8)).to(device)
    genesis.manual_seed(1 + rank)
    model = nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 8)).to(device)
    wrapped = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.01)
    weights = [p.detach().cpu().numpy() for p in model.parameters()]
    every = [np.zeros_like(w) for w in weights]
    for w, e in zip(weights, every):  # rank 0's weights everywhere: compare through a broadcast of our own
        t = genesis.tensor(w, device=device)
        dist.broadcast(t, 0)
        e[...] = t.cpu().numpy()
        assert np.array_equal(w, e)
    reference.load_state_dict(model.state_dict())
    rng = np.random.default_rng(0)
    x = genesis.tensor(rng.normal(size=(16, 32)), dtype=genesis.float32, device=device)
    y = genesis.tensor(rng.normal(size=(16, 8)), dtype=genesis.float32, device=device)
    shard = slice(rank * 8, rank * 8 + 8)
    ((wrapped(x[shard]) - y[shard]) ** 2).mean().backward()
    ((reference(x) - y) ** 2).mean().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
    # no_sync: two local backwards, then a synchronised one, average the sum of the three
    model.zero_grad()
    reference.zero_grad()
    for step in range(3):
        x = genesis.tensor(rng.normal(size=(16, 32)), dtype=genesis.float32, device=device)
        y = genesis.tensor(rng.normal(size=(16, 8)), dtype=genesis.float32, device=device)
        if step < 2:
            with wrapped.no_sync():
                ((wrapped(x[shard]) - y[shard]) ** 2).mean().backward()
            local = [p.grad.cpu().numpy().copy() for p in model.parameters()]
        else:
            ((wrapped(x[shard]) - y[shard]) ** 2).mean().backward()
        ((reference(x) - y) ** 2).mean().backward()
    assert any(not np.allclose(a, q.grad.cpu().numpy()) for a, q in zip(local, reference.parameters()))
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
    # ZeRO-1 on these (equal) gradients: each rank steps its share, the shares are broadcast over NCCL
    for as_bucket in (False, True):
        zero = ZeroRedundancyOptimizer(
            list(model.parameters()), genesis.optim.AdamW, parameters_as_bucket_view=as_bucket, lr=1e-2
        )
        plain = genesis.optim.AdamW(reference.parameters(), lr=1e-2)
        for p, q in zip(model.parameters(), reference.parameters()):
            q.grad.copy_(p.grad)  # the same gradient on both sides: only the optimizers differ
        zero.step()
        plain.step()
        for p, q in zip(model.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-6, atol=1e-7)
        zero.consolidate_state_dict(to=0)
        if rank == 0:
            assert len(zero.state_dict()["state"]) == len(list(model.parameters()))
    dist.barrier()
    dist.destroy_process_group()


TIMEOUT = 5.0  # seconds: the group timeout of failing()


def failing(rank: int, world: int, port: int, queue, mode: str, log: str) -> None:
    """Rank 1 dies (``mode="dies"``) or stays alive without joining (``"stalls"``) after the communicator is
    up; rank 0's all-reduce must end in a RuntimeError naming it and the rank, within the timeout, not hang.
    Rank 0 reads its result on the host first, as a training loop's ``loss.item()`` would: that blocks on
    the GPU until the watchdog's abort ends NCCL's kernel (the host must not hold the GIL meanwhile).

    Everything a rank prints goes to ``log`` (the test shows it when it fails), and a rank still running
    after 4 timeouts writes every thread's stack there (where a hang is)."""
    import faulthandler
    import sys

    out = open(log, "w", buffering=1)  # open until the process ends
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    sys.stdout = sys.stderr = out
    faulthandler.enable(out)
    faulthandler.dump_traceback_later(4 * TIMEOUT, exit=False, file=out)
    t0 = time.monotonic()

    def say(what: str) -> None:
        print(f"[rank {rank} {time.monotonic() - t0:6.2f} s] {what}", flush=True)

    import cupy
    from cuda import bindings

    say(f"cuda-bindings {bindings.__version__}, cupy {cupy.__version__}")
    device = _init(rank, world, port, timedelta(seconds=TIMEOUT))
    t = genesis.ones(1 << 20, device=device)
    dist.all_reduce(t)  # the communicator is made, on both ranks
    assert float(t[:1].cpu().numpy()[0]) == world
    backend = dist.process_group.default_group()._nccl
    raw = genesis.distributed.nccl._raw_communicator(backend._comm)
    version = genesis.distributed.nccl.nccl_module().get_version()
    say(f"communicator up; NCCL {version}; abort through ctypes (GIL released): {raw is not None}")
    if rank == 1:
        if mode == "stalls":
            time.sleep(3 * TIMEOUT)
        say("exits with 3")
        raise SystemExit(3)
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        say("all_reduce issued; t.cpu() blocks until the watchdog aborts")
        t.cpu()  # blocks until NCCL's kernel ends: the watchdog aborts it after the timeout
        say("t.cpu() returned")
        dist.all_reduce(t)  # the group is failed: this one raises, at once
        queue.put((False, "no error", time.monotonic() - start))
    except Exception as e:
        say(f"raised {type(e).__name__}: {e}")
        queue.put((isinstance(e, RuntimeError), f"{type(e).__name__}: {e}", time.monotonic() - start))
    say("done")
