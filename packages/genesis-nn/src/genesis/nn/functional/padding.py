"""pad: constant (negative amounts crop), reflect, replicate and circular padding.

``pad`` lists (left, right) amounts from the last dimension backwards, as torch. Constant
padding concatenates filled blocks and pads any number of dims; the other modes pad the last 1, 2
or 3 dims of a (batched or unbatched) input, as torch's, by gathering each padded dimension once
through an index map (index_select), so their gradients accumulate onto the sources.

Negative amounts crop. Reflect and replicate crop the padded result (their index map runs over
the input's positions); circular padding crops first and wraps what is left, as torch does.
"""

from __future__ import annotations

from collections.abc import Sequence

from genesis_autograd import Tensor, cat, full, tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _source_index(mode: str, left: int, right: int, size: int) -> list[int]:
    """For each position of the padded dimension, the input position it copies."""
    if mode == "circular":
        start, kept = max(-left, 0), size - max(-left, 0) - max(-right, 0)
        return [start + i % kept for i in range(-max(left, 0), kept + max(right, 0))]
    out = []
    for i in range(-left, size + right):
        if mode == "reflect":
            j = -i if i < 0 else 2 * (size - 1) - i if i >= size else i
        else:  # replicate
            j = min(max(i, 0), size - 1)
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


def _check_non_constant(input: Tensor, mode: str, amounts: list[tuple[int, int]]) -> None:
    """torch's limits on reflect / replicate / circular padding: 1-3 padded dims of an input with one
    or two more dims (the channel, and optionally the batch), non-empty except for the batch."""
    k, shape = len(amounts), list(input.shape)
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {2 * k} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    if mode != "circular" and 0 in shape[-k - 1 :]:
        raise RuntimeError(
            f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {shape}"
        )
    for i, (left, right) in enumerate(amounts):
        dim = input.ndim - 1 - i
        size = shape[dim]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, "
                f"but got: padding ({left}, {right}) at dimension {dim} of input {shape}"
            )
        if mode == "circular":
            kept = size - max(-left, 0) - max(-right, 0)
            if left > size or right > size or (kept > 0 and max(left, right) > kept):
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if kept <= 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        if size + left + right < 0:
            raise RuntimeError(
                f"input (size {size} at dimension {dim}) is too small. Calculated output size: {size + left + right}"
            )


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last dimensions of ``input``.

    Args:
        input: any shape for constant padding; for the other modes (C, *) or (N, C, *) with 1-3
            padded dims.
        pad: (left, right) amounts from the last dimension backwards: ``(1, 1)`` pads the last
            dimension, ``(1, 1, 2, 2)`` the last two. Negative amounts crop.
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
    _check_non_constant(input, mode, amounts)
    out = input
    for k, (left, right) in enumerate(amounts):
        if left == 0 and right == 0:
            continue
        dim = input.ndim - 1 - k
        index = tensor(_source_index(mode, left, right, input.shape[dim]), dtype="int64", device=input.device)
        out = out.index_select(dim, index)
    return out
