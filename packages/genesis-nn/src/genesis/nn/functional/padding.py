"""pad: constant (negative amounts crop), reflect, replicate and circular padding.

``pad`` lists (left, right) amounts from the last dimension backwards, as torch. Constant
padding concatenates filled blocks; the other modes gather each padded dimension once
through an index map (index_select), so their gradients accumulate onto the sources.
"""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor, cat, full, tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _source_index(mode: str, left: int, right: int, size: int) -> list[int]:
    """For each position of the padded dimension, the input position it copies."""
    out = []
    for i in range(-left, size + right):
        if mode == "reflect":
            j = -i if i < 0 else 2 * (size - 1) - i if i >= size else i
        elif mode == "replicate":
            j = min(max(i, 0), size - 1)
        else:  # circular
            j = i % size
        out.append(j)
    return out


def _pad_constant(input: Tensor, amounts: list[tuple[int, int]], value: float) -> Tensor:
    out = input
    for k, (left, right) in enumerate(amounts):
        dim = input.ndim - 1 - k
        if left < 0:
            out = out.narrow(dim, -left, out.shape[dim] + left)
        if right < 0:
            out = out.narrow(dim, 0, out.shape[dim] + right)
        parts = []
        for amount in (left, right):
            shape = list(out.shape)
            shape[dim] = max(amount, 0)
            parts.append(full(shape, value, dtype=out.dtype, device=out.device) if amount > 0 else None)
        if parts[0] is not None or parts[1] is not None:
            out = cat([p for p in (parts[0], out, parts[1]) if p is not None], dim)
    return out


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last dimensions of ``input``.

    Args:
        input: any shape.
        pad: (left, right) amounts from the last dimension backwards: ``(1, 1)`` pads the last
            dimension, ``(1, 1, 2, 2)`` the last two. Negative amounts crop (constant mode).
        mode: ``"constant"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
        value: the fill value of constant padding (default 0).
    """
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    amounts = [(int(pad[2 * k]), int(pad[2 * k + 1])) for k in range(len(pad) // 2)]
    if mode == "constant":
        return _pad_constant(input, amounts, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    out = input
    for k, (left, right) in enumerate(amounts):
        dim = input.ndim - 1 - k
        size = input.shape[dim]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, "
                f"but got: padding ({left}, {right}) at dimension {dim} of input {list(input.shape)}"
            )
        if mode == "circular" and (left > size or right > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if left == 0 and right == 0:
            continue
        index = tensor(_source_index(mode, left, right, size), dtype="int64", device=input.device)
        out = out.index_select(dim, index)
    return out
