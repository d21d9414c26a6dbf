"""Device helpers the generated kernels call: the dropout keep-mask and act'(x).

The rest of a generated kernel's math is the elementwise family's own (``unary_op`` / ``binary_op`` /
``cast_to`` in elementwise_ops.py, ``act_and_grad`` in activation.py), so a generated GELU computes
exactly what the hand-written kernels compute.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..activation import act_and_grad
from ..random import _philox, philox_state


@triton.jit
def dropout_mask(seed, offset, rng, n, i, SLOT: tl.constexpr, P: tl.constexpr, SCALE: tl.constexpr,
                 CDT: tl.constexpr, SEED_PTR: tl.constexpr):  # fmt: skip
    """``keep / (1 - p)`` in CDT, keep = (uniform >= p); element ``i`` of dropout ``SLOT`` draws counter
    ``offset + SLOT * n + i``, the first of Philox's four words, as random.py's dropout draws it."""
    s, off = philox_state(rng, seed, offset, SEED_PTR)
    r0, _, _, _ = _philox(s, off + n.to(tl.int64) * SLOT + i)
    u = tl.random.uint_to_uniform_float(r0)
    return (u >= P).to(CDT) * SCALE


@triton.jit
def act_grad(x, KIND: tl.constexpr):
    """act'(x) for KIND in gelu / gelu_tanh / silu (activation.py's formulas)."""
    _, slope = act_and_grad(x, KIND)
    return slope
