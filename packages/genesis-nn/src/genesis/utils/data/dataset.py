"""Datasets: map-style (Dataset, TensorDataset, ConcatDataset, Subset) and IterableDataset; random_split."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from genesis_autograd import randperm

from .generator import Generator, drawing_from


class Dataset:
    """A map from indices (or keys) to samples: subclasses give ``__getitem__`` (and usually ``__len__``)."""

    def __getitem__(self, index) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> Dataset:
        """The two datasets one after the other (a ConcatDataset; a ChainDataset for iterable ones)."""
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses give ``__iter__``. With worker processes every worker iterates its
    own copy, so a dataset that should not repeat itself shards with get_worker_info()."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Row i of each tensor (or numpy array); all of the same length."""

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        if any(len(t) != len(tensors[0]) for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return len(self.tensors[0])


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        offset = idx if which == 0 else idx - self.cumulative_sizes[which - 1]
        return self.datasets[which][offset]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator: Generator | None = None) -> list[Subset]:
    """Split into non-overlapping random Subsets of the given lengths, or fractions of len(dataset) (the
    remainder going one by one to the first parts, as torch does)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        n = len(dataset)  # type: ignore[arg-type]  # a dataset to split has a length (TypeError otherwise)
        sizes = [math.floor(n * frac) for frac in lengths]
        for frac in lengths:
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {lengths.index(frac)} is not between 0 and 1")
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=2
                )
        lengths = sizes
    if sum(lengths) != len(dataset):  # type: ignore[arg-type]  # as above
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    with drawing_from(generator):
        indices = randperm(sum(lengths)).tolist()  # type: ignore[arg-type]  # the lengths are counts by now
    return [Subset(dataset, indices[end - length : end]) for end, length in zip(itertools.accumulate(lengths), lengths)]
