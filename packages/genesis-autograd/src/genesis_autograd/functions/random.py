"""Random draws with torch's gradient rule: none flows through the draw, the parameters get zero."""

from __future__ import annotations

from .. import grad_mode
from ._util import wrap
from .convert import Copy


def sample(values, *params):
    """``values`` (an NDArray of draws) as a Tensor which, like torch's sampling functions, passes a
    zero gradient to the Tensors among ``params`` (the distribution's mean, std, p, ...)."""
    tensors = [x for x in params if hasattr(x, "_result_type")]
    out = wrap(tensors[0], values)
    if grad_mode.is_grad_enabled():
        for x in tensors:
            if x.requires_grad:
                out = Copy.apply(x.expand(*values.shape), out)
    return out
