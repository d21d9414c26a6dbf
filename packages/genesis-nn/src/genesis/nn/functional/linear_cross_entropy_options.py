"""LinearCrossEntropyOptions: how linear_cross_entropy's chunked path splits the tokens (torch 2.13's
dataclass, same fields, defaults and checks)."""

from __future__ import annotations

import dataclasses

from genesis_autograd import DType, bfloat16, float16, float32, float64

__all__ = ["LinearCrossEntropyOptions"]

_ACC_DTYPES = (float16, bfloat16, float32, float64)


@dataclasses.dataclass(frozen=True)  # no slots: fields stay documented in the class docstring
class LinearCrossEntropyOptions:
    """Configuration of the chunked :func:`linear_cross_entropy`: the rows are processed in chunks, so the
    full (rows, classes) logits never exist at once; each chunk's logits are recomputed in backward.

    Attributes:
        allow_retain_graph: allow a second backward through the same graph (torch refuses one by default).
        batch_chunk_size: rows per chunk (None: from ``chunking_method``, or one chunk).
        chunking_method: ``"auto"``, ``"aspect_ratio"``, ``"aspect_ratio:N"`` (chunks N times smaller) or None;
            aspect_ratio sizes a chunk's logits like the input: next_pow2(ceil(rows / ceil(classes / features))).
        acc_policy: ``"accurate"``, ``"balanced"``, ``"compact"`` or ``"auto"``; genesis accumulates every policy
            in ``acc_dtype`` (float32 for 16-bit inputs), so they differ only in name.
        acc_dtype: the dtype the logits and gradients are accumulated in (None: float32 for 16-bit inputs, else
            the input's dtype).
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: DType | None = None

    def __post_init__(self) -> None:
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (
            self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)
        ):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in _ACC_DTYPES:
            raise ValueError(
                "acc_dtype must be one of {None, float16, bfloat16, float32, float64}, got "
                f"{self.acc_dtype!r}. Pass acc_dtype=None to let the op pick automatically."
            )

    def chunk_rows(self, rows: int, in_features: int, num_classes: int) -> int:
        """The rows per chunk for a (rows, in_features) input and num_classes classes, by torch's rules
        (an explicit batch_chunk_size wins over "auto"; a disagreeing explicit method raises ValueError)."""
        method = self.chunking_method
        if method == "auto":
            method = None if self.batch_chunk_size is not None else "aspect_ratio:2"
        size = rows if self.batch_chunk_size is None else min(self.batch_chunk_size, rows)
        if method is not None:
            factor = int(method.split(":", 1)[1]) if ":" in method else 1
            target = -(-rows // -(-num_classes // in_features))
            computed = min((1 << (target - 1).bit_length()) // factor, rows)
            if self.batch_chunk_size is not None and self.batch_chunk_size != computed:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ('{method}') give different "
                    f"chunk sizes ({self.batch_chunk_size} vs {computed}); pass only one."
                )
            size = computed
        return max(1, size)

    def accumulation_dtype(self, dtype: DType) -> DType:
        """The dtype a chunk computes in for inputs of ``dtype``."""
        if self.acc_dtype is not None:
            return self.acc_dtype
        return float32 if dtype in (float16, bfloat16) else dtype
