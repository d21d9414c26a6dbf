"""DistributedSampler: each rank's share of a dataset, torch.utils.data.distributed's indices exactly."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

from genesis_autograd import randperm

from .generator import Generator
from .sampler import Sampler


class DistributedSampler(Sampler):
    """The indices of ``dataset`` that rank ``rank`` of ``num_replicas`` visits this epoch.

    With ``shuffle`` every rank draws the same permutation (seeded by ``seed + epoch``: call
    ``set_epoch`` before each epoch for a new order) and takes every ``num_replicas``-th index from
    ``rank`` on. So that every rank gets the same number, the list is padded by repeating its start,
    or, with ``drop_last``, cut to a multiple of ``num_replicas``.

    ``num_replicas`` and ``rank`` default to the default process group's size and this process' rank.
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        from ... import distributed as dist  # only when asked: the sampler works without a process group

        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)  # the whole rounds only
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            with Generator().manual_seed(self.seed + self.epoch).active():  # torch's draw: randperm on its own seed
                indices = randperm(n).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:  # repeat from the start (several times over when the dataset is smaller than the padding)
            padding = self.total_size - n
            indices += (indices * math.ceil(padding / n))[:padding] if padding > len(indices) else indices[:padding]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order to draw (with shuffle): every rank must set the same one."""
        self.epoch = epoch
