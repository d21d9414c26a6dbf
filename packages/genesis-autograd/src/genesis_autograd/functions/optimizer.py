"""Multi-tensor optimizer steps on Tensors: in-place updates outside the graph, one call per list.

These are not differentiable Functions: like torch's ``_fused_adam_`` / ``_foreach_*`` they run
under no_grad on the Tensors' arrays and bump the version counter of every Tensor they write
(so a saved tensor modified by a step is caught in backward, as for any in-place op).
On CUDA each call is one kernel launch per dtype group and never reads back to the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from genesis_ndarray import optimizer as nd_optimizer

from ..grad_mode import no_grad
from ._util import wrap

if TYPE_CHECKING:  # for annotations only: tensor.py imports the functions package
    from ..tensor import Tensor


def _arrays(tensors: Sequence[Tensor] | None):
    return None if tensors is None else [t.data for t in tensors]


def _bump(*lists: Sequence[Tensor] | None) -> None:
    for tensors in lists:
        for t in tensors or ():
            t._version[0] += 1


def multi_tensor_adam_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    exp_avgs: Sequence[Tensor],
    exp_avg_sqs: Sequence[Tensor],
    max_exp_avg_sqs: Sequence[Tensor] | None = None,
    *,
    steps: Sequence[Tensor] | None = None,
    step: float | None = None,
    masters: Sequence[Tensor] | None = None,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    maximize: bool = False,
    grad_scale: Tensor | None = None,
    found_inf: Tensor | None = None,
) -> None:
    """One Adam step (AdamW with ``decoupled``) over all parameters, in place (torch's fused rule).

    ``steps``: float32 0-d counters, one per parameter, advanced here (they may live on the device);
    otherwise ``step`` is the count, already advanced. ``max_exp_avg_sqs`` given means amsgrad;
    ``masters``: fp32 copies of bf16/fp16 ``params``, updated and cast back into ``params``;
    ``grad_scale`` divides the gradients (stored back unscaled); a non-zero ``found_inf`` skips the step.
    """
    with no_grad():
        nd_optimizer.multi_tensor_adam_(
            _arrays(params),
            _arrays(grads),
            _arrays(exp_avgs),
            _arrays(exp_avg_sqs),
            _arrays(max_exp_avg_sqs),
            steps=_arrays(steps),
            step=step,
            masters=_arrays(masters),
            lr=lr,
            beta1=beta1,
            beta2=beta2,
            eps=eps,
            weight_decay=weight_decay,
            decoupled=decoupled,
            maximize=maximize,
            grad_scale=None if grad_scale is None else grad_scale.data,
            found_inf=None if found_inf is None else found_inf.data,
        )
    _bump(params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, masters, grads if grad_scale is not None else None)


def multi_tensor_sgd_(
    params: Sequence[Tensor],
    grads: Sequence[Tensor],
    momentum_buffers: Sequence[Tensor] | None = None,
    *,
    first_step: Sequence[bool] | None = None,
    masters: Sequence[Tensor] | None = None,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
    maximize: bool = False,
    grad_scale: Tensor | None = None,
    found_inf: Tensor | None = None,
) -> None:
    """One SGD step over all parameters, in place (torch's rule); with momentum, the buffers of the
    parameters whose ``first_step`` is True are set to their gradient (torch's clone)."""
    with no_grad():
        nd_optimizer.multi_tensor_sgd_(
            _arrays(params),
            _arrays(grads),
            _arrays(momentum_buffers),
            first_step=first_step,
            masters=_arrays(masters),
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            grad_scale=None if grad_scale is None else grad_scale.data,
            found_inf=None if found_inf is None else found_inf.data,
        )
    _bump(params, momentum_buffers if momentum != 0 else None, masters, grads if grad_scale is not None else None)


def multi_tensor_norm(tensors: Sequence[Tensor], norm_type: float = 2.0) -> Tensor:
    """The ``norm_type`` norm of all ``tensors`` taken as one vector: a 0-d Tensor on their device (not
    recorded in the graph), in their promoted dtype."""
    with no_grad():
        return wrap(tensors[0], nd_optimizer.multi_tensor_norm(_arrays(tensors), norm_type))


def multi_tensor_clip_(tensors: Sequence[Tensor], total_norm: Tensor, max_norm: float) -> None:
    """Scale every tensor in place by min(1, max_norm / (total_norm + 1e-6)), computed on the device."""
    with no_grad():
        nd_optimizer.multi_tensor_clip_(_arrays(tensors), total_norm.data, max_norm)
    _bump(tensors)


def advance_counters_(counters: Sequence[Tensor]) -> list[float]:
    """Add one to every 0-d counter in place (an optimizer's ``step`` states) and return the new values:
    one call for the whole list, as torch's foreach optimizers advance their cpu step counters."""
    with no_grad():
        values = nd_optimizer.advance_counters_(_arrays(counters))
    _bump(counters)
    return values


def multi_tensor_norm_supported(norm_type: float) -> bool:
    """Whether ``multi_tensor_norm`` takes this p (p > 0, inf included)."""
    return nd_optimizer.norm_supported(norm_type)
