"""Activations with a fused backward: GELU (erf and tanh), SiLU, and the gated units built on them.

Gelu / GeluTanh / Silu (Tensor.gelu / Tensor.silu) compute ``g * act'(x)`` in one NDArray op
(activation_backward) instead of a handful of Tensor ops. The gated units ``act(gate) * up`` -
SwiGLU (silu), GeGLU (gelu) and torch's GLU (sigmoid of the second half times the first) - run
forward and backward in one op each; glu reads both halves of its input in place. A backward that
is itself recorded (create_graph=True, or a gradient that requires grad) is written with Tensor ops,
so second derivatives flow, as softmax does.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from genesis_ndarray import empty, promote_types
from genesis_ndarray.shape import broadcast_shapes, normalize_dim

from ._util import Primitive, backward_recorded, wrap
from .views import Cat

if TYPE_CHECKING:
    from ..tensor import Tensor

INV_SQRT2 = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_TANH_C = 0.044715


# ------------------------------------------------------------ act and act' with Tensor ops (recorded backward)
def _act(x, kind: str):
    if kind == "gelu":
        return x.gelu()
    if kind == "gelu_tanh":
        return x.gelu("tanh")
    return x.silu() if kind == "silu" else x.sigmoid()


def _slope(x, kind: str):
    """act'(x), differentiable again."""
    if kind == "gelu":  # x * Phi(x): Phi(x) + x * phi(x)
        cdf = ((x * INV_SQRT2).erf() + 1) * 0.5
        return cdf + x * ((x * x * -0.5).exp() * INV_SQRT_2PI)
    if kind == "gelu_tanh":  # 0.5 x (1 + tanh(k (x + c x^3)))
        x2 = x * x
        t = ((x + x2 * x * GELU_TANH_C) * SQRT_2_OVER_PI).tanh()
        return (t + 1) * 0.5 + x * (1 - t * t) * (SQRT_2_OVER_PI * 0.5) * (x2 * (3 * GELU_TANH_C) + 1)
    s = x.sigmoid()
    return s * (1 + x * (1 - s)) if kind == "silu" else s * (1 - s)


# ------------------------------------------------------------ y = act(x)
class _Activation(Primitive):
    kind = ""
    op = ""  # the elementwise unary op of the forward

    @classmethod
    def forward(cls, ctx, a):
        if ctx.records:
            ctx.save_for_backward(a)
        return a.data.unary(cls.op)

    @classmethod
    def backward(cls, ctx, g):
        (x,) = ctx.saved_tensors
        # An integer input computes in float: its gradient is composed (and cast back by the engine).
        if backward_recorded(g) or g.dtype != x.dtype:
            return g * _slope(x, cls.kind)
        return wrap(g, x.data.activation_backward(g.data, cls.kind))


class Gelu(_Activation):
    kind = op = "gelu"


class GeluTanh(_Activation):
    kind = op = "gelu_tanh"


class Silu(_Activation):
    kind = op = "silu"


# ------------------------------------------------------------ out = act(gate) * up
class Gated(Primitive):
    """``act(gate) * up`` for same-shape, same-dtype gate and up (swiglu / geglu broadcast and promote first)."""

    @staticmethod
    def forward(ctx, gate, up, kind):
        ctx.save_for_backward(gate, up)
        ctx.kind = kind
        return gate.data.gated_forward(up.data, kind)

    @staticmethod
    def backward(ctx, g):
        gate, up = ctx.saved_tensors
        if backward_recorded(g):
            need = ctx.needs_input_grad
            dgate = g * up * _slope(gate, ctx.kind) if need[0] else None
            return dgate, g * _act(gate, ctx.kind) if need[1] else None, None
        dgate, dup = gate.data.gated_backward(g.data, up.data, ctx.kind)
        return wrap(g, dgate), wrap(g, dup), None


class Glu(Primitive):
    """torch's GLU: the input halved along ``dim`` into (a, b), out = a * sigmoid(b); both halves read in
    place, and the input's gradient written as one array."""

    @staticmethod
    def forward(ctx, input, dim):
        half = input.shape[dim] // 2
        a, b = input.data.narrow(dim, 0, half), input.data.narrow(dim, half, half)
        ctx.save_for_backward(input)
        ctx.dim, ctx.half = dim, half
        return b.gated_forward(a, "sigmoid")

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        dim, half = ctx.dim, ctx.half
        if backward_recorded(g):
            a, b = x.narrow(dim, 0, half), x.narrow(dim, half, half)
            s = b.sigmoid()
            return Cat.apply(dim, g * s, g * a * s * (1 - s)), None
        a, b = x.data.narrow(dim, 0, half), x.data.narrow(dim, half, half)
        db, da = b.gated_backward(g.data, a, "sigmoid")
        dx = empty(*x.shape, dtype=da.dtype, device=da.device)
        dx.narrow(dim, 0, half).copy_(da)
        dx.narrow(dim, half, half).copy_(db)
        return wrap(g, dx), None


# ------------------------------------------------------------ entry points
def _check_float(t: Tensor, op: str) -> None:
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{t.dtype.name}'")


def _gated(gate: Tensor, up: Tensor, kind: str, op: str) -> Tensor:
    """Broadcast (like ``*``) and promote gate and up, then the fused gated unit."""
    if gate.device != up.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{gate.device} and {up.device}!"
        )
    gdt, udt = gate.dtype, up.dtype
    dtype = gdt if gdt is udt else promote_types(gdt, udt)
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtype.name}'")
    if gdt is not dtype:
        gate = gate.to(dtype)
    if udt is not dtype:
        up = up.to(dtype)
    gs, us = gate.shape, up.shape
    if gs == us:  # the common case (two projections of one input): nothing to broadcast
        return Gated.apply(gate, up, kind)
    try:
        shape = broadcast_shapes(tuple(gs), tuple(us))
    except (RuntimeError, ValueError):
        raise RuntimeError(
            f"The size of tensor a ({list(gs)}) must match the size of tensor b ({list(us)}) at non-singleton dimension"
        ) from None
    if tuple(gs) != shape:
        gate = gate.expand(shape)  # a stride-0 view: read in place; Expand sums its gradient back
    if tuple(us) != shape:
        up = up.expand(shape)
    return Gated.apply(gate, up, kind)


def swiglu(gate: Tensor, up: Tensor) -> Tensor:
    """SwiGLU: ``silu(gate) * up`` in one fused op each way (a Genesis extension; torch has no such function).

    ``gate`` and ``up`` broadcast and promote as for ``*``; they may be views (the two halves of one
    projection, e.g. ``x.chunk(2, -1)``), read in place.
    """
    return _gated(gate, up, "silu", "swiglu")


def geglu(gate: Tensor, up: Tensor, approximate: str = "none") -> Tensor:
    """GeGLU: ``gelu(gate, approximate) * up``, fused (a Genesis extension; torch has no such function).

    ``approximate`` is ``"none"`` (erf) or ``"tanh"``, as for gelu; broadcasting as for ``*``.
    """
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _gated(gate, up, "gelu" if approximate == "none" else "gelu_tanh", "geglu")


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """torch.nn.functional.glu: ``a * sigmoid(b)`` with ``a``, ``b`` the first and second halves of ``input``
    along ``dim`` (whose size must be even); fused forward and backward."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    dim = normalize_dim(dim, input.ndim)
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {input.shape[dim]}")
    _check_float(input, "glu")
    return Glu.apply(input, dim)
