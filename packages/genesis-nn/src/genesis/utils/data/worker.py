"""What runs inside a DataLoader worker process, and what it sends back.

A worker fetches and collates batches as the main process asks (one index queue per
worker, one shared result queue). Tensors cross the process boundary as plain bytes
or numpy arrays (``pack`` / ``unpack``), so nothing of the tensor machinery is pickled;
the main process rebuilds them. An exception becomes an ExceptionWrapper that the
main process re-raises with the worker's traceback in its message.
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from genesis_autograd import Tensor, from_numpy, manual_seed

POLL_INTERVAL = 0.1  # seconds between checks of the parent (worker side) or of the workers (main side)


@dataclass(frozen=True)
class WorkerInfo:
    """What get_worker_info() tells code running in a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker: its id, the number of workers, its seed and its copy of the dataset;
    None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception with its traceback, carried across processes as text."""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # an exception type whose constructor wants more than a message
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    """KeyError shows repr() of its message; this shows it as written."""

    def __repr__(self) -> str:
        return self


@dataclass(frozen=True)
class IterableStop:
    """A worker's iterable dataset has no more data."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Persistent workers: start the next epoch."""


# ---------------------------------------------------------------------------------------------- transport
@dataclass(frozen=True)
class _PackedTensor:
    array: np.ndarray | None  # the values, for dtypes numpy has
    raw: bytes | None  # the bytes, for bfloat16
    dtype: str
    shape: tuple[int, ...]


def pack(obj):
    """Tensors inside ``obj`` (any nesting of dicts, lists, tuples, namedtuples) as picklable numpy data."""
    if isinstance(obj, Tensor):
        from ...serialization_bytes import tensor_bytes as _tensor_bytes

        host = obj.detach().cpu()
        if host.dtype.numpy is None:
            return _PackedTensor(None, _tensor_bytes(host), host.dtype.name, tuple(host.shape))
        return _PackedTensor(np.ascontiguousarray(host.numpy()), None, host.dtype.name, tuple(host.shape))
    if isinstance(obj, dict):
        try:
            return type(obj)((k, pack(v)) for k, v in obj.items())
        except TypeError:
            return {k: pack(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(pack(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(pack(v) for v in obj)
    return obj


def unpack(obj):
    """The inverse of pack, in the main process: numpy data back into (cpu) tensors, without copies."""
    if isinstance(obj, _PackedTensor):
        if obj.array is not None:
            return from_numpy(obj.array)
        from genesis_autograd import as_dtype

        from ...serialization_bytes import tensor_from_bytes as _tensor_from_bytes

        return _tensor_from_bytes(obj.raw, as_dtype(obj.dtype), list(obj.shape))
    if isinstance(obj, dict):
        try:
            return type(obj)((k, unpack(v)) for k, v in obj.items())
        except TypeError:
            return {k: unpack(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(unpack(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(unpack(v) for v in obj)
    return obj


# ---------------------------------------------------------------------------------------------- fetching
class MapFetcher:
    """Samples by index (a list of indices when batching), collated."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        fast = _tensor_dataset_batch(self.dataset, index, self.collate_fn)
        if fast is not None:
            return fast
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if getitems else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """The next sample (or batch of samples) of the dataset's iterator; StopIteration at its end."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def _tensor_dataset_batch(dataset, index, collate_fn):
    """A TensorDataset batch by one gather per tensor instead of per-row items and a stack (same result
    as default_collate, much faster); None where that shortcut does not apply."""
    from .collate import default_collate
    from .dataset import TensorDataset

    if type(dataset) is not TensorDataset or collate_fn is not default_collate:
        return None
    if all(isinstance(t, np.ndarray) for t in dataset.tensors):
        return [from_numpy(np.ascontiguousarray(t[index])) for t in dataset.tensors]
    if all(isinstance(t, Tensor) for t in dataset.tensors):
        from genesis_autograd import tensor

        rows = tensor(index, dtype="int64")
        return [t[rows.to(device=t.device)] for t in dataset.tensors]
    return None


# ---------------------------------------------------------------------------------------------- the loop
def worker_loop(
    iterable: bool,
    dataset,
    index_queue,
    data_queue,
    done_event,
    auto_collation: bool,
    collate_fn,
    drop_last: bool,
    base_seed: int,
    init_fn,
    worker_id: int,
    num_workers: int,
    parent_pid: int,
) -> None:
    """Serve (task index, batch indices) requests until told to stop (None) or the parent is gone."""
    global _worker_info
    try:
        seed = base_seed + worker_id
        random.seed(seed)
        manual_seed(seed)
        np.random.seed(np.random.SeedSequence([worker_id, base_seed % 2**63]).generate_state(4))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        fetcher_type = IterableFetcher if iterable else MapFetcher
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = fetcher_type(dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False
        while True:
            try:
                request = index_queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid:  # orphaned: the main process died
                    break
                continue
            if isinstance(request, ResumeIteration):
                data_queue.put((request, None))
                iteration_end = False
                if iterable:
                    fetcher = fetcher_type(dataset, auto_collation, collate_fn, drop_last)
                continue
            if request is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            task, index = request
            data: Any  # a batch, or the ExceptionWrapper / IterableStop the main process acts on
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    # fetcher is None only after an init error, which the first request reported; a later
                    # request reports this AttributeError instead, as torch's worker does.
                    data = pack(fetcher.fetch(index))  # type: ignore[union-attr]
                except StopIteration:
                    if not iterable:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                    else:
                        data = IterableStop(worker_id)
                        iteration_end = True
                except Exception:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((task, data))
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
