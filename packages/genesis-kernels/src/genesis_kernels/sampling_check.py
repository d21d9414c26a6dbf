"""multinomial's validation of its probabilities on the device: no host wait, capturable in a CUDA graph.

One launch (a program per block of rows) reads each row of the (rows, k) probabilities, in any float dtype
and any strides, and writes it as float64 into a contiguous ``out``: the rows the draw then samples from.
A row that holds a negative, nan or infinite value, or whose sum is not positive, is invalid: the kernel
marks it in an *error flag* (three int64: "a bad element", "a row sum <= 0", the first invalid row and
why) and writes that row as all ones instead (a uniform distribution), so the draw that follows stays
defined and every index it returns lies in [0, k).

The flag is pinned host memory mapped into the device, so the host reads it with a load, never a
stream synchronisation:

- eagerly, each stream has a flag per message style (:func:`eager_flag`); it is read at every host
  read-back (:func:`raise_pending`, called by the cuda backend once the data has reached the host: the
  stream has then run the check). That is torch's device-side assert, whose error also surfaces at the
  next synchronisation, without making the process unusable. On the GPU the flag is never read while a
  check may still be running: its slots are written by many programs, so a read mid-kernel can see the
  "bad element" slot set and the first invalid row not yet, or a later row's error before an earlier
  one's. Under the interpreter a launch has finished when it returns, so the flag is also read right
  after it;
- under CUDA-graph capture, the flag belongs to the graph (``capture.graph_error_flag``), and a replay
  raises what an earlier replay recorded (as the captured bounds checks of the index kernels do).

The RuntimeError carries torch's messages, in either of its two styles (``row_messages``): its up-front
check's (a bad element anywhere wins over a zero sum) or its with-replacement kernel's (the first invalid
row decides; within it, its first bad entry).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import triton
import triton.language as tl

from genesis_storage.device import current_device

from . import capture
from . import runtime as rt
from .buffer import BufferLike
from .runtime import Kernel, cdiv, next_pow2, ptr_type

_SLOTS = 3  # [a bad element anywhere, a row sum <= 0 anywhere, the first invalid row's code (_FIRST - row) * 4 + kind]
_FIRST = 1 << 58  # codes decrease with the row: atomic_max keeps the first invalid row, and 0 means none
_TILE = 2048  # elements per step of a program: BLOCK_R rows of BLOCK_C columns (short rows share a program)
BAD_VALUE = "probability tensor contains either `inf`, `nan` or element < 0"
BAD_SUM = "invalid multinomial distribution (sum of probabilities <= 0)"
# torch's with-replacement kernel checks row by row, entry by entry (kind 1: not >= 0, nan included; 2: +inf)
_ROW_MESSAGES = {
    1: "invalid multinomial distribution (encountering probability entry < 0)",
    2: "invalid multinomial distribution (encountering probability entry = infinity or NaN)",
    3: BAD_SUM,
}


@triton.jit
def _check_rows_kernel(p, out, err, R, K, s_row, s_col, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """One program per BLOCK_R rows: validate them, then copy them (ones where invalid) to ``out`` as float64."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < R
    cols = tl.arange(0, BLOCK_C).to(tl.int64)
    src = p + rows[:, None] * s_row
    first_neg = tl.full([BLOCK_R], K, tl.int64)  # first column not >= 0 (negative, -inf, nan); K: none
    first_inf = tl.full([BLOCK_R], K, tl.int64)  # first column of +inf
    total = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float64)
    for start in range(0, K, BLOCK_C):
        c = start + cols
        mask = row_ok[:, None] & (c < K)[None, :]
        v = tl.load(src + c[None, :] * s_col, mask=mask, other=0).to(tl.float64)
        neg = mask & ~(v >= 0)
        pinf = mask & (v > 1.7976931348623157e308)
        first_neg = tl.minimum(first_neg, tl.min(tl.where(neg, c[None, :], K), axis=1))
        first_inf = tl.minimum(first_inf, tl.min(tl.where(pinf, c[None, :], K), axis=1))
        total += v
    bad_value = row_ok & ((first_neg < K) | (first_inf < K))
    bad_sum = row_ok & ~bad_value & (tl.sum(total, axis=1) <= 0)
    invalid = bad_value | bad_sum
    zero = tl.zeros([BLOCK_R], dtype=tl.int64)
    # Every writer of slots 0 / 1 stores the same 1: plain stores; slot 2 keeps the first invalid row.
    tl.store(err + zero, zero + 1, mask=bad_value)
    tl.store(err + 1 + zero, zero + 1, mask=bad_sum)
    kind = tl.where(first_neg < first_inf, 1, tl.where(first_inf < K, 2, 3))
    code = (288230376151711744 - rows) * 4 + kind  # _FIRST = 2 ** 58 (a jit function reads no globals)
    tl.atomic_max(err + 2 + zero, code, mask=invalid, sem="relaxed")
    dst = out + rows[:, None] * K
    for start in range(0, K, BLOCK_C):
        c = start + cols
        mask = row_ok[:, None] & (c < K)[None, :]
        v = tl.load(src + c[None, :] * s_col, mask=mask, other=0).to(tl.float64)
        tl.store(dst + c[None, :], tl.where(invalid[:, None], 1.0, v), mask=mask)


_KERNEL = Kernel(_check_rows_kernel)


def probability_error(raw: np.ndarray, row_messages: bool = False, where: str = "") -> RuntimeError:
    """torch's RuntimeError for what a flag recorded. Its up-front check (a draw without replacement or of
    one sample): a bad element anywhere first, else a row sum <= 0. ``row_messages``: its with-replacement
    kernel's, for the first invalid row (its first bad entry, else its sum)."""
    if row_messages and raw[2]:
        return RuntimeError(_ROW_MESSAGES[int(raw[2]) % 4] + where)
    # (a replay's flag is read at the next replay, which may see the first two slots before the third)
    return RuntimeError((BAD_VALUE if raw[0] else BAD_SUM) + where)


def _replay_error(row_messages: bool) -> Callable[[np.ndarray], RuntimeError]:
    where = " (in a replay of a CUDA graph that captured multinomial)"
    return lambda raw: probability_error(raw, row_messages, where)


# (device, stream, row_messages) -> an eager flag of the stream; never freed (two per stream, 24 bytes each).
_eager: dict[tuple[int, int, bool], capture.ErrorFlag] = {}


def eager_flag(stream: int, row_messages: bool = False) -> capture.ErrorFlag:
    """The error flag of eager launches on ``stream`` that report in that style (made on first use)."""
    key = (current_device(), stream, row_messages)  # keyed as indexed._error_block: no driver call per launch
    flag = _eager.get(key)
    if flag is None:
        if not rt.INTERPRET:
            rt.cuda().ensure_context()  # a thread that has made no driver call yet has no context
        flag = _eager[key] = capture.ErrorFlag(_SLOTS, partial(probability_error, row_messages=row_messages))
    return flag


def raise_pending() -> None:
    """Raise (once) the error an eager check recorded on any stream: a host load per flag, no wait.
    Called where the host reads device data back (the work queued before has run)."""
    for flag in tuple(_eager.values()):
        flag.check()


def check_probabilities(p: BufferLike, out: BufferLike, *, row_messages: bool = False, stream: int = 0) -> None:
    """Validate the rows of the 2-d float ``p`` into ``out`` (contiguous float64, ``p``'s shape): invalid
    rows become all ones in ``out`` and raise torch's RuntimeError later (see the module's docstring),
    never with a host wait; ``row_messages``: see :func:`probability_error`. ``p`` may have any strides."""
    rows, k = tuple(p.shape)
    if tuple(out.shape) != (rows, k) or out.dtype != "float64" or tuple(out.strides) != (k, 1):
        raise ValueError(f"check_probabilities: out must be contiguous float64 {[rows, k]}, got "
                         f"{list(out.shape)} {out.dtype} strides {list(out.strides)}")  # fmt: skip
    if rows * k == 0:
        return
    flag = None
    if capture.capturing():
        err = capture.graph_error_flag(_SLOTS, _replay_error(row_messages))
    else:
        flag = eager_flag(stream, row_messages)
        err = flag.dev
    block_c = min(next_pow2(k), _TILE)
    block_r = _TILE // block_c
    key = (p.dtype, block_c)
    fn = _KERNEL.cache.get(key)
    if fn is None:
        types = {"p": ptr_type(p.dtype), "out": "*fp64", "err": "*i64"}
        types.update({n: "i64" for n in ("R", "K", "s_row", "s_col")})
        fn = _KERNEL.build(key, types, {"BLOCK_R": block_r, "BLOCK_C": block_c}, num_warps=4)
    args = (p.ptr, out.ptr, err, rows, k, p.strides[0], p.strides[1], block_r, block_c)
    fn((cdiv(rows, block_r), 1, 1), stream, args)
    if flag is not None and rt.INTERPRET:
        flag.check()  # the launch has run to its end: its record is whole


__all__ = ["BAD_SUM", "BAD_VALUE", "check_probabilities", "eager_flag", "probability_error", "raise_pending"]
