"""Rotary position embeddings (RoPE): one graph node rotates q and k, one fused launch each way.

``Rotary`` applies NDArray.rope (genesis_kernels.rope on cuda) to q, or NDArray.rope_pair to q and k
together (one launch for both): the same positions and tables, one node for both, so attention's backward
meets one rotary node per layer and rotates both gradients in one launch too. A rotation is
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
        if k is None:
            return q.data.rope(*args)
        return q.data.rope_pair(k.data, *args)  # one launch for both on cuda

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
        want_q, want_k = need[0] and gq is not None, ctx.has_k and need[1] and gk is not None
        if want_q and want_k:  # both gradients in one launch
            dq_data, dk_data = gq.data.rope_pair(gk.data, *args)
            return wrap(gq, dq_data), wrap(gk, dk_data), *rest
        dq = wrap(gq, gq.data.rope(*args)) if want_q else None
        dk = wrap(gk, gk.data.rope(*args)) if want_k else None
        return dq, dk, *rest


def _positions(x: Tensor, positions: Any, seq_dim: int) -> Tensor:
    """Positions as an integer (batch, seq) tensor on x's device: None -> 0 .. seq - 1; (seq,) and (1, seq)
    are shared by the batch (a stride-0 view, no copy)."""
    data = x.data  # the arrays' own metadata: plain attributes, where the Tensor properties are calls
    batch, seq = data.shape[0], data.shape[seq_dim]
    if positions is None:
        return wrap(x, arange(seq, dtype=int64, device=data.device)).expand(batch, seq)
    if not is_tensor(positions):
        raise TypeError(f"apply_rotary_emb(): positions must be a Tensor or None, not {type(positions).__name__}")
    p = positions.data
    if p.dtype.name not in ("int32", "int64"):
        raise IndexError(f"apply_rotary_emb(): positions must be an int32 / int64 tensor, got {p.dtype.name}")
    if p.device is not data.device and p.device != data.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{data.device} and {p.device}!"
        )
    shape = tuple(p.shape)
    if shape == (batch, seq):  # first: a model's per-sequence positions (batch 1 included) need no view
        return positions
    if shape == (seq,) or shape == (1, seq):
        return positions.reshape(1, seq).expand(batch, seq)
    raise RuntimeError(
        f"apply_rotary_emb(): positions must have shape [{seq}] or [{batch}, {seq}] for an input of shape "
        f"{list(data.shape)} (seq_dim={seq_dim}), got {list(shape)}"
    )


def _check(x: Tensor, cos: Tensor, sin: Tensor, seq_dim: int, name: str) -> None:
    data, table, table2 = x.data, cos.data, sin.data
    shape = data.shape
    if len(shape) != 4:
        raise RuntimeError(f"apply_rotary_emb(): {name} must be 4-D (batch, seq, heads, head_dim) or "
                           f"(batch, heads, seq, head_dim), got shape {list(shape)}")  # fmt: skip
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f"\"apply_rotary_emb\" not implemented for '{data.dtype.name}'")
    device = data.device
    for t in (table, table2):
        if t.device is not device and t.device != device:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {device} and "
                f"{t.device}!"
            )
    if len(table.shape) != 2 or tuple(table.shape) != tuple(table2.shape) or 2 * table.shape[1] > shape[3]:
        raise RuntimeError(
            f"apply_rotary_emb(): cos and sin must both be (max_positions, rotary_dim / 2) with rotary_dim <= "
            f"head_dim {shape[3]}, got {list(table.shape)} and {list(table2.shape)}"
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
        qs, ks = q.data.shape, k.data.shape
        if ks[0] != qs[0] or ks[seq_dim] != qs[seq_dim] or ks[3] != qs[3]:
            raise RuntimeError(f"apply_rotary_emb(): q {list(qs)} and k {list(ks)} must agree in batch, seq and "
                               "head_dim")  # fmt: skip
    table_dtype = cos.data.dtype
    if table_dtype is not sin.data.dtype:
        raise RuntimeError(f"apply_rotary_emb(): cos and sin must have one dtype, got {table_dtype.name} and "
                           f"{sin.data.dtype.name}")  # fmt: skip
    if not table_dtype.is_floating_point:
        raise RuntimeError(f"apply_rotary_emb(): cos and sin must be floating point, got {table_dtype.name}")
    if grad_mode._state.enabled and (cos.requires_grad or sin.requires_grad):
        raise RuntimeError("apply_rotary_emb(): cos and sin are constant tables; detach() them (no gradient is "
                           "computed for them)")  # fmt: skip
    pos = _positions(q, positions, seq_dim)
    return Rotary.apply(q, k, cos, sin, pos, seq_dim, bool(interleaved), False)
