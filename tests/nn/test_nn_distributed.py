"""genesis.distributed and DistributedDataParallel on cpu: world size 1 in this process, world size 2
with gloo in spawned processes (tcp://, env:// and file:// rendezvous), against references computed
in the same processes; the NCCL path is tests/nn/test_nn_distributed_nccl.py (GPU machine)."""

from __future__ import annotations

import tempfile
import time

import dist_helpers
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from torch.utils.data import DistributedSampler as TorchDistributedSampler

import genesis
import genesis.distributed as dist
import genesis.nn as nn
from genesis.utils.data import DistributedSampler

WORLD = 2


def _file_url() -> str:
    return "file://" + tempfile.mktemp(prefix="genesis-dist-")


@pytest.fixture
def world_of_one():
    dist.init_process_group("gloo", init_method=_file_url(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


# ----------------------------------------------------------------------------- world size 1, in process
def test_errors_before_init_and_on_bad_arguments_as_torch():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(genesis.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("mpi", init_method=_file_url(), rank=0, world_size=1)
    if not genesis.cuda.is_available():
        with pytest.raises(RuntimeError, match="no GPUs found"):
            dist.init_process_group("nccl", init_method=_file_url(), rank=0, world_size=1)
    assert not dist.is_initialized()


def test_collectives_are_identities_at_world_size_one(world_of_one):
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("gloo", init_method=_file_url(), rank=0, world_size=1)
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    x = genesis.randn(3, 5)
    expected = x.numpy().copy()
    for op in dist.ReduceOp:
        dist.all_reduce(x, op=op)
        assert np.array_equal(x.numpy(), expected), op
    work = dist.broadcast(x, 0, async_op=True)
    assert work.wait() and work.is_completed()
    out = genesis.zeros(3, 5)
    dist.all_gather_into_tensor(out, x)
    dist.reduce_scatter_tensor(x, out)
    outs = [genesis.zeros(3, 5)]
    dist.all_gather(outs, x)
    dist.all_to_all_single(out, x)
    for t in (x, out, outs[0]):
        assert np.array_equal(t.numpy(), expected)
    dist.barrier()


def test_gloo_refuses_a_cuda_tensor_clearly(world_of_one):
    class FakeCuda:  # only the device is looked at before refusing
        device = genesis.device("cuda") if hasattr(genesis, "device") else None

    with pytest.raises(RuntimeError, match="No backend type associated with device type cuda"):
        dist.process_group.default_group().backend_for(FakeCuda())


def test_ddp_at_world_size_one_trains_as_the_bare_module(world_of_one):
    genesis.manual_seed(0)
    bare = nn.Sequential(nn.Linear(5, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 2))
    twin = nn.Sequential(nn.Linear(5, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(), nn.Linear(32, 2))
    twin.load_state_dict(bare.state_dict())
    wrapped = nn.DistributedDataParallel(twin, bucket_cap_mb=0.002)
    assert wrapped.module is twin and nn.DistributedDataParallel is nn.parallel.DistributedDataParallel
    assert list(wrapped.state_dict()) == ["module." + k for k in bare.state_dict()]
    assert len(wrapped.reducer.buckets) > 1
    opts = [genesis.optim.AdamW(m.parameters(), lr=1e-2) for m in (bare, wrapped)]
    for step in range(5):
        x, y = genesis.randn(16, 5), genesis.randn(16, 2)
        for model, opt in zip((bare, wrapped), opts):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
        for p, q in zip(bare.parameters(), twin.parameters()):
            assert np.array_equal(p.detach().numpy(), q.detach().numpy()), step


def test_buckets_follow_reverse_parameter_order_and_the_cap(world_of_one):
    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64), nn.Linear(64, 8))
    sizes = [p.numel() * 4 for p in model.parameters()]  # 16384, 256, 16384, 256, 2048, 32 bytes
    wrapped = nn.DistributedDataParallel(model, bucket_cap_mb=17000 / 2**20)
    assert wrapped.reducer.buckets == [[5, 4, 3, 2], [1, 0]], sizes
    assert nn.DistributedDataParallel(model).reducer.buckets == [[5, 4, 3, 2, 1, 0]]  # 25 MiB: one


def test_the_first_bucket_is_capped_at_1_mib_so_that_communication_starts_early(world_of_one):
    from genesis.nn.parallel.reducer import assign_buckets

    class P:  # only the size, dtype and device matter
        def __init__(self, n: int) -> None:
            self.n, self.dtype, self.device = n, genesis.float32, "cuda:0"

        def numel(self) -> int:
            return self.n

    mib = 1 << 20
    params = [P(m * mib // 4) for m in (8, 8, 8, 8, 1, 1)]  # MiB each, float32
    assert assign_buckets(params, 25 * mib, mib) == [[5], [4, 3, 2, 1], [0]]
    assert assign_buckets(params, 25 * mib) == [[5, 4, 3, 2, 1], [0]]  # no first cap: 26 MiB, then 8


def test_ddp_leaves_grads_as_views_of_the_bucket_and_reuses_it(world_of_one):
    genesis.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 4))
    wrapped = nn.DistributedDataParallel(model, bucket_cap_mb=0.0002, gradient_as_bucket_view=True)
    x = genesis.randn(5, 8)
    reference = [
        t.grad.numpy().copy()
        for t in _grads_of(lambda m: (m(x) ** 2).sum(), model)  # the bare model's gradients
    ]
    model.zero_grad()
    (wrapped(x) ** 2).sum().backward()
    flats = [f.data_ptr() for f in wrapped.reducer.flat]
    for i, p in enumerate(model.parameters()):
        assert p.grad is wrapped.reducer.slot[i]
        np.testing.assert_allclose(p.grad.numpy(), reference[i], rtol=1e-6, atol=1e-7)
    (wrapped(x) ** 2).sum().backward()  # accumulates in place into the same buffers
    assert [f.data_ptr() for f in wrapped.reducer.flat] == flats
    for i, p in enumerate(model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), 2 * reference[i], rtol=1e-6, atol=1e-6)


def _grads_of(loss_fn, model):
    model.zero_grad()
    loss_fn(model).backward()
    return list(model.parameters())


@pytest.mark.parametrize("n", [0, 1, 5, 10, 17])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_distributed_sampler_gives_torchs_indices(n, replicas, shuffle, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7, drop_last=drop_last)
        theirs = TorchDistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=7, drop_last=drop_last)
        for epoch in (0, 4):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_partitions_and_checks_its_rank(world_of_one):
    assert list(DistributedSampler(range(6), shuffle=False)) == list(range(6))  # rank, replicas from the group
    shares = [list(DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    assert sorted(i for share in shares for i in share) == sorted([*range(10), *_padding(10, 3)])
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(4), 3, 3)


def _padding(n: int, replicas: int) -> list[int]:
    """The indices torch's padding repeats: the permutation's first total - n."""
    sampler = TorchDistributedSampler(range(n), replicas, 0, seed=1)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(1)).tolist()
    return order[: sampler.total_size - n]


# ----------------------------------------------------------------------------- world size 2, gloo, spawned
def test_every_collective_at_world_size_two_over_tcp():
    mp.spawn(dist_helpers.collectives, args=(WORLD, f"tcp://127.0.0.1:{dist_helpers.free_port()}"), nprocs=WORLD)


@pytest.mark.parametrize("as_view", [True, False], ids=["grad_as_bucket_view", "grad_copied_back"])
def test_ddp_gradients_equal_the_whole_batch_and_no_sync_accumulates_under_env_rendezvous(as_view):
    mp.spawn(dist_helpers.ddp, args=(WORLD, dist_helpers.free_port(), as_view), nprocs=WORLD)


def test_ddp_find_unused_parameters_and_the_error_without_it():
    mp.spawn(dist_helpers.ddp_unused, args=(WORLD, _file_url()), nprocs=WORLD)


@pytest.mark.parametrize("mode", ["dies", "stalls"])
def test_a_rank_that_dies_or_stalls_makes_the_other_fail_within_the_timeout(mode):
    ctx = mp.get_context("spawn")
    queue, url = ctx.Queue(), _file_url()
    procs = [ctx.Process(target=dist_helpers.failing, args=(r, WORLD, url, queue, mode)) for r in range(WORLD)]
    for p in procs:
        p.start()
    raised, message, waited = queue.get(timeout=60)  # rank 0's outcome; a hang fails here
    for p in procs:
        p.join(timeout=30)
    assert raised, message  # a RuntimeError (gloo's class), saying what failed where
    assert "all_reduce failed on rank 0" in message and "timeout" in message, message
    if mode == "stalls":  # the group's timeout, not the default ten minutes
        assert 0.8 * dist_helpers.TIMEOUT <= waited < dist_helpers.TIMEOUT + 15, waited
    else:  # the connection to the dead peer closes: sooner than the timeout, or at it
        assert waited < dist_helpers.TIMEOUT + 15, waited
    assert [p.exitcode for p in procs] == [0, 3]  # rank 1 exits as it chose, without an abort at exit


# ----------------------------------------------------------------------------- the NCCL watchdog, without a GPU
class _Event:
    def __init__(self, done: bool = False) -> None:
        self.done = done

    def query(self) -> bool:
        return self.done


def test_the_nccl_watchdog_reports_a_collective_past_the_timeout_and_an_async_error():
    from genesis.distributed.watchdog import Watchdog

    failures: list[str] = []
    dog = Watchdog(timeout=0.3, on_failure=failures.append, interval=0.05)
    finished, stuck = _Event(), _Event()
    dog.watch(finished, "broadcast")
    dog.watch(stuck, "all_reduce")
    finished.done = True
    dog.check()
    assert failures == [] and len(dog._in_flight) == 1  # the finished one is dropped, the other not late yet
    start = time.monotonic()
    while not failures and time.monotonic() - start < 5:  # the thread's polls
        time.sleep(0.05)
    assert len(failures) == 1 and "all_reduce did not finish within the group's timeout (0.3 s" in failures[0]
    assert 0.3 <= time.monotonic() - start < 3
    dog.stop()

    def async_error() -> None:
        raise RuntimeError("NCCL error: remote process exited or there was a network error")

    failures.clear()
    dog = Watchdog(timeout=60, on_failure=failures.append, async_error=async_error)
    dog.check()
    assert failures == [
        "NCCL reported an asynchronous error: NCCL error: remote process exited or there was a network error"
    ]


def test_the_nccl_watchdog_never_destroys_a_finished_event_in_its_own_thread():
    """A finished collective's event is released by the next watch(), in the thread issuing collectives:
    on a GPU, cuEventDestroy in the watchdog's thread blocked while the main thread waited on a stream a
    stalled NCCL kernel held, and the watchdog never aborted (H100, NCCL 2.28)."""
    import gc
    import threading

    from genesis.distributed.watchdog import Watchdog

    died_in: list[str] = []

    class Event(_Event):
        def __del__(self) -> None:
            died_in.append(threading.current_thread().name)

    failures: list[str] = []
    dog = Watchdog(timeout=60, on_failure=failures.append, interval=0.01)
    dog.watch(Event(done=True), "all_reduce")  # dropped by the caller: the watchdog holds the only reference
    dog.watch(Event(), "broadcast")  # still running
    start = time.monotonic()
    while len(dog._in_flight) != 1 and time.monotonic() - start < 5:  # the thread's polls retire the first
        time.sleep(0.01)
    gc.collect()
    assert len(dog._in_flight) == 1 and died_in == [], died_in  # retired, not destroyed
    dog._in_flight[0][0].done = True
    dog.watch(Event(), "all_gather")  # the caller's thread: the first event dies here
    assert died_in[:1] == [threading.current_thread().name], died_in
    time.sleep(0.1)  # polls meanwhile retire the broadcast's event without destroying it
    assert died_in == [threading.current_thread().name] and failures == [], died_in
    dog.stop()


def test_the_nccl_backend_aborts_and_raises_after_the_watchdogs_verdict(capsys):
    from genesis.distributed.nccl import NcclBackend

    class Comm:
        aborted = False

        def abort(self) -> None:
            Comm.aborted = True

    backend = NcclBackend(store=None, key="nccl/0", ranks=[0, 1], rank=1, timeout=5.0)
    backend._comm = Comm()
    backend._on_failure("all_reduce did not finish within the group's timeout (5 s; it has run 5.1 s)")
    assert Comm.aborted and backend._comm is None
    with pytest.raises(RuntimeError, match=r"NCCL all_reduce did not finish .* on rank 1 \(group ranks \[0, 1\]\)"):
        backend._launch("broadcast", [genesis.ones(2)], lambda stream: None)  # the next one raises, before issuing
    assert "the communicator was aborted" in capsys.readouterr().err


def test_nccl_module_refuses_a_cupy_whose_nccl_did_not_load(monkeypatch):
    """CuPy's ``cupy.cuda.nccl`` imports even where libnccl cannot load (``available = False``, no names):
    that is 'no NCCL', torch's RuntimeError, not an AttributeError at the first collective."""
    import sys
    import types

    from genesis.distributed import nccl as backend

    cupy, cuda = types.ModuleType("cupy"), types.ModuleType("cupy.cuda")
    stub = types.ModuleType("cupy.cuda.nccl")
    stub.available = False
    cupy.cuda, cuda.nccl = cuda, stub
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", stub)
    # The binding itself cannot import either; its submodules too, which an earlier test in this process
    # may have imported for real (the import system finds those in sys.modules without their parents).
    for name in ("cupy_backends", "cupy_backends.cuda", "cupy_backends.cuda.libs", "cupy_backends.cuda.libs.nccl"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(backend, "_preload_pip_nccl", lambda: None)
    with pytest.raises(RuntimeError, match="doesn't have NCCL built in"):
        backend.nccl_module()
    assert not dist.is_nccl_available()
    stub.available, stub.NcclCommunicator = True, object  # a working binding is returned as it is
    assert backend.nccl_module() is stub


def test_nccl_setup_fails_within_the_timeout_when_a_peer_never_joins():
    """ncclCommInitRank would wait forever (holding the GIL) for a peer that never comes: the store
    rendezvous before it turns that into a RuntimeError naming the missing rank, after the group timeout."""
    from genesis.distributed.nccl import NcclBackend

    store = torch.distributed.HashStore()
    backend = NcclBackend(store=store, key="nccl/0", ranks=[0, 1], rank=0, timeout=0.5)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"on rank 0 \(group ranks \[0, 1\]\): group ranks \[1\] did not join"):
        backend._await_peers(0)
    assert 0.4 <= time.monotonic() - start < 5
    store.set("nccl/0/joined/1", b"1")  # the peer arrives: the wait returns at once
    backend._await_peers(0)


def test_the_watchdog_stops_polling_before_the_communicator_goes():
    """stop() waits out a poll in progress (the backend destroys the communicator right after), and a
    stopped watchdog reports nothing: a destroyed communicator's error is not a peer's failure."""
    import threading

    from genesis.distributed.watchdog import Watchdog

    polling, release, failures = threading.Event(), threading.Event(), []

    def async_error() -> None:  # a poll that takes a while, as ncclCommGetAsyncError may
        polling.set()
        release.wait(2)

    dog = Watchdog(timeout=60, on_failure=failures.append, async_error=async_error, interval=0.01)
    dog.watch(_Event(done=True), "all_reduce")  # starts the thread
    assert polling.wait(2)
    stopper = threading.Thread(target=dog.stop)
    stopper.start()
    stopper.join(0.2)
    assert stopper.is_alive()  # still waiting for the poll in progress
    release.set()
    stopper.join(2)
    assert not stopper.is_alive() and not dog._thread.is_alive()
    dog._async_error = lambda: (_ for _ in ()).throw(RuntimeError("ncclInvalidArgument: comm destroyed"))
    dog.check()
    assert failures == []


def test_the_watchdog_fails_on_a_peers_abort_and_on_a_poll_that_raises():
    """A peer's abort (the store key its watchdog set) aborts this rank too; a poll that raises (a CUDA
    error from cuEventQuery) is a failure, not a watchdog thread that dies silently and leaves a hang."""
    from genesis.distributed.watchdog import Watchdog

    failures: list[str] = []
    dog = Watchdog(timeout=60, on_failure=failures.append, peer_error=lambda: "peer rank 1: all_reduce ...")
    dog.check()
    assert failures == ["peer rank 1: all_reduce ... (a peer aborted the group's communicator)"]

    class Broken:
        def query(self) -> bool:
            raise RuntimeError("cuEventQuery: CUDA_ERROR_ILLEGAL_ADDRESS")

    failures.clear()
    dog = Watchdog(timeout=60, on_failure=failures.append, interval=0.01)
    dog.watch(Broken(), "all_reduce")
    start = time.monotonic()
    while not failures and time.monotonic() - start < 5:
        time.sleep(0.01)
    assert failures and "the watchdog's poll failed: RuntimeError: cuEventQuery" in failures[0], failures
    dog.stop()


def test_an_nccl_failure_tells_the_peers_through_the_store_and_aborts_once():
    from genesis.distributed.nccl import NcclBackend

    class Comm:
        aborts = 0

        def abort(self) -> None:
            Comm.aborts += 1

    store = torch.distributed.HashStore()
    failing = NcclBackend(store=store, key="nccl/0", ranks=[0, 1], rank=0, timeout=5.0)
    peer = NcclBackend(store=store, key="nccl/0", ranks=[0, 1], rank=1, timeout=5.0)
    assert peer._peer_error() is None
    failing._comm = Comm()
    failing._on_failure("all_reduce did not finish within the group's timeout (5 s; it has run 5.1 s)")
    failing.abort()  # the exit handler's: nothing is aborted twice
    assert Comm.aborts == 1 and failing._comm is None
    peer._peer_checked = 0.0
    message = peer._peer_error()
    assert message is not None and message.startswith("peer rank 0: all_reduce did not finish"), message
    peer._comm = Comm()
    peer._on_failure(f"{message} (a peer aborted the group's communicator)")
    assert Comm.aborts == 2
    assert store.get("nccl/0/aborted").decode().startswith("rank 0:")  # the peer's verdict did not overwrite
    with pytest.raises(RuntimeError, match=r"NCCL peer rank 0: all_reduce .* on rank 1"):
        peer._launch("broadcast", [genesis.ones(2)], lambda stream: None)


def test_the_raw_communicator_is_not_guessed_without_a_loaded_libnccl():
    from genesis.distributed import nccl as backend

    class Comm:  # not CuPy's: no libnccl is loaded here either
        def rank_id(self) -> int:
            return 0

    if backend._loaded_libnccl() is None:
        assert backend._raw_communicator(Comm()) is None


def test_ddp_defaults_are_torchs():
    import inspect

    import torch

    ours = inspect.signature(nn.DistributedDataParallel).parameters
    theirs = inspect.signature(torch.nn.parallel.DistributedDataParallel).parameters
    for name in ("find_unused_parameters", "gradient_as_bucket_view"):
        assert ours[name].default == theirs[name].default, name
