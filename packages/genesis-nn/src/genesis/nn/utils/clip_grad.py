"""Gradient clipping by total norm or by value, computed on the gradients' device.

The total norm stays a device Tensor and the scale factor is a device-side clamp, so
a training step that clips never waits for the GPU; only ``error_if_nonfinite=True``
reads the norm back (it has to decide whether to raise). Gradients on one device take the
multi-tensor path (unless ``foreach=False``): on CUDA the norm is one launch of per-program
partial sums plus a tiny finish, and the scaling one more launch per dtype.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from genesis_autograd import (
    Tensor,
    float32,
    full_like,
    multi_tensor_clip_,
    multi_tensor_norm,
    multi_tensor_norm_supported,
    no_grad,
    stack,
    tensor,
)

_tensor_or_tensors = Tensor | Iterable[Tensor]


def _multi_tensor(tensors: list[Tensor], foreach: bool | None) -> bool:
    """Whether the fused multi-tensor kernels can take these tensors: one device, floating, contiguous."""
    if foreach is False or not tensors:
        return False
    device = tensors[0].data.device
    for t in tensors:  # identity before equality: the common case, over every gradient every step
        a = t.data  # (its NDArray: one attribute read, where each Tensor property is a call)
        d = a.device
        if (d is not device and d != device) or not a.dtype.is_floating_point or not a.is_contiguous():
            return False
    return True


def _grads(parameters: _tensor_or_tensors) -> list[Tensor]:
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def get_total_norm(
    tensors: _tensor_or_tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach: bool | None = None
) -> Tensor:
    """The ``norm_type`` norm of all ``tensors`` together, as if concatenated into one vector (a 0-d Tensor
    on the first tensor's device)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    return _total_norm(tensors, float(norm_type), error_if_nonfinite, _multi_tensor(tensors, foreach))


def _total_norm(tensors: list[Tensor], norm_type: float, error_if_nonfinite: bool, fused: bool) -> Tensor:
    """get_total_norm once its tensors are a list and ``fused`` says whether they take the multi-tensor path."""
    if not tensors:
        return tensor(0.0)
    if fused and multi_tensor_norm_supported(norm_type):
        total = multi_tensor_norm(tensors, norm_type)
    else:
        first_device = tensors[0].device
        norms = [t.vector_norm(norm_type).to(device=first_device) for t in tensors]
        total = stack(norms).vector_norm(norm_type)
    if error_if_nonfinite and not total.isfinite().item():  # the one documented host read
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
            "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
            "norm anyway, set `error_if_nonfinite=False`"
        )
    return total


@no_grad()
def clip_grads_with_norm_(
    parameters: _tensor_or_tensors, max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)), on the device."""
    grads = _grads(parameters)
    _clip_with_norm(grads, max_norm, total_norm, _multi_tensor(grads, foreach))


def _clip_with_norm(grads: list[Tensor], max_norm: float, total_norm: Tensor, fused: bool) -> None:
    """clip_grads_with_norm_ on the gradients themselves (``fused``: they take the multi-tensor path)."""
    if not grads:
        return
    if fused and grads[0].device == total_norm.device:
        multi_tensor_clip_(grads, total_norm, float(max_norm))
        return
    # max_norm enters as a tensor of the norm's dtype: a Python float on the left of a Tensor op would be
    # rounded to float32 first
    clip_coef = full_like(total_norm, float(max_norm)) / (total_norm + 1e-6)
    clip_coef_clamped = clip_coef.clamp(max=1.0)
    for grad in grads:
        grad.mul_(clip_coef_clamped.to(device=grad.device))


@no_grad()
def _sharded_total_norm(
    parameters: list[Tensor], norm_type: float, error_if_nonfinite: bool, foreach: bool | None
) -> Tensor:
    """The global norm when some parameters are one rank's rows of a larger one (fully_shard's
    ``shard_spec`` marks them): each shard group's local sum of ``|g|^p`` (max for inf) is all-reduced
    over the group, then combined with the norm of the replicated gradients, as torch does for DTensor."""
    from ...distributed import ReduceOp, all_reduce  # only for sharded parameters

    norm_type = float(norm_type)
    by_group: dict[int, tuple[Any, list[Tensor]]] = {}  # id(process group) -> (the group, its shards' grads)
    plain: list[Tensor] = []
    for p in parameters:
        if p.grad is None:
            spec = getattr(p, "shard_spec", None)
            if spec is not None:  # still takes part in the group's all-reduce
                by_group.setdefault(id(spec.group), (spec.group, []))
            continue
        spec = getattr(p, "shard_spec", None)
        if p.grad.numel() == 0:  # a rank past the last rows: nothing to add (and no max of nothing)
            if spec is not None:
                by_group.setdefault(id(spec.group), (spec.group, []))
        elif spec is None:
            plain.append(p.grad)
        else:
            by_group.setdefault(id(spec.group), (spec.group, []))[1].append(p.grad)
    device = next((p.device for p in parameters), None)
    total = get_total_norm(plain, norm_type, False, foreach).to(device=device, dtype=float32)
    inf = norm_type == float("inf")
    if not inf:
        total = total**norm_type
    for group, grads in by_group.values():
        local = get_total_norm(grads, norm_type, False, foreach).to(device=device, dtype=float32).reshape(1)
        local = local.clone() if inf else local**norm_type
        all_reduce(local, ReduceOp.MAX if inf else ReduceOp.SUM, group=group)
        total = total.maximum(local[0]) if inf else total + local[0]
    total = total if inf else total ** (1.0 / norm_type)
    if error_if_nonfinite and not total.isfinite().item():
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
            "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
            "norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grad_norm_(
    parameters: _tensor_or_tensors,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Clip the gradients of ``parameters`` in place so that their total norm is at most ``max_norm``;
    return the total norm from before clipping (a device Tensor: no host synchronisation)."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)  # a generator once
    sharded = False
    for p in parameters:  # (a loop, not any() over a generator: every step, over every parameter)
        if getattr(p, "shard_spec", None) is not None:  # fully_shard's shards
            sharded = True
            break
    if sharded:
        total_norm = _sharded_total_norm(parameters, norm_type, error_if_nonfinite, foreach)
        clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
        return total_norm
    grads = _grads(parameters)
    fused = _multi_tensor(grads, foreach)  # (checked once for the norm and the scaling)
    with no_grad():
        total_norm = _total_norm(grads, float(norm_type), error_if_nonfinite, fused)
        _clip_with_norm(grads, max_norm, total_norm, fused)
    return total_norm


def clip_grad_norm(
    parameters: _tensor_or_tensors,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated name of clip_grad_norm_ (torch warns the same way)."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters: _tensor_or_tensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient of ``parameters`` into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    for grad in _grads(parameters):
        grad.clamp_(min=-clip_value, max=clip_value)
