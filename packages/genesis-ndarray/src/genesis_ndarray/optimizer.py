"""Multi-tensor optimizer steps on NDArrays: every list in one call, on one device, in place.

``multi_tensor_adam_`` / ``multi_tensor_sgd_`` update parameters and their states in place (CUDA:
one kernel launch per dtype group, whatever the number of tensors); ``multi_tensor_norm`` is the
p-norm of all tensors as one vector (a 0-d array, left on the device); ``multi_tensor_clip_``
scales tensors by ``min(1, max_norm / (total_norm + 1e-6))`` read on the device. None of them
reads anything back to the host on CUDA.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from . import registry
from .dtypes import DType, promote_types
from .ndarray import NDArray


def _native(arrays: Sequence[NDArray] | None, device, what: str) -> list | None:
    if arrays is None:
        return None
    for a in arrays:
        if a.device is not device and a.device != device:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {device} and "
                f"{a.device}! ({what})"
            )
    return [a._data for a in arrays]


def _one(a: NDArray | None, device) -> object:
    return None if a is None else _native([a], device, "scalar")[0]  # type: ignore[index]


def _ops(arrays: Sequence[NDArray]) -> tuple[object, dict]:
    device = arrays[0].device
    return device, registry.table(device.type)


def multi_tensor_adam_(
    params: Sequence[NDArray],
    grads: Sequence[NDArray],
    exp_avgs: Sequence[NDArray],
    exp_avg_sqs: Sequence[NDArray],
    max_exp_avg_sqs: Sequence[NDArray] | None = None,
    *,
    steps: Sequence[NDArray] | None = None,
    step: float | None = None,
    masters: Sequence[NDArray] | None = None,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    maximize: bool = False,
    grad_scale: NDArray | None = None,
    found_inf: NDArray | None = None,
) -> None:
    """One Adam (``decoupled``: AdamW) step in place. ``steps``: float32 0-d counters, one per parameter,
    advanced by one here; or ``step``, the host count (already advanced). ``max_exp_avg_sqs`` given
    means amsgrad. ``masters``: fp32 copies of low-precision ``params``, updated and cast back."""
    if not params:
        return
    if (steps is None) == (step is None):
        raise ValueError("multi_tensor_adam_: give either `steps` (per-parameter counters) or `step`")
    device, ops = _ops(params)
    ops["multi_tensor_adam_"](
        _native(params, device, "params"),
        _native(grads, device, "grads"),
        _native(exp_avgs, device, "exp_avgs"),
        _native(exp_avg_sqs, device, "exp_avg_sqs"),
        _native(max_exp_avg_sqs, device, "max_exp_avg_sqs"),
        _native(steps, device, "steps"),
        step,
        _native(masters, device, "masters"),
        float(lr),
        float(beta1),
        float(beta2),
        float(eps),
        float(weight_decay),
        bool(decoupled),
        bool(maximize),
        _one(grad_scale, device),
        _one(found_inf, device),
    )


def multi_tensor_sgd_(
    params: Sequence[NDArray],
    grads: Sequence[NDArray],
    momentum_buffers: Sequence[NDArray] | None = None,
    *,
    first_step: Sequence[bool] | None = None,
    masters: Sequence[NDArray] | None = None,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    maximize: bool = False,
    grad_scale: NDArray | None = None,
    found_inf: NDArray | None = None,
) -> None:
    """One SGD step in place; with momentum, a buffer whose ``first_step`` is True is set to the
    gradient (it may hold anything before)."""
    if not params:
        return
    if momentum != 0 and momentum_buffers is None:
        raise ValueError("multi_tensor_sgd_: momentum needs momentum_buffers")
    device, ops = _ops(params)
    ops["multi_tensor_sgd_"](
        _native(params, device, "params"),
        _native(grads, device, "grads"),
        _native(momentum_buffers, device, "momentum_buffers") if momentum != 0 else None,
        list(first_step) if first_step is not None else None,
        _native(masters, device, "masters"),
        float(lr),
        float(momentum),
        float(dampening),
        float(weight_decay),
        bool(nesterov),
        bool(maximize),
        _one(grad_scale, device),
        _one(found_inf, device),
    )


def norm_supported(norm_type: float) -> bool:
    """Whether ``multi_tensor_norm`` takes this p: p > 0 (inf included)."""
    p = float(norm_type)
    return p > 0 and not math.isnan(p)


def multi_tensor_norm(tensors: Sequence[NDArray], norm_type: float = 2.0, dtype: DType | None = None) -> NDArray:
    """The ``norm_type`` norm of all ``tensors`` as one vector: a 0-d array of ``dtype`` (default: the
    promoted dtype of the tensors) on their device."""
    if not tensors:
        raise ValueError("multi_tensor_norm: expected at least one tensor")
    if not norm_supported(norm_type):
        raise ValueError(f"multi_tensor_norm: norm_type must be > 0 (or inf), got {norm_type}")
    for t in tensors:
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"multi_tensor_norm: expected floating point tensors, got {t.dtype.name}")
    if dtype is None:
        dtype = tensors[0].dtype
        for t in tensors[1:]:
            if t.dtype is not dtype:
                dtype = promote_types(dtype, t.dtype)
    device, ops = _ops(tensors)
    return tensors[0]._wrap(ops["multi_tensor_norm"](_native(tensors, device, "tensors"), float(norm_type), dtype.name))


def multi_tensor_clip_(tensors: Sequence[NDArray], total_norm: NDArray, max_norm: float) -> None:
    """Every tensor *= min(1, max_norm / (total_norm + 1e-6)), the coefficient computed on the device."""
    if not tensors:
        return
    device, ops = _ops(tensors)
    ops["multi_tensor_clip_"](_native(tensors, device, "tensors"), _one(total_norm, device), float(max_norm))


def advance_counters_(counters: Sequence[NDArray]) -> list[float]:
    """Add one to every 0-d counter in place (an optimizer's ``step`` states) and return the new values.

    One call for the whole list: on the cpu, where torch's foreach optimizers keep their counters, a
    single foreach add and one read of all values (no per-counter op); on a GPU a read-back, so an
    optimizer there keeps its counters on the device and lets its kernel advance them instead.
    """
    if not counters:
        return []
    for c in counters:
        if c.shape != ():
            raise RuntimeError(f"advance_counters_: expected 0-d counters, got shape {tuple(c.shape)}")
    device, ops = _ops(counters)
    return ops["advance_counters_"](_native(counters, device, "counters"))
