"""The gradient reducer of DistributedDataParallel: buckets of gradients, all-reduced as backward fills them.

Parameters are grouped into buckets of about ``bucket_cap_mb`` in reverse registration order (roughly
the order backward produces their gradients), one dtype and device per bucket; the first bucket is
capped at 1 MiB (torch's ``_DEFAULT_FIRST_BUCKET_BYTES``) so that communication starts early in
backward. Each bucket owns one flat buffer, allocated once, with a view of it per parameter (its slot).

A post-accumulate-grad hook on every parameter copies the new gradient into its slot (one copy kernel,
issued while backward still runs) and marks it ready; when a bucket's last gradient is ready, and every
bucket before it has been launched, the bucket's buffer is all-reduced (averaged: ReduceOp.AVG, no
division kernel) in place, asynchronously, so communication overlaps the rest of backward. Launching
strictly in bucket order keeps every rank's sequence of collectives identical. A final callback queued
on the engine makes the current stream wait for the all-reduces (NCCL: no host blocking).

With ``gradient_as_bucket_view`` (off by default, as in torch) each ``.grad`` *is* its slot: the hook points
``.grad`` at the slot after the first copy, later backwards (``zero_grad(set_to_none=False)``, no_sync
accumulation) add into it in place and need no copy, and the averages need no copy back. Without it
the averages are copied back into ``.grad``, one copy per parameter at the end of backward (torch's
default semantics: ``.grad`` never aliases the bucket). The host cost matters: a GPT step is host-bound,
and the copy back of 148 parameters was most of the 4.4 ms between backward's last kernel and the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import genesis_autograd as ag
from genesis_autograd import Tensor

from ... import distributed as dist

FIRST_BUCKET_BYTES = 1 << 20  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


def assign_buckets(params: Sequence[Tensor], cap_bytes: int, first_cap_bytes: int | None = None) -> list[list[int]]:
    """Indices of ``params`` in buckets: reverse order, at most ``cap_bytes`` each (``first_cap_bytes``
    for the first bucket of each dtype and device; a larger parameter gets a bucket of its own), one
    (dtype, device) per bucket."""
    first = cap_bytes if first_cap_bytes is None else min(first_cap_bytes, cap_bytes)
    buckets: list[list[int]] = []
    open_: dict[tuple, tuple[list[int] | None, int]] = {}  # (dtype, device) -> (the open bucket, its bytes)
    started: set[tuple] = set()  # the keys whose first bucket is closed
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p.dtype, str(p.device))
        bucket, size = open_.get(key, (None, 0))
        if bucket is None:
            bucket = []
            buckets.append(bucket)
        bucket.append(i)
        size += p.numel() * p.dtype.itemsize
        cap = cap_bytes if key in started else first
        if size >= cap:
            started.add(key)
            open_[key] = (None, 0)
        else:
            open_[key] = (bucket, size)
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
        self,
        params: Sequence[Tensor],
        group: Any,
        bucket_cap_mb: float,
        find_unused_parameters: bool,
        gradient_as_bucket_view: bool = False,
    ) -> None:
        self.params, self.group, self.find_unused = params, group, find_unused_parameters
        self.as_view = gradient_as_bucket_view
        self.buckets = assign_buckets(params, int(bucket_cap_mb * 1024 * 1024), FIRST_BUCKET_BYTES)
        self.bucket_of = {i: b for b, bucket in enumerate(self.buckets) for i in bucket}
        # One flat buffer per bucket, made once, and each parameter's slot: a view of it in the
        # parameter's shape. (Parameters were moved to their device before DDP wraps them.)
        self.flat: list[Tensor] = []
        self.slot: list[Tensor] = [None] * len(params)  # type: ignore[list-item]
        with ag.no_grad():
            for bucket in self.buckets:
                first = params[bucket[0]]
                total = sum(params[i].numel() for i in bucket)
                flat = ag.zeros(total, dtype=first.dtype, device=first.device)
                offset = 0
                for i in bucket:
                    n = params[i].numel()
                    self.slot[i] = flat[offset : offset + n].view(params[i].shape)
                    offset += n
                self.flat.append(flat)
        self._handles = [p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(params)]
        self._armed = False  # a synchronising forward ran: its backward reduces
        self._started = False
        self.unfinished = False  # the last backward left buckets unreduced (an unused parameter)
        self.missing: list[int] = []
        self._unused: list[int] = []
        self._works: list[tuple[int, Any]] = []

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
        self._works = []  # (bucket, Work)
        self._unused = []
        if self.find_unused:
            reached = reachable_leaves(outputs)
            self._unused = [i for i, p in enumerate(self.params) if id(p) not in reached]

    def skip_backward(self) -> None:
        """After a forward that does not synchronise (no_sync, or grad mode off): hooks do nothing."""
        self._armed = False

    def _hook(self, index: int):
        slot = self.slot[index]

        def hook(param: Tensor) -> None:
            if not self._armed:
                return
            if not self._started:  # the first gradient of this backward
                self._started = True
                ag.queue_callback(self._finalize)
                for unused in self._unused:
                    self._mark_ready(unused)
            grad = param.grad
            if grad is not slot and grad is not None:  # a new .grad (it was None, or replaced): into the bucket
                # On the arrays: the slot is no graph's input (a Tensor copy_ costs four times the host time,
                # and this runs for every parameter in every backward: 148 times a GPT-2 step).
                slot.data.copy_(grad.data)
                if self.as_view:
                    param.grad = slot
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
        pending = self._pending
        pending[self.bucket_of[index]] -= 1
        while self._next < len(self.buckets) and pending[self._next] == 0:
            self._launch(self._next)
            self._next += 1

    def _launch(self, b: int) -> None:
        if self._unused:  # unused here: the slot holds its .grad (accumulated earlier), else zeros
            unused = set(self._unused)
            for i in self.buckets[b]:
                if i in unused:
                    grad, slot = self.params[i].grad, self.slot[i]
                    if grad is None:
                        slot.zero_()
                    elif grad is not slot:
                        slot.copy_(grad)
        work = dist.all_reduce(self.flat[b], dist.ReduceOp.AVG, group=self.group, async_op=True)
        self._works.append((b, work))

    # ------------------------------------------------------------- end of backward
    def _finalize(self) -> None:
        self._armed = False
        self.unfinished = self._next < len(self.buckets)
        self.missing = [i for i in range(len(self.params)) if i not in self._ready]
        used = self._used_anywhere() if self.find_unused else None
        works, self._works = self._works, []  # no finished Work outlives the backward
        for b, work in works:
            work.wait()
            self._publish(b, used)

    def _publish(self, b: int, used: list[bool] | None) -> None:
        """Make the bucket's averages the parameters' ``.grad``: they already are (views) where the hook ran."""
        with ag.no_grad():
            for i in self.buckets[b]:
                p, slot = self.params[i], self.slot[i]
                grad = p.grad
                if grad is slot:
                    continue
                if grad is not None:
                    if self.as_view:
                        p.grad = slot
                    else:
                        grad.copy_(slot)
                elif used is None or used[i]:  # unused here, used on another rank: the average, as torch
                    p.grad = slot if self.as_view else slot.clone()

    def _used_anywhere(self) -> list[bool]:
        """Which parameters had a gradient on some rank: one all-reduce (MAX) of this rank's use flags."""
        unused = set(self._unused)
        device = self.params[0].device if self.params else None  # where the group's backend reduces
        used = ag.tensor([0 if i in unused else 1 for i in range(len(self.params))], dtype=ag.int32, device=device)
        dist.all_reduce(used, dist.ReduceOp.MAX, group=self.group)
        return [bool(v) for v in used.tolist()]
