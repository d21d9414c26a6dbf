"""Rotary position embeddings (RoPE): one graph node rotates q and k, one fused op each way per tensor.

``Rotary`` applies NDArray.rope (genesis_kernels.rope on cuda) to q and, when given, k: the same positions
and tables, one node for both, so attention's backward meets one rotary node per layer. A rotation is
linear and orthogonal, so the gradient is the rotation by minus the angles: the same op with ``inverse``
flipped. A backward that is itself recorded (create_graph) applies the Function again, so it stays
differentiable.

The cos / sin tables are constants here (as in flash-attn's ``apply_rotary_emb``): a table that requires
grad is refused rather than silently left without a gradient.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from genesis_ndarray import arange, int64

from .. import grad_mode
from ._util import Primitive, backward_recorded, is_tensor, wrap

if TYPE_CHECKING:
    from ..tensor import Tensor


class Rotary(Primitive):
    """``(rope(q), rope(k))``, or ``rope(q)`` when ``k`` is None; positions (batch, seq) on the device."""

    @staticmethod
    def forward(ctx, q, k, cos, sin, positions, seq_dim, interleaved, inverse):
        args = (cos.data, sin.data, positions.data, seq_dim, interleaved, inverse)
        if ctx.records:
            ctx.tables = (cos, sin, positions)
            ctx.flags = (seq_dim, interleaved, inverse)
            ctx.has_k = k is not None
        qo = q.data.rope(*args)
        return qo if k is None else (qo, k.data.rope(*args))

    @staticmethod
    def backward(ctx, gq, gk=None):
        cos, sin, positions = ctx.tables
        seq_dim, interleaved, inverse = ctx.flags
        need = ctx.needs_input_grad
        rest = (None, None, None, None, None, None)
        if backward_recorded(gq, gk):  # differentiable again: the Function itself, rotating back
            flags = (seq_dim, interleaved, not inverse)
            dq = Rotary.apply(gq, None, cos, sin, positions, *flags) if need[0] else None
            dk = Rotary.apply(gk, None, cos, sin, positions, *flags) if ctx.has_k and need[1] else None
            return dq, dk, *rest
        args = (cos.data, sin.data, positions.data, seq_dim, interleaved, not inverse)
        dq = wrap(gq, gq.data.rope(*args)) if need[0] else None
        dk = wrap(gk, gk.data.rope(*args)) if ctx.has_k and need[1] else None
        return dq, dk, *rest


def _positions(x: Tensor, positions: Any, seq_dim: int) -> Tensor:
    """Positions as an integer (batch, seq) tensor on x's device: None -> 0 .. seq - 1; (seq,) and (1, seq)
    are shared by the batch (a stride-0 view, no copy)."""
    batch, seq = x.shape[0], x.shape[seq_dim]
    if positions is None:
        return wrap(x, arange(seq, dtype=int64, device=x.device)).expand(batch, seq)
    if not is_tensor(positions):
        raise TypeError(f"apply_rotary_emb(): positions must be a Tensor or None, not {type(positions).__name__}")
    if positions.dtype.name not in ("int32", "int64"):
        raise IndexError(f"apply_rotary_emb(): positions must be an int32 / int64 tensor, got {positions.dtype.name}")
    if positions.device != x.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{x.device} and {positions.device}!"
        )
    shape = tuple(positions.shape)
    if shape == (seq,) or shape == (1, seq):
        return positions.reshape(1, seq).expand(batch, seq)
    if shape != (batch, seq):
        raise RuntimeError(
            f"apply_rotary_emb(): positions must have shape [{seq}] or [{batch}, {seq}] for an input of shape "
            f"{list(x.shape)} (seq_dim={seq_dim}), got {list(shape)}"
        )
    return positions


def _check(x: Tensor, cos: Tensor, sin: Tensor, seq_dim: int, name: str) -> None:
    if x.ndim != 4:
        raise RuntimeError(f"apply_rotary_emb(): {name} must be 4-D (batch, seq, heads, head_dim) or "
                           f"(batch, heads, seq, head_dim), got shape {list(x.shape)}")  # fmt: skip
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"apply_rotary_emb\" not implemented for '{x.dtype.name}'")
    if x.device != cos.device or x.device != sin.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{x.device} and {cos.device if x.device != cos.device else sin.device}!"
        )
    if cos.ndim != 2 or tuple(cos.shape) != tuple(sin.shape) or 2 * cos.shape[1] > x.shape[-1]:
        raise RuntimeError(
            f"apply_rotary_emb(): cos and sin must both be (max_positions, rotary_dim / 2) with rotary_dim <= "
            f"head_dim {x.shape[-1]}, got {list(cos.shape)} and {list(sin.shape)}"
        )


def apply_rotary_emb(
    q: Tensor,
    cos: Tensor,
    sin: Tensor,
    positions: Tensor | None = None,
    interleaved: bool = False,
    *,
    k: Tensor | None = None,
    seq_dim: int = 1,
) -> Tensor | tuple[Tensor, Tensor]:
    """Rotary position embeddings (RoPE) of ``q`` (and ``k``), fused forward and backward.

    ``q`` / ``k``: (batch, seq, heads, head_dim) with ``seq_dim=1`` (flash-attn's layout) or (batch, heads,
    seq, head_dim) with ``seq_dim=2`` (HF transformers'), any strides; k may have fewer heads (GQA).
    ``cos`` / ``sin``: tables (max_positions, rotary_dim / 2) indexed by position (rotary_dim <= head_dim:
    the features past it pass through). ``positions``: int32 / int64 (seq,) or (batch, seq) on the device,
    read by the kernel (a CUDA-graph decode step advances them without a host sync); None means 0 .. seq - 1.
    Positions outside the tables are clamped into them on both devices (a kernel cannot raise).
    Half-split pairs (i, i + rotary_dim / 2) by default (GPT-NeoX, HF Llama's ``rotate_half``);
    ``interleaved`` pairs (2i, 2i + 1) (GPT-J, Meta's Llama). 16-bit inputs compute in float32.
    Returns the rotated q, or (q, k) when k is given.
    """
    if seq_dim < 0:
        seq_dim += 4
    if seq_dim not in (1, 2):
        raise IndexError(f"apply_rotary_emb(): seq_dim must be 1 or 2 (or -3, -2), got {seq_dim}")
    _check(q, cos, sin, seq_dim, "q")
    if k is not None:
        _check(k, cos, sin, seq_dim, "k")
        if k.shape[0] != q.shape[0] or k.shape[seq_dim] != q.shape[seq_dim] or k.shape[-1] != q.shape[-1]:
            raise RuntimeError(f"apply_rotary_emb(): q {list(q.shape)} and k {list(k.shape)} must agree in batch, "
                               "seq and head_dim")  # fmt: skip
    if cos.dtype != sin.dtype:
        raise RuntimeError(f"apply_rotary_emb(): cos and sin must have one dtype, got {cos.dtype.name} and "
                           f"{sin.dtype.name}")  # fmt: skip
    if not cos.dtype.is_floating_point:
        raise RuntimeError(f"apply_rotary_emb(): cos and sin must be floating point, got {cos.dtype.name}")
    if grad_mode.is_grad_enabled() and (cos.requires_grad or sin.requires_grad):
        raise RuntimeError("apply_rotary_emb(): cos and sin are constant tables; detach() them (no gradient is "
                           "computed for them)")  # fmt: skip
    pos = _positions(q, positions, seq_dim)
    return Rotary.apply(q, k, cos, sin, pos, seq_dim, bool(interleaved), False)
