"""genesis.utils.data in one process against torch.utils.data: default_collate / default_convert outputs,
samplers and random_split drawing torch's indices from seeded generators, DataLoader orders over epochs,
datasets, argument errors; and the genesis conveniences (seed=, device=)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from nn_helpers import g

import genesis
import genesis_autograd
from genesis.utils import data as gud
from genesis.utils.data import DataLoader, Dataset, TensorDataset


@pytest.mark.parametrize(
    "batch_size,drop_last,expected",
    [(4, False, [4, 4, 2]), (4, True, [4, 4]), (10, False, [10]), (3, False, [3, 3, 3, 1])],
)
def test_batches_in_order(device, batch_size, drop_last, expected):
    x = np.random.default_rng().standard_normal((10, 3)).astype(np.float32)
    y = np.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last, device=device)
    batches = list(loader)
    assert len(loader) == len(expected) and [len(b[1]) for b in batches] == expected
    for xb, yb in batches:
        assert (
            xb.device == genesis_autograd.resolve_device(device)
            and yb.dtype == genesis.int64
            and xb.dtype == genesis.float32
        )
        assert (xb.cpu().numpy() == x[yb.cpu().numpy()]).all()
    assert np.concatenate([b[1].cpu().numpy() for b in batches]).tolist() == list(range(sum(expected)))


def test_shuffle_is_a_seeded_permutation(device):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    order = [
        np.concatenate(
            [yb.cpu().numpy() for _, yb in DataLoader(TensorDataset(x, y), 3, shuffle=True, seed=5, device=device)]
        )
        for _ in range(2)
    ]
    assert sorted(order[0].tolist()) == list(range(10))
    assert order[0].tolist() == order[1].tolist()  # same seed, same order
    assert order[0].tolist() != list(range(10))
    loader = DataLoader(TensorDataset(x, y), 10, shuffle=True, seed=5)
    first, second = (next(iter(loader))[1].numpy().tolist() for _ in range(2))
    assert first != second  # a new permutation each epoch


def test_tensor_dataset_of_tensors_and_a_custom_dataset(device):
    x = genesis.randn(7, 3)
    y = genesis.arange(7)
    ds = TensorDataset(x, y)
    assert len(ds) == 7
    xi, yi = ds[2]
    assert xi.shape == (3,) and yi.item() == 2
    batches = list(DataLoader(ds, batch_size=3, device=device))
    assert [b[0].shape for b in batches] == [(3, 3), (3, 3), (1, 3)]
    assert (batches[1][0].cpu().numpy() == x.numpy()[3:6]).all()

    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return genesis.tensor([float(i), float(i * i)])

    out = list(DataLoader(Squares(), batch_size=2))
    assert [b.shape for b in out] == [(2, 2), (2, 2), (1, 2)]
    assert out[1].numpy().tolist() == [[2.0, 4.0], [3.0, 9.0]]


def test_bad_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(TensorDataset(np.zeros(3)), batch_size=0)
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(np.zeros(3), np.zeros(4))


# ---------------------------------------------------------------------------------------------- vs torch
Point = collections.namedtuple("Point", "x y")


def _same(got, want) -> None:
    """genesis collate output equals torch's: same container types, same tensors (dtype and values)."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, genesis.Tensor), type(got)
        assert got.dtype.torch == want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), (type(got), type(want))
        for a, b in zip(got, want):
            _same(a, b)
    elif isinstance(want, dict):
        assert type(got) is type(want) and list(got) == list(want)
        for k in want:
            _same(got[k], want[k])
    else:
        assert type(got) is type(want) and got == want


def _as_genesis(sample):
    if isinstance(sample, torch.Tensor):
        return g(sample, "cpu")
    if isinstance(sample, dict):
        return type(sample)((k, _as_genesis(v)) for k, v in sample.items())
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(_as_genesis(v) for v in sample))
    if isinstance(sample, (list, tuple)):
        return type(sample)(_as_genesis(v) for v in sample)
    return sample


BATCHES = {
    "tensors": lambda: [torch.randn(2, 3) for _ in range(4)],
    "tuples": lambda: [(torch.randn(3), i, float(i) / 3, i % 2 == 0) for i in range(5)],
    "dicts": lambda: [{"img": torch.randn(2), "label": i, "name": f"n{i}"} for i in range(3)],
    "ordered-dicts": lambda: [collections.OrderedDict(b=torch.arange(i, i + 2), a=np.float32(i)) for i in range(3)],
    "namedtuples": lambda: [Point(torch.randn(2), np.int16(i)) for i in range(3)],
    "numpy": lambda: [np.arange(6, dtype=np.int32).reshape(2, 3) + i for i in range(3)],
    "numpy-scalars": lambda: [np.float64(i) / 7 for i in range(4)],
    "lists": lambda: [[torch.randn(2), [i, i + 1]] for i in range(3)],
    "floats": lambda: [0.1, 0.2, 1 / 3],
    "strings": lambda: ["a", "bc"],
    "int64-tensors": lambda: [torch.randint(0, 9, (4,)) for _ in range(3)],
}


@pytest.mark.parametrize("kind", list(BATCHES))
def test_default_collate_matches_torch(kind):
    batch = BATCHES[kind]()
    _same(gud.default_collate([_as_genesis(s) for s in batch]), tud.default_collate(batch))


@pytest.mark.parametrize("kind", ["tuples", "dicts", "namedtuples", "numpy", "numpy-scalars", "lists", "strings"])
def test_default_convert_matches_torch(kind):
    sample = BATCHES[kind]()[0]
    _same(gud.default_convert(_as_genesis(sample)), tud.default_convert(sample))


def test_default_collate_refuses_what_torch_refuses():
    for batch, error in [
        ([[1, 2], [3]], RuntimeError),
        ([object(), object()], TypeError),
        ([np.array(["a"]), np.array(["b"])], TypeError),
    ]:
        with pytest.raises(error) as expected:
            tud.default_collate(batch)
        with pytest.raises(error) as got:
            gud.default_collate(batch)
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("replacement,num_samples", [(False, None), (False, 23), (False, 4), (True, None), (True, 70)])
def test_random_sampler_draws_torchs_indices(replacement, num_samples):
    data = list(range(10))
    seed = int(np.random.default_rng().integers(2**31))
    tg, gg = torch.Generator().manual_seed(seed), gud.Generator().manual_seed(seed)
    tsampler = tud.RandomSampler(data, replacement, num_samples, generator=tg)
    gsampler = gud.RandomSampler(data, replacement, num_samples, generator=gg)
    assert len(gsampler) == len(tsampler)
    for _ in range(3):  # successive epochs continue the generator's stream
        assert list(gsampler) == list(tsampler)


def test_samplers_without_a_generator_use_the_global_one_as_torch():
    seed = int(np.random.default_rng().integers(2**31))
    torch.manual_seed(seed)
    genesis.manual_seed(seed)
    data = list(range(12))
    assert list(gud.RandomSampler(data)) == list(tud.RandomSampler(data))
    assert list(gud.SubsetRandomSampler([3, 5, 7, 9])) == list(tud.SubsetRandomSampler([3, 5, 7, 9]))
    parts = [list(s.indices) for s in gud.random_split(range(10), [0.5, 0.3, 0.2])]
    assert parts == [list(s.indices) for s in tud.random_split(range(10), [0.5, 0.3, 0.2])]


def test_sequential_subset_and_batch_samplers_match_torch():
    tg, gg = torch.Generator().manual_seed(3), gud.Generator().manual_seed(3)
    assert list(gud.SubsetRandomSampler([2, 4, 6, 8, 10], gg)) == list(tud.SubsetRandomSampler([2, 4, 6, 8, 10], tg))
    for drop_last in (False, True):
        gb = gud.BatchSampler(gud.SequentialSampler(range(10)), 3, drop_last)
        tb = tud.BatchSampler(tud.SequentialSampler(range(10)), 3, drop_last)
        assert list(gb) == list(tb) and len(gb) == len(tb)
    with pytest.raises(ValueError, match="batch_size"):
        gud.BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="num_samples"):
        gud.RandomSampler(range(3), num_samples=0)


@pytest.mark.parametrize("lengths", [[3, 7], [5, 0, 5], [0.25, 0.25, 0.5], [0.33, 0.33, 0.34]])
def test_random_split_matches_torch(lengths):
    seed = int(np.random.default_rng().integers(2**31))
    tparts = tud.random_split(range(10), lengths, generator=torch.Generator().manual_seed(seed))
    gparts = gud.random_split(range(10), lengths, generator=gud.Generator().manual_seed(seed))
    assert [list(p.indices) for p in gparts] == [list(p.indices) for p in tparts]
    assert [list(p) for p in gparts] == [list(p) for p in tparts]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        gud.random_split(range(10), [3, 3])


def test_generator_state_and_seed():
    gen = gud.Generator()
    assert gen.initial_seed() == torch.Generator().initial_seed()
    assert list(gud.RandomSampler(range(8), generator=gen)) == list(
        tud.RandomSampler(range(8), generator=torch.Generator())
    )
    state = gen.manual_seed(11).get_state()
    first = list(gud.RandomSampler(range(8), generator=gen))
    gen.set_state(state)
    assert list(gud.RandomSampler(range(8), generator=gen)) == first
    before = genesis.get_rng_state()
    list(gud.RandomSampler(range(8), generator=gen))
    assert (genesis.get_rng_state().numpy() == before.numpy()).all()  # the global stream is untouched
    with pytest.raises(RuntimeError, match="cpu"):
        gud.Generator("cuda")


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (4, True), (1, False), (10, False)])
def test_shuffled_loader_orders_match_torch_over_epochs(batch_size, drop_last):
    x = torch.arange(10 * 2, dtype=torch.float32).reshape(10, 2)
    y = torch.arange(10)
    seed = int(np.random.default_rng().integers(2**31))
    tloader = tud.DataLoader(
        tud.TensorDataset(x, y),
        batch_size,
        shuffle=True,
        drop_last=drop_last,
        generator=torch.Generator().manual_seed(seed),
    )
    gloader = gud.DataLoader(
        gud.TensorDataset(g(x, "cpu"), g(y, "cpu")),
        batch_size,
        shuffle=True,
        drop_last=drop_last,
        generator=gud.Generator().manual_seed(seed),
    )
    assert len(gloader) == len(tloader)
    for _ in range(3):
        _same(list(gloader), list(tloader))


def test_loader_with_sampler_batch_sampler_and_no_batching_match_torch():
    data = [{"v": torch.tensor([float(i)]), "i": i} for i in range(7)]
    gdata = [_as_genesis(d) for d in data]
    _same(
        list(gud.DataLoader(gdata, batch_size=2, sampler=[6, 0, 3, 3])),
        list(tud.DataLoader(data, batch_size=2, sampler=[6, 0, 3, 3])),
    )
    _same(
        list(gud.DataLoader(gdata, batch_sampler=[[1, 2, 3], [0], [6, 5]])),
        list(tud.DataLoader(data, batch_sampler=[[1, 2, 3], [0], [6, 5]])),
    )
    _same(list(gud.DataLoader(gdata, batch_size=None)), list(tud.DataLoader(data, batch_size=None)))
    _same(
        list(gud.DataLoader(gdata, batch_size=3, collate_fn=lambda b: [d["i"] for d in b])),
        list(tud.DataLoader(data, batch_size=3, collate_fn=lambda b: [d["i"] for d in b])),
    )


def test_loader_argument_errors_match_torch():
    ds = list(range(5))
    cases = [
        dict(sampler=[0, 1], shuffle=True),
        dict(batch_sampler=[[0]], batch_size=2),
        dict(batch_size=None, drop_last=True),
        dict(num_workers=-1),
        dict(prefetch_factor=2),
        dict(persistent_workers=True),
        dict(timeout=-1),
    ]
    for kwargs in cases:
        with pytest.raises(ValueError):
            tud.DataLoader(ds, **kwargs)
        with pytest.raises(ValueError):
            gud.DataLoader(ds, **kwargs)


class Count(gud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class TorchCount(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (None, False)])
def test_iterable_dataset_batches_match_torch(batch_size, drop_last):
    gl = gud.DataLoader(Count(8), batch_size=batch_size, drop_last=drop_last)
    tl = tud.DataLoader(TorchCount(8), batch_size=batch_size, drop_last=drop_last)
    _same(list(gl), list(tl))
    assert len(gl) == len(tl)
    with pytest.raises(ValueError, match="shuffle"):
        gud.DataLoader(Count(3), shuffle=True)


def test_concat_subset_and_chain_datasets_match_torch():
    a, b = list(range(3)), list(range(10, 15))
    gcat, tcat = gud.ConcatDataset([a, b]), tud.ConcatDataset([a, b])
    assert len(gcat) == len(tcat) and [gcat[i] for i in range(-8, 8)] == [tcat[i] for i in range(-8, 8)]
    assert gcat.cumulative_sizes == tcat.cumulative_sizes
    gsub, tsub = gud.Subset(b, [4, 0, 2]), tud.Subset(b, [4, 0, 2])
    assert [gsub[i] for i in range(3)] == [tsub[i] for i in range(3)] and len(gsub) == 3
    assert list(Count(2) + Count(3)) == [0, 1, 0, 1, 2]
    summed = gud.TensorDataset(np.arange(3)) + gud.TensorDataset(np.arange(2))
    assert len(summed) == 5 and isinstance(summed, gud.ConcatDataset)


def test_pin_memory_is_accepted_with_a_warning():
    with pytest.warns(UserWarning, match="pin_memory"):
        loader = gud.DataLoader(list(range(4)), batch_size=2, pin_memory=True)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
