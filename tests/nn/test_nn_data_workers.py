"""DataLoader with worker processes: the same batches as torch's loader and as num_workers=0, worker_init_fn
and get_worker_info, IterableDataset sharding, persistent workers, tensors of every dtype crossing the process
boundary, a worker's exception re-raised with its traceback, a killed worker and a timeout reported instead
of a hang. Two workers and small data: CI has two cores."""

from __future__ import annotations

import collections
import os
import signal
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from nn_helpers import g

import genesis
from genesis.utils import data as gud

pytestmark = pytest.mark.timeout(120)

Sample = collections.namedtuple("Sample", "x label")


class Rows(gud.Dataset):
    """Row i of a fixed array, as a dict with a namedtuple and a bfloat16 tensor."""

    def __init__(self, n: int = 13) -> None:
        self.data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i):
        row = genesis.from_numpy(self.data[i].copy())
        return {"sample": Sample(row, i), "half": row.to(dtype=genesis.bfloat16), "name": f"r{i}"}


def _check_rows(batches, order):
    seen = []
    for batch in batches:
        labels = batch["sample"].label.tolist()
        seen += labels
        assert isinstance(batch["sample"], Sample) and batch["name"] == [f"r{i}" for i in labels]
        np.testing.assert_array_equal(batch["sample"].x.numpy(), np.arange(45, dtype=np.float32).reshape(15, 3)[labels])
        assert batch["half"].dtype == genesis.bfloat16
        np.testing.assert_array_equal(batch["half"].float().numpy(), batch["sample"].x.numpy())
    assert seen == order


def test_workers_give_the_batches_of_a_single_process_loader():
    ds = Rows(15)
    expected = list(range(15))
    _check_rows(gud.DataLoader(ds, batch_size=4, num_workers=2), expected)
    gen = gud.Generator().manual_seed(7)
    single = [
        b["sample"].label.tolist()
        for b in gud.DataLoader(ds, batch_size=4, shuffle=True, generator=gud.Generator().manual_seed(7))
    ]
    multi = gud.DataLoader(ds, batch_size=4, shuffle=True, generator=gen, num_workers=2, prefetch_factor=1)
    _check_rows(multi, [i for batch in single for i in batch])


def test_shuffled_worker_loader_orders_match_torch():
    x = torch.arange(22, dtype=torch.float64).reshape(11, 2)
    seed = int(np.random.default_rng().integers(2**31))
    tl = tud.DataLoader(
        tud.TensorDataset(x), batch_size=3, shuffle=True, num_workers=2, generator=torch.Generator().manual_seed(seed)
    )
    gl = gud.DataLoader(
        gud.TensorDataset(g(x, "cpu")),
        batch_size=3,
        shuffle=True,
        num_workers=2,
        generator=gud.Generator().manual_seed(seed),
    )
    for _ in range(2):
        got = [b[0].numpy().tolist() for b in gl]
        assert got == [b[0].numpy().tolist() for b in tl]


class WhoAmI(gud.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = gud.get_worker_info()
        return np.array(
            [
                i,
                info.id,
                info.num_workers,
                info.seed % 1000,
                os.getpid(),
                int(os.environ.get("GENESIS_TEST_INIT", "-1")),
            ]
        )


def _init(worker_id):
    os.environ["GENESIS_TEST_INIT"] = str(10 + worker_id)


def test_worker_init_fn_and_get_worker_info():
    assert gud.get_worker_info() is None
    rows = np.concatenate(
        [b.numpy() for b in gud.DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=_init)]
    )
    assert rows[:, 0].tolist() == list(range(8))
    assert rows[:, 1].tolist() == [0, 0, 1, 1, 0, 0, 1, 1]  # batches go round-robin
    assert set(rows[:, 2]) == {2}
    assert rows[:, 5].tolist() == [10 + w for w in rows[:, 1]]
    seeds = {w: s for w, s in zip(rows[:, 1], rows[:, 3])}
    assert (seeds[1] - seeds[0]) % 1000 == 1  # base seed + worker id
    assert len(set(rows[:, 4])) == 2 and os.getpid() not in set(rows[:, 4])


class Stream(gud.IterableDataset):
    def __init__(self, n, shard):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = gud.get_worker_info()
        if self.shard and info is not None:
            return iter(range(info.id, self.n, info.num_workers))
        return iter(range(self.n))


class TorchStream(tud.IterableDataset):
    def __init__(self, n, shard):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = tud.get_worker_info()
        if self.shard and info is not None:
            return iter(range(info.id, self.n, info.num_workers))
        return iter(range(self.n))


@pytest.mark.parametrize("shard", [False, True])
@pytest.mark.parametrize("batch_size,drop_last", [(2, False), (3, True)])
def test_iterable_dataset_with_workers_matches_torch(shard, batch_size, drop_last):
    gl = gud.DataLoader(Stream(9, shard), batch_size=batch_size, drop_last=drop_last, num_workers=2)
    tl = tud.DataLoader(TorchStream(9, shard), batch_size=batch_size, drop_last=drop_last, num_workers=2)
    got = [b.tolist() for b in gl]
    assert got == [b.tolist() for b in tl]
    flat = sorted(i for batch in got for i in batch)
    if not shard and not drop_last:  # each worker iterates the whole dataset, as in torch
        assert flat == sorted(list(range(9)) * 2)
    if shard and not drop_last:
        assert flat == list(range(9))


class Pids(gud.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return os.getpid()


def test_persistent_workers_are_reused_across_epochs():
    loader = gud.DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
    first = {p for b in loader for p in b.tolist()}
    second = {p for b in loader for p in b.tolist()}
    assert first == second and len(first) == 2
    fresh = gud.DataLoader(Pids(), batch_size=2, num_workers=2)
    assert {p for b in fresh for p in b.tolist()}.isdisjoint(first)
    it = loader._iterator
    del loader
    it._shutdown_workers()
    assert all(not w.is_alive() for w in it._workers)


def _fails_at_three(i):
    if i == 3:
        raise ValueError(f"bad sample {i}")
    return i


class Failing(gud.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return _fails_at_three(i)


def test_a_worker_exception_is_reraised_with_its_traceback():
    loader = gud.DataLoader(Failing(), batch_size=2, num_workers=2)
    got = []
    with pytest.raises(ValueError) as error:
        for batch in loader:
            got.append(batch.tolist())
    assert got == [[0, 1]]
    message = str(error.value)
    assert "Caught ValueError in DataLoader worker process 1" in message
    assert "_fails_at_three" in message and "bad sample 3" in message


class Dies(gud.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_a_killed_worker_raises_instead_of_hanging():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(gud.DataLoader(Dies(), batch_size=1, num_workers=2))
    assert time.monotonic() - start < 30


class Slow(gud.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            time.sleep(5)
        return i


def test_timeout_raises():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"timed out after 0\.5 seconds"):
        list(gud.DataLoader(Slow(), batch_size=1, num_workers=1, timeout=0.5))
    assert time.monotonic() - start < 4


def test_spawned_workers_work_too():
    loader = gud.DataLoader(
        gud.TensorDataset(np.arange(6)), batch_size=2, num_workers=2, multiprocessing_context="spawn"
    )
    assert [b.tolist() for b in (batch[0] for batch in loader)] == [[0, 1], [2, 3], [4, 5]]
