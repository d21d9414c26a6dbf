"""Multi-tensor optimizer steps on CUDA: one genesis_kernels.optimizer launch per dtype group.

The launchers need their int64 pointer table on the device. ``_upload`` copies it (an async
host -> device copy on the current stream: no synchronisation) into a slot kept per (device,
stream, table layout): a training loop's launch finds its slot from the second step on, so device
memory is flat from then (gradients freed by ``zero_grad(set_to_none=True)`` come back at other
addresses, so a cache of whole tables by their bytes kept growing, one table per new address mix).
A slot whose rows are unchanged is used as it is; changed rows are copied over it in stream order,
after every launch already queued that reads the old rows.

The kernels stream contiguous tensors. A strided one (a transposed parameter, a state loaded from
a checkpoint as a view) makes the launcher raise ``NotDense`` before anything is launched; the step
then runs on contiguous copies of the strided tensors and copies back what the kernel wrote.

Under CUDA graph capture the launch reads its table at every replay, so a captured launch gets a table
of its own, held by the graph (``keep_alive``) and never a slot, which a later eager step would
overwrite; it is uploaded from pinned memory the graph owns (genesis_storage stages a captured copy):
its device bytes exist only once the graph has replayed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

import numpy as np

import genesis_kernels as gk
import genesis_storage as gs

from .common import View, current_stream_handle, forget_ranges, reg, stream_of
from .elementwise import binary_
from .memory import contiguous, copy_, item

# (device, stream, chunk, row width, table length) -> the slot's device table and the rows it holds now
_SLOTS: OrderedDict[tuple[int, int, int, int, int], tuple[View, bytes]] = OrderedDict()
_KEEP = 32  # slots kept per process (a few optimizers and clip calls, each with a layout of its own)


def _upload(device: int) -> Callable[[np.ndarray, Hashable], int]:
    def upload(table: np.ndarray, table_key: Hashable) -> int:
        graph = gs.current_capture()
        if graph is not None:
            view = gs.from_numpy(table, device)  # staged through pinned memory the graph owns
            graph.keep_alive(view)  # the captured kernel reads it at every replay
            return int(view.ptr)
        # genesis_kernels.optimizer.pack's key: (chunk, row width, the rows' bytes); the rows decide the rest
        chunk, width, rows = cast(tuple[int, int, bytes], table_key)
        slot = (device, current_stream_handle(device), chunk, width, table.size)
        held = _SLOTS.get(slot)
        if held is None:
            view = gs.from_numpy(table, device)
            _SLOTS[slot] = (view, rows)
            while len(_SLOTS) > _KEEP:  # safe: the allocator reuses a dropped table's block in stream order
                _SLOTS.popitem(last=False)
            return int(view.ptr)
        view, current = held
        if current != rows:  # stream-ordered: every launch queued before reads the rows it was given
            view.storage.copy_from_host(table.reshape(-1).view(np.uint8))
            _SLOTS[slot] = (view, rows)
        _SLOTS.move_to_end(slot)
        return int(view.ptr)

    return upload


def _one_dtype_each(lists: tuple[list | None, ...]) -> bool:
    """Whether every list holds one dtype throughout (plain loops: this runs on every optimizer step)."""
    for lst in lists:
        if lst:
            dtype = lst[0].dtype
            for t in lst:
                if t.dtype != dtype:
                    return False
    return True


def _by_dtype(*lists: list | None) -> list[list[int] | None]:
    """Indices grouped so that every list holds one dtype within a group (a launch specialises on it);
    ``[None]`` (every index, one launch) in the usual case that each list has one dtype throughout."""
    count = len(lists[0] or [])
    if _one_dtype_each(lists):
        return [None] if count else []
    groups: dict[tuple, list[int]] = {}
    for i in range(count):
        key = tuple(None if lst is None else lst[i].dtype for lst in lists)
        groups.setdefault(key, []).append(i)
    return list(groups.values())


_Lists = TypeVar("_Lists", list, None)


def _pick(lst: _Lists, idx: list[int] | None) -> _Lists:
    """The entries of ``lst`` at ``idx`` (a list None passes through; idx None: all of it, not copied)."""
    return lst if lst is None or idx is None else [lst[i] for i in idx]


def _launch_dense(launch: Callable[[list], None], lists: list, written: list[bool]) -> None:
    """``launch(lists)``; if the launcher refuses a strided tensor (before launching anything), the same
    on contiguous copies of the strided ones, then the copies of the lists it writes are copied back."""
    try:
        launch(lists)
        return
    except gk.optimizer.NotDense:
        pass
    dense: list = []
    back: list[tuple[View, View]] = []
    for lst, writes in zip(lists, written):
        if lst is None:
            dense.append(None)
            continue
        dense.append([v if v.is_contiguous() else contiguous(v) for v in lst])
        if writes:
            back += [(v, c) for v, c in zip(lst, dense[-1]) if c is not v]
    launch(dense)
    for v, c in back:
        copy_(v, c)


@reg("multi_tensor_adam_")
def multi_tensor_adam_(
    params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, step, masters,
    lr, beta1, beta2, eps, weight_decay, decoupled, maximize, grad_scale, found_inf,
) -> None:  # fmt: skip
    if not params:
        return
    # Every list the kernels store into; with grad_scale that includes the grads (stored back unscaled).
    unscaled = grads if grad_scale is not None else None
    forget_ranges(params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, masters, unscaled)
    device, stream = params[0].device, stream_of(params[0])

    def launch(lists: list) -> None:
        p, g, m, v, vmax, s, w = lists
        gk.optimizer.adam(
            p, g, m, v, vmax, steps=s, step=step, masters=w, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
            weight_decay=weight_decay, decoupled=decoupled, maximize=maximize, grad_scale=grad_scale,
            found_inf=found_inf, upload=_upload(device), stream=stream,
        )  # fmt: skip

    lists = [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, masters]
    written = [True, unscaled is not None, True, True, True, True, True]
    for idx in _by_dtype(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, masters):
        _launch_dense(launch, [_pick(lst, idx) for lst in lists], written)


@reg("multi_tensor_sgd_")
def multi_tensor_sgd_(
    params, grads, momentum_buffers, first_step, masters,
    lr, momentum, dampening, weight_decay, nesterov, maximize, grad_scale, found_inf,
) -> None:  # fmt: skip
    if not params:
        return
    # As Adam; first_step is a list of host flags, not arrays.
    forget_ranges(params, momentum_buffers, masters, grads if grad_scale is not None else None)
    device, stream = params[0].device, stream_of(params[0])
    for idx in _by_dtype(params, grads, momentum_buffers, masters):
        firsts = _pick(first_step, idx)

        def launch(lists: list, firsts: list | None = firsts) -> None:
            p, g, b, w = lists
            gk.optimizer.sgd(
                p, g, b, first_step=firsts, masters=w, lr=lr, momentum=momentum, dampening=dampening,
                weight_decay=weight_decay, nesterov=nesterov, maximize=maximize, grad_scale=grad_scale,
                found_inf=found_inf, upload=_upload(device), stream=stream,
            )  # fmt: skip

        lists = [_pick(lst, idx) for lst in (params, grads, momentum_buffers, masters)]
        _launch_dense(launch, lists, [True, grad_scale is not None, True, True])


@reg("multi_tensor_norm")
def multi_tensor_norm(tensors: list[View], norm_type: float, dtype: str) -> View:
    """The norm of all tensors as one vector: a 0-d array of ``dtype`` on their device."""
    out = gs.empty((), dtype, tensors[0].device)
    groups = [_pick(tensors, idx) for idx in _by_dtype(tensors)]
    gk.optimizer.total_norm(
        groups, out, norm_type=norm_type, upload=_upload(tensors[0].device), stream=stream_of(tensors[0])
    )
    return out


@reg("multi_tensor_clip_")
def multi_tensor_clip_(tensors: list[View], total_norm: View, max_norm: float) -> None:
    if not tensors:
        return
    forget_ranges(tensors)
    for idx in _by_dtype(tensors):
        gk.optimizer.clip_by_total_norm(
            _pick(tensors, idx),
            total_norm,
            max_norm=max_norm,
            upload=_upload(tensors[0].device),
            stream=stream_of(tensors[0]),
        )


@reg("advance_counters_")
def advance_counters_(counters: list[View]) -> list[float]:
    """Each counter += 1 then read back (a synchronisation: device counters are meant for the kernels)."""
    gk.capture.forbid_readback("advance_counters_", "the step counts are read back; keep them on the device")
    for c in counters:
        binary_("add", c, 1)
    return [float(item(c)) for c in counters]
