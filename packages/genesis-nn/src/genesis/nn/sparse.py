"""Embedding and EmbeddingBag: lookup tables of num_embeddings rows."""

from __future__ import annotations

from genesis_autograd import Tensor, empty, no_grad

from . import functional as F
from . import init
from .functional.sparse import check_padding_idx
from .module import Module
from .parameter import Parameter


class Embedding(Module):
    """A lookup table: ``weight[input]``, one row of ``embedding_dim`` per index.

    Args:
        num_embeddings: the number of rows.
        embedding_dim: the size of each row.
        padding_idx: a row that starts at zero and receives no gradient, or None.
        max_norm: renormalise each looked-up row to at most this norm (in place), or None.
        norm_type: the p of the p-norm for max_norm.
        scale_grad_by_freq: scale the gradients by the inverse frequency of the indices in the batch.
        sparse: must be False: sparse gradients are not supported.
        device, dtype: where and in which dtype the parameters are made.

    Shape: input (*) int64 indices; output (*, embedding_dim).

    Attributes: ``weight`` (num_embeddings, embedding_dim), drawn from N(0, 1).
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = check_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(
                empty(num_embeddings, embedding_dim, device=device, dtype=dtype), requires_grad=not _freeze
            )
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Redraw weight from N(0, 1), the padding_idx row at zero."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (2D; shared, not copied), frozen unless freeze=False."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(
            rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings, _freeze=freeze
        )


class EmbeddingBag(Module):
    """Sums or means of embedding rows per bag.

    Args:
        num_embeddings: the number of rows.
        embedding_dim: the size of each row.
        max_norm, norm_type, scale_grad_by_freq, sparse, padding_idx: as Embedding's.
        mode: ``"sum"``, ``"mean"`` or ``"max"``.
        include_last_offset: ``offsets`` has one more entry, the end of the last bag.
        device, dtype: where and in which dtype the parameters are made.

    Shape: input (B, L) (each row a bag), or (total,) with ``offsets`` (B,) the start of each bag;
    output (B, embedding_dim). ``per_sample_weights`` (input's shape) weighs the rows (mode="sum").
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.padding_idx = check_padding_idx(padding_idx, num_embeddings)
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    def reset_parameters(self) -> None:
        """Redraw weight from N(0, 1), the padding_idx row at zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag whose weight is ``embeddings`` (2-D; shared, not copied),
        frozen unless ``freeze=False``; the other arguments as the constructor's.
        """
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(
            rows,
            cols,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            mode,
            sparse,
            embeddings,
            include_last_offset,
            padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag
