"""Datasets and a DataLoader with torch's interface (single process)."""

from __future__ import annotations

import numpy as np

from genesis_autograd import Tensor, stack, tensor


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class TensorDataset(Dataset):
    """Rows of equally long tensors (or numpy arrays)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = len(tensors[0])
        if any(len(t) != n for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return len(self.tensors[0])


class DataLoader:
    """Batches of a dataset, shuffled with a seeded generator when asked.

    A TensorDataset over numpy arrays is batched by one fancy-index per array (fast);
    any other dataset is batched item by item and stacked.
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 seed: int | None = None, device=None):
        if batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.device = device
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        n = len(self.dataset)
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        for start in range(0, n, self.batch_size):
            idx = order[start : start + self.batch_size]
            if self.drop_last and len(idx) < self.batch_size:
                return
            yield self._batch(idx)

    def _batch(self, idx):
        ds = self.dataset
        if isinstance(ds, TensorDataset) and all(isinstance(t, np.ndarray) for t in ds.tensors):
            return tuple(tensor(t[idx], device=self.device) for t in ds.tensors)
        items = [ds[int(i)] for i in idx]
        columns = list(zip(*items)) if isinstance(items[0], tuple) else [items]
        out = tuple(
            stack([c if isinstance(c, Tensor) else tensor(c) for c in col]).to(device=self.device)
            if self.device is not None else stack([c if isinstance(c, Tensor) else tensor(c) for c in col])
            for col in columns
        )
        return out if isinstance(items[0], tuple) else out[0]
