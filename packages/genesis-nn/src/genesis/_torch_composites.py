"""torch.X functions written with other genesis ops: matrix products of fixed rank (mm, bmm, mv, dot,
outer, addmm, baddbmm), einsum, diff, and the rearranging copies (flip, roll, tile).

Each checks its arguments as torch does (same error class and message), then composes ops that
already have gradients, so autograd needs nothing new. Their Tensor-method spellings come with
the matmul family's own methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from genesis_autograd import Tensor, cat

Number = int | float


def _rank(name: str, t: Tensor, ndim: int, what: str) -> None:
    if t.ndim != ndim:
        raise RuntimeError(f"{name} must be a {what}")


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two matrices (no broadcasting, unlike matmul)."""
    _rank("self", input, 2, "matrix")
    _rank("mat2", mat2, 2, "matrix")
    return input @ mat2


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix products of two 3-D tensors with the same batch size (no broadcasting)."""
    _rank("batch1", input, 3, "3D tensor")
    _rank("batch2", mat2, 3, "3D tensor")
    b, _, k = input.shape
    if tuple(mat2.shape[:2]) != (b, k):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] "
            f"but got: [{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    return input @ mat2


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """A matrix times a vector."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return input @ vec


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of the same length (a 0-d tensor)."""
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.shape[0] != tensor.shape[0]:
        n, m = input.shape[0], tensor.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of "
            f"elements, but got {n} and {m} elements respectively"
        )
    return (input * tensor).sum()


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-D tensors: ``out[i, j] = input[i] * vec2[j]``."""
    for name, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the product's shape; with beta
    0, ``input`` is ignored (NaN in it does not spread), as torch."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Number = 1, alpha: Number = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` over a batch of matrices (see ``addmm``)."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def _scaled_sum(input: Tensor, product: Tensor, beta: Number, alpha: Number) -> Tensor:
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled + input.expand(*product.shape) * 0 if input.requires_grad else scaled
    return scaled + (input if beta == 1 else input * beta)


def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``prepend`` / ``append`` joined on first)."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    x = cat([t for t in (prepend, input, append) if t is not None], dim) if prepend is not None or append else input
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        x = x.narrow(dim, 1, size - 1) - x.narrow(dim, 0, size - 1)
    return x


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """A copy of ``input`` with the elements in reverse order along each of ``dims``."""
    return input.flip(dims)


def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """A copy of ``input`` shifted ``shifts`` places along ``dims`` (wrapping around); without ``dims``,
    along the flattened tensor."""
    return input.roll(shifts, dims)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input`` repeated ``dims[i]`` times along each dim (``dims`` padded with leading ones)."""
    return input.tile(dims)


def einsum(equation: str, *operands: Tensor | Sequence[Tensor]) -> Tensor:
    """Einstein summation over explicit subscripts (``"bij,bjk->bik"``; ``...`` and an implicit output are
    supported; a subscript repeated within one operand is not). Each operand is lined up on the union
    of the subscripts (permute + unsqueeze), the product is reduced pairwise: a contraction of two
    operands runs as one batched matmul, so the memory is that of the operands and the result."""
    first = operands[0] if len(operands) == 1 else None
    tensors = list(first) if first is not None and not isinstance(first, Tensor) else cast(list[Tensor], list(operands))
    inputs, output = _parse_einsum(equation.replace(" ", ""), tensors)
    sizes: dict[str, int] = {}
    for k, (subs, t) in enumerate(zip(inputs, tensors)):
        for c, n in zip(subs, t.shape):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {n} for operand {k} which does not "
                    f"broadcast with previously seen size {sizes[c]}"
                )
            sizes[c] = max(sizes[c], n)
    terms = list(zip(inputs, tensors))
    while len(terms) > 1:
        (sa, a), (sb, b) = terms[0], terms[1]
        later = set(output).union(*(s for s, _ in terms[2:]))
        terms = [_contract(sa, a, sb, b, later), *terms[2:]]
    subs, t = terms[0]
    summed = [i for i, c in enumerate(subs) if c not in output]
    if summed:
        t = t.sum(summed)
        subs = "".join(c for c in subs if c in output)
    return t.permute([subs.index(c) for c in output]) if subs != output else t


def _parse_einsum(equation: str, tensors: list[Tensor]) -> tuple[list[str], str]:
    lhs, arrow, rhs = equation.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(tensors):
        raise ValueError(f"einsum(): {len(inputs)} operands in the equation, {len(tensors)} given")
    letters = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in equation]
    ell = max((t.ndim - len(s) + 3 for s, t in zip(inputs, tensors) if "..." in s), default=0)
    ellipsis = "".join(letters[:ell])
    expanded: list[str] = []
    for s, t in zip(inputs, tensors):
        if "..." in s:
            s = s.replace("...", ellipsis[ell - (t.ndim - len(s) + 3) :])
        if len(s) != t.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the number "
                f"of dimensions ({t.ndim}) for operand {len(expanded)}"
            )
        if len(set(s)) != len(s):
            raise NotImplementedError("einsum(): a subscript repeated within one operand (a diagonal)")
        expanded.append(s)
    if arrow:
        output = rhs.replace("...", ellipsis)
    else:  # implicit: the broadcast dims, then every subscript seen once, alphabetically
        counts = "".join(expanded)
        output = ellipsis + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ellipsis))
    return expanded, output


def _contract(sa: str, a: Tensor, sb: str, b: Tensor, later: set[str]) -> tuple[str, Tensor]:
    """Two operands as one: dims of both kept for later are batch dims, dims of both not needed later
    are summed by the matmul; dims only one side has and nobody needs are summed first."""
    a, sa = _sum_unused(sa, a, set(sb) | later)
    b, sb = _sum_unused(sb, b, set(sa) | later)
    batch = [c for c in sa if c in sb and c in later]
    inner = [c for c in sa if c in sb and c not in later]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]
    a = a.permute([sa.index(c) for c in batch + left + inner])
    b = b.permute([sb.index(c) for c in batch + inner + right])
    nb = len(batch)
    batch_shape = [max(x, y) for x, y in zip(a.shape[:nb], b.shape[:nb])]  # size-1 dims broadcast
    left_shape, right_shape = list(a.shape[nb : nb + len(left)]), list(b.shape[nb + len(inner) :])
    for i in range(len(inner)):  # a summed dim of size 1 on one side broadcasts: sum the other side's
        da, db = nb + len(left) + i, nb + i
        if a.shape[da] == 1 < b.shape[db]:
            b = b.sum(db, keepdim=True)
        elif b.shape[db] == 1 < a.shape[da]:
            a = a.sum(da, keepdim=True)
    a = a.expand(*batch_shape, *a.shape[nb:]).reshape(-1, _prod(left_shape), _prod(a.shape[nb + len(left) :]))
    b = b.expand(*batch_shape, *b.shape[nb:]).reshape(-1, _prod(b.shape[nb : nb + len(inner)]), _prod(right_shape))
    out = (a @ b).reshape(*batch_shape, *left_shape, *right_shape)
    return "".join(batch + left + right), out


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _sum_unused(subs: str, t: Tensor, needed: set[str]) -> tuple[Tensor, str]:
    drop = [i for i, c in enumerate(subs) if c not in needed]
    if not drop:
        return t, subs
    return t.sum(drop), "".join(c for c in subs if c in needed)


__all__ = [
    "addmm",
    "baddbmm",
    "bmm",
    "diff",
    "dot",
    "einsum",
    "flip",
    "ger",
    "mm",
    "mv",
    "outer",
    "roll",
    "tile",
]
