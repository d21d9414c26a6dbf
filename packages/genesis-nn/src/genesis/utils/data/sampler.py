"""Samplers: the order in which a DataLoader visits a map-style dataset (torch's draws, torch's orders)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized

from genesis_autograd import empty, int64, randint, randperm

from .generator import Generator, drawing_from


def _random_int64(generator: Generator | None) -> int:
    """One draw of a random int64 (how torch derives a seed from a generator)."""
    with drawing_from(generator):
        return int(empty((), dtype=int64).random_().item())


class Sampler:
    """Iterates over indices (or lists of indices) of a dataset."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation each epoch (``num_samples`` of them, drawn from successive permutations), or
    ``num_samples`` draws with replacement; from ``generator``, or from a generator seeded by one draw of
    the global one."""

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(_random_int64(None))
        if self.replacement:
            # torch draws in chunks of 32, so the same generator gives the same indices
            for _ in range(self.num_samples // 32):
                with generator.active():
                    chunk = randint(0, n, (32,)).tolist()
                yield from chunk
            with generator.active():
                chunk = randint(0, n, (self.num_samples % 32,)).tolist()
            yield from chunk
        else:
            for _ in range(self.num_samples // n):
                with generator.active():
                    perm = randperm(n).tolist()
                yield from perm
            with generator.active():
                perm = randperm(n).tolist()
            yield from perm[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        with drawing_from(self.generator):
            perm = randperm(len(self.indices)).tolist()
        for i in perm:
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while True:
            batch = [idx for _, idx in zip(range(self.batch_size), it)]
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        # The sampler's length: a BatchSampler over an unsized iterable has none (TypeError, as torch).
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]
