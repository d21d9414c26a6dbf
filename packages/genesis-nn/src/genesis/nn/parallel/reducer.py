"""The gradient reducer of DistributedDataParallel: buckets of gradients, all-reduced as backward fills them.

Parameters are grouped into buckets of about ``bucket_cap_mb`` in reverse registration order (roughly
the order backward produces their gradients), one dtype and device per bucket. A post-accumulate-grad
hook on every parameter marks it ready; when a bucket's last gradient is ready, and every bucket before it
has been launched, its gradients are flattened into one buffer and all-reduced (averaged) asynchronously,
so communication overlaps the rest of backward. Launching strictly in bucket order keeps every rank's
sequence of collectives identical. A final callback queued on the engine waits for the all-reduces at
the end of backward and copies the averages back into ``.grad``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import genesis_autograd as ag
from genesis_autograd import Tensor

from ... import distributed as dist


def assign_buckets(params: Sequence[Tensor], cap_bytes: int) -> list[list[int]]:
    """Indices of ``params`` in buckets: reverse order, at most ``cap_bytes`` each (a larger parameter
    gets a bucket of its own), one (dtype, device) per bucket."""
    buckets: list[list[int]] = []
    open_: dict[tuple, tuple[list[int] | None, int]] = {}  # (dtype, device) -> (the open bucket, its bytes)
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p.dtype, str(p.device))
        bucket, size = open_.get(key, (None, 0))
        if bucket is None:
            bucket = []
            buckets.append(bucket)
        bucket.append(i)
        size += p.numel() * p.dtype.itemsize
        open_[key] = (None, 0) if size >= cap_bytes else (bucket, size)
    return buckets


def reachable_leaves(outputs: Any) -> set[int]:
    """ids of the leaf tensors the autograd graph of ``outputs`` (tensors in any nesting) leads to."""
    starts: list[Any] = []
    stack = [outputs]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            if item.grad_fn is not None:
                starts.append(item.grad_fn)
            elif item.requires_grad:
                starts.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    found, seen = set(), set()
    while starts:
        node = starts.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Tensor):  # an output that is itself a parameter
            found.add(id(node))
            continue
        variable = getattr(node, "variable", None)  # an AccumulateGrad: the leaf it feeds
        if variable is not None:
            found.add(id(variable))
        starts.extend(child for child, _ in getattr(node, "next_functions", ()) if child is not None)
    return found


class Reducer:
    """Buckets, readiness and the in-flight all-reduces of one DistributedDataParallel."""

    def __init__(
        self, params: Sequence[Tensor], group: Any, bucket_cap_mb: float, find_unused_parameters: bool
    ) -> None:
        self.params, self.group, self.find_unused = params, group, find_unused_parameters
        self.buckets = assign_buckets(params, int(bucket_cap_mb * 1024 * 1024))
        self.bucket_of = {i: b for b, bucket in enumerate(self.buckets) for i in bucket}
        self._handles = [p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(params)]
        self._armed = False  # a synchronising forward ran: its backward reduces
        self.unfinished = False  # the last backward left buckets unreduced (an unused parameter)

    def remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()

    # ------------------------------------------------------------- per iteration
    def prepare_for_backward(self, outputs: Any) -> None:
        """After a forward that synchronises: reset readiness, and find the unused parameters."""
        self._armed, self._started = True, False
        self._pending = [len(bucket) for bucket in self.buckets]
        self._ready: set[int] = set()
        self._next = 0  # the next bucket to launch
        self._works: list[tuple[int, Tensor, Any]] = []  # (bucket, flat buffer, Work)
        self._unused: list[int] = []
        if self.find_unused:
            reached = reachable_leaves(outputs)
            self._unused = [i for i, p in enumerate(self.params) if id(p) not in reached]

    def skip_backward(self) -> None:
        """After a forward that does not synchronise (no_sync, or grad mode off): hooks do nothing."""
        self._armed = False

    def _hook(self, index: int):
        def hook(param: Tensor) -> None:
            if not self._armed:
                return
            if not self._started:  # the first gradient of this backward
                self._started = True
                ag.queue_callback(self._finalize)
                for unused in self._unused:
                    self._mark_ready(unused)
            self._mark_ready(index)

        return hook

    def _mark_ready(self, index: int) -> None:
        if index in self._ready:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. Parameter at index {index} has been marked as "
                "ready twice: it may be used by several reentrant backward passes, or it is among the unused "
                "parameters (find_unused_parameters=True) yet received a gradient."
            )
        self._ready.add(index)
        bucket = self.bucket_of[index]
        self._pending[bucket] -= 1
        while self._next < len(self.buckets) and self._pending[self._next] == 0:
            self._launch(self._next)
            self._next += 1

    def _launch(self, b: int) -> None:
        grads = []
        for i in self.buckets[b]:
            p = self.params[i]
            grads.append((p.grad if p.grad is not None else ag.zeros_like(p)).detach().reshape(-1))
        with ag.no_grad():
            flat = ag.cat(grads) if len(grads) > 1 else grads[0].clone()
        self._works.append((b, flat, dist.all_reduce(flat, dist.ReduceOp.AVG, group=self.group, async_op=True)))

    # ------------------------------------------------------------- end of backward
    def _finalize(self) -> None:
        self._armed = False
        self.unfinished = self._next < len(self.buckets)
        self.missing = [i for i in range(len(self.params)) if i not in self._ready]
        used = self._used_anywhere() if self.find_unused else None
        works, self._works = self._works, []  # no finished Work (nor its buffer) outlives the backward
        for b, flat, work in works:
            work.wait()
            self._unflatten(b, flat, used)

    def _unflatten(self, b: int, flat: Tensor, used: list[bool] | None) -> None:
        offset = 0
        with ag.no_grad():
            for i in self.buckets[b]:
                p = self.params[i]
                n = p.numel()
                average = flat[offset : offset + n].view(p.shape)
                offset += n
                if p.grad is not None:
                    p.grad.copy_(average)
                elif used is None or used[i]:
                    p.grad = average.clone()  # unused here, used on another rank: the average, as torch

    def _used_anywhere(self) -> list[bool]:
        """Which parameters had a gradient on some rank: one all-reduce (MAX) of this rank's use flags."""
        unused = set(self._unused)
        device = self.params[0].device if self.params else None  # where the group's backend reduces
        used = ag.tensor([0 if i in unused else 1 for i in range(len(self.params))], dtype=ag.int32, device=device)
        dist.all_reduce(used, dist.ReduceOp.MAX, group=self.group)
        return [bool(v) for v in used.tolist()]
