"""TensorDataset and DataLoader: batching, shuffling, drop_last, devices."""

from __future__ import annotations

import numpy as np
import pytest

import genesis
from genesis.utils.data import DataLoader, Dataset, TensorDataset


@pytest.mark.parametrize("batch_size,drop_last,expected", [(4, False, [4, 4, 2]), (4, True, [4, 4]),
                                                           (10, False, [10]), (3, False, [3, 3, 3, 1])])
def test_batches_in_order(device, batch_size, drop_last, expected):
    x = np.random.default_rng().standard_normal((10, 3)).astype(np.float32)
    y = np.arange(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last, device=device)
    batches = list(loader)
    assert len(loader) == len(expected) and [len(b[1]) for b in batches] == expected
    for xb, yb in batches:
        assert xb.device == genesis.device(device) and yb.dtype == genesis.int64 and xb.dtype == genesis.float32
        assert (xb.cpu().numpy() == x[yb.cpu().numpy()]).all()
    assert np.concatenate([b[1].cpu().numpy() for b in batches]).tolist() == list(range(sum(expected)))


def test_shuffle_is_a_seeded_permutation(device):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    order = [np.concatenate([yb.cpu().numpy() for _, yb in DataLoader(TensorDataset(x, y), 3, shuffle=True,
                                                                       seed=5, device=device)])
             for _ in range(2)]
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
