"""DataLoader: batches from a dataset, in the main process or in worker processes (torch's interface).

Indices come from a sampler (sequential, or random with a Generator when shuffling),
grouped by a BatchSampler; workers fetch and collate, round-robin, at most
``prefetch_factor`` batches ahead each, and the main process hands batches out in
sampler order. A worker's exception is re-raised here with its traceback; a worker
that dies (killed, crashed) raises RuntimeError instead of hanging the loop.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import time
import warnings
from collections.abc import Callable, Iterable

from genesis_autograd import Tensor

from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .generator import Generator
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _random_int64
from .worker import POLL_INTERVAL, ExceptionWrapper, IterableStop, ResumeIteration, unpack, worker_loop


class _InfiniteConstantSampler(Sampler):
    """For an IterableDataset: endless None "indices" (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate a dataset in batches.

    torch.utils.data.DataLoader's arguments and behaviour; genesis adds two keyword-only
    conveniences: ``seed`` (shuffle with a Generator seeded so) and ``device`` (move every
    tensor of a batch there). ``pin_memory`` is accepted and has no effect: genesis_autograd
    does not expose pinned host tensors yet.
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context=None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        seed: int | None = None,
        device=None,
    ) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let num_workers "
                "> 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if seed is not None:
            if generator is not None:
                raise ValueError("give either generator or seed, not both")
            generator = Generator().manual_seed(seed)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.generator = generator
        self.device = device
        self._iterable = isinstance(dataset, IterableDataset)

        if self._iterable:
            if isinstance(shuffle, bool) and shuffle:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                    f"got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            # A map-style dataset has a length here (Dataset declares no __len__, as torch's: a dataset
            # without one fails in len(), as in torch).
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator: _MultiProcessIter | None = None
        if pin_memory:
            warnings.warn("pin_memory=True has no effect: genesis has no pinned host tensors yet", stacklevel=2)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._iterable:  # an IterableDataset's own __len__, if it has one (TypeError otherwise, as torch)
            length = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def __iter__(self):
        if self.num_workers == 0:
            batches = _SingleProcessIter(self)
        elif self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            batches = self._iterator
        else:
            batches = _MultiProcessIter(self)
        return batches if self.device is None else _OnDevice(batches, self.device)


def _to_device(obj, device):
    if isinstance(obj, Tensor):
        return obj.to(device=device)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(v, device) for v in obj)
    return obj


class _OnDevice:
    """Batches moved to ``device`` (the ``device=`` convenience)."""

    def __init__(self, batches, device) -> None:
        self.batches, self.device = batches, device

    def __iter__(self):
        return self

    def __next__(self):
        return _to_device(next(self.batches), self.device)

    def __len__(self) -> int:
        return len(self.batches)


class _BaseIter:
    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._sampler_iter = iter(loader._index_sampler)
        # torch draws a base seed from the loader's generator here (the workers' seeds); drawing it here
        # too keeps the generator's stream, and so the shuffled order, the same as torch's
        self._base_seed = _random_int64(loader.generator)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        from .worker import IterableFetcher, MapFetcher

        fetcher = IterableFetcher if loader._iterable else MapFetcher
        self._fetcher = fetcher(loader.dataset, loader._auto_collation, loader.collate_fn, loader.drop_last)

    def __next__(self):
        index = next(self._sampler_iter)
        return self._fetcher.fetch(index)


class _MultiProcessIter(_BaseIter):
    """Worker processes fed round-robin through one index queue each; results reordered by task number."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        context = loader.multiprocessing_context
        if context is None:
            context = multiprocessing
        elif isinstance(context, str):
            context = multiprocessing.get_context(context)
        self._num_workers = loader.num_workers
        assert loader.prefetch_factor is not None, "DataLoader sets it whenever num_workers > 0"
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        self._index_queues = []
        self._workers = []
        self._shutdown = False
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # a queue of a dead worker must not block our exit
            process = context.Process(
                target=worker_loop,
                args=(
                    loader._iterable,
                    loader.dataset,
                    index_queue,
                    self._result_queue,
                    self._done_event,
                    loader._auto_collation,
                    loader.collate_fn,
                    loader.drop_last,
                    self._base_seed,
                    loader.worker_init_fn,
                    worker_id,
                    self._num_workers,
                    os.getpid(),
                ),
                daemon=True,
            )
            process.start()
            self._index_queues.append(index_queue)
            self._workers.append(process)
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = 0  # the next task number to send
        self._rcvd_idx = 0  # the next task number to hand out
        self._task_info: dict[int, tuple] = {}  # task -> (worker,) while pending, (worker, data) once here
        self._outstanding = 0
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: tell each one a new epoch starts, and wait for the answers
            for index_queue in self._index_queues:
                index_queue.put(ResumeIteration())
            waiting = self._num_workers
            while waiting:
                answer, _ = self._get()
                if isinstance(answer, ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch):
            self._put_index()

    def _put_index(self) -> None:
        if self._outstanding >= self._prefetch:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._cycle)
            if self._active[worker]:
                break
        else:
            return  # every worker's iterable is exhausted
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._outstanding += 1
        self._send_idx += 1

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)  # a task of a worker that ran dry
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            task, data = self._get()
            self._outstanding -= 1
            if isinstance(data, IterableStop):
                self._active[data.worker_id] = False
                self._put_index()
                continue
            if task != self._rcvd_idx:  # early: keep it until its turn
                self._task_info[task] += (data,)
                continue
            del self._task_info[task]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._put_index()
        if isinstance(data, ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return unpack(data)

    def _get(self):
        """The next result; RuntimeError if a worker died or ``timeout`` passed without one."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = POLL_INTERVAL if deadline is None else max(0.0, min(POLL_INTERVAL, deadline - time.monotonic()))
            try:
                return self._result_queue.get(timeout=wait)
            except queue.Empty:
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    codes = ", ".join(str(w.exitcode) for w in dead)
                    self._shutdown_workers()
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {pids}) exited unexpectedly (exit code(s) {codes})"
                    ) from None
                if deadline is not None and time.monotonic() >= deadline:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for index_queue, worker in zip(self._index_queues, self._workers):
            if worker.is_alive():
                index_queue.put(None)
        for worker in self._workers:
            worker.join(timeout=5 * POLL_INTERVAL)
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=5 * POLL_INTERVAL)
        for q in [*self._index_queues, self._result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:  # interpreter shutdown: the modules may already be gone
            pass


__all__ = ["DataLoader"]
