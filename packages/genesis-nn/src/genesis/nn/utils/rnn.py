"""torch.nn.utils.rnn: packed sequences (variable-length batches) and padding, with torch's signatures.

A PackedSequence holds the rows of a batch of sequences step by step: ``batch_sizes[t]`` rows for time
step t, the sequences sorted by decreasing length (``sorted_indices`` / ``unsorted_indices`` remember the
caller's order). Packing and padding are row gathers (``index_select``), so gradients flow through them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from genesis_autograd import Tensor, cat, full, tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """The data and step sizes of a packed batch of sequences (make one with :func:`pack_padded_sequence`
    or :func:`pack_sequence`, not directly). ``batch_sizes`` is an int64 cpu tensor."""

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # torch's form PackedSequence((data, batch_sizes))
            data, batch_sizes = data  # type: ignore[misc]
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)  # type: ignore[arg-type]

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The data moved / cast like ``Tensor.to``; the indices follow the data's device, batch_sizes stays on cpu."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        idx = [None if i is None else i.to(data.device) for i in (self.sorted_indices, self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, idx[0], idx[1])

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The packed sequence on a cuda device."""
        return self.to(self.data.cuda(*args, **kwargs).device)

    def cpu(self) -> PackedSequence:
        """The packed sequence on the cpu."""
        return self.to("cpu")

    def double(self) -> PackedSequence:
        """The data as float64."""
        return self.to(dtype="float64")

    def float(self) -> PackedSequence:
        """The data as float32."""
        return self.to(dtype="float32")

    @property
    def is_cuda(self) -> bool:
        """Whether the data is on a cuda device."""
        return self.data.device.type == "cuda"


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of 0..n-1 (None for None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation.cpu().numpy())
    inv = np.empty_like(p)
    inv[p] = np.arange(len(p))
    return tensor(inv, device=permutation.device)


def _lengths(lengths: Tensor | Sequence[int]) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or lengths.device.type != "cpu" or lengths.dtype.name != "int64":
            kind = "Long" if lengths.dtype.name == "int64" else lengths.dtype.name
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                               f"{lengths.device} {kind} tensor")  # fmt: skip
        return np.asarray(lengths.numpy(), dtype=np.int64)
    return np.asarray(list(lengths), dtype=np.int64)


def _batch_sizes(lengths: np.ndarray) -> list[int]:
    """Rows per step of sequences sorted by decreasing length."""
    return [int((lengths > t).sum()) for t in range(int(lengths.max()))]


def pack_padded_sequence(
    input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch (T, B, *) ((B, T, *) with ``batch_first``) of sequences of ``lengths``.

    With ``enforce_sorted`` the lengths must decrease; otherwise the batch is sorted here and the
    permutation kept in the result."""
    lens = _lengths(lengths)
    if enforce_sorted:
        if np.any(lens[:-1] < lens[1:]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability."
            )
        sorted_indices = None
        order = np.arange(len(lens))
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = tensor(order.astype(np.int64), device=input.device)
    if len(lens) == 0 or lens.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    T, B = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    if lens.max() > T:
        raise RuntimeError(f"Expected sequence length to be no larger than {T}, got {int(lens.max())}")
    sizes = _batch_sizes(lens[order])
    # Row t * B + order[b] of the (T, B, *) layout for the first sizes[t] sorted sequences at each step.
    rows = np.concatenate([t * B + order[:n] for t, n in enumerate(sizes)]).astype(np.int64)
    flat = (input.transpose(0, 1) if batch_first else input).reshape(T * B, *input.shape[2:])
    data = flat.index_select(0, tensor(rows, device=input.device))
    return PackedSequence(data, tensor(np.array(sizes, dtype=np.int64)), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: (padded batch, lengths as an int64 cpu tensor), in the
    order the sequences had before packing; ``total_length`` pads the time dimension further."""
    data, sizes = sequence.data, [int(n) for n in sequence.batch_sizes.tolist()]
    T, B = len(sizes), sizes[0]
    if total_length is not None:
        if total_length < T:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {T}"
            )
        T = total_length
    # Each padded position (t, b) reads its packed row, or the padding row appended after the data.
    where = np.full((T, B), data.shape[0], dtype=np.int64)
    off = 0
    for t, n in enumerate(sizes):
        where[t, :n] = off + np.arange(n)
        off += n
    lens = (where[: len(sizes)] < data.shape[0]).sum(0)
    if sequence.unsorted_indices is not None:
        keep = np.asarray(sequence.unsorted_indices.cpu().numpy())
        where, lens = where[:, keep], lens[keep]
    if batch_first:
        where = where.T
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    source = cat([data, pad])
    padded = source.index_select(0, tensor(np.ascontiguousarray(where).reshape(-1), device=data.device))
    return padded.reshape(*where.shape, *data.shape[1:]), tensor(lens.astype(np.int64))


def pad_sequence(
    sequences: Tensor | Iterable[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of different lengths (each (L_i, *)) into (L_max, B, *) ((B, L_max, *) with
    ``batch_first``), padded with ``padding_value`` on the ``padding_side`` ("right" or "left")."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = [sequences] if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    lens = [s.shape[0] for s in seqs]
    L, B, total = max(lens), len(seqs), sum(lens)
    where = np.full((B, L), total, dtype=np.int64)
    off = 0
    for b, n in enumerate(lens):
        start = 0 if padding_side == "right" else L - n
        where[b, start : start + n] = off + np.arange(n)
        off += n
    if not batch_first:
        where = where.T
    first = seqs[0]
    pad = full((1, *first.shape[1:]), padding_value, dtype=first.dtype, device=first.device)
    source = cat([*seqs, pad])
    out = source.index_select(0, tensor(np.ascontiguousarray(where).reshape(-1), device=first.device))
    return out.reshape(*where.shape, *first.shape[1:])


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (each (L_i, *)) of decreasing length (any order without ``enforce_sorted``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [padded[b, : int(n)] for b, n in enumerate(lengths.tolist())]


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """The list of sequences of a padded batch, each cut to its length."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[b, : int(n)] for b, n in enumerate(lengths.tolist())]
