"""Lookups by index: embedding, embedding_bag, one_hot."""

from __future__ import annotations

from genesis_autograd import Function, Tensor, arange, full, no_grad, ones, zeros

from ._util import torch_type_name

__all__ = ["embedding", "embedding_bag", "one_hot"]


class _Embedding(Function):
    """weight's rows at ``indices``. Backward adds each output row's gradient into its weight row,
    except the padding row's (torch: padding_idx gets no gradient), optionally scaled by 1 / (how
    often the row was looked up)."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        flat = indices.reshape(-1)
        if ctx.records:
            ctx.save_for_backward(flat)
            ctx.num_weights, ctx.padding_idx, ctx.scale = weight.shape[0], padding_idx, scale_grad_by_freq
        return weight.index_select(0, flat).reshape(*indices.shape, weight.shape[1])

    @staticmethod
    def backward(ctx, grad):
        (flat,) = ctx.saved_tensors
        rows = grad.reshape(flat.shape[0], grad.shape[-1])
        if ctx.padding_idx is not None:
            rows = rows * (flat != ctx.padding_idx).to(rows.dtype).unsqueeze(1)
        if ctx.scale:
            counts = zeros(ctx.num_weights, dtype=rows.dtype, device=rows.device).index_add(
                0, flat, ones(flat.shape[0], dtype=rows.dtype, device=rows.device)
            )
            rows = rows / counts[flat].unsqueeze(1)
        base = zeros(ctx.num_weights, rows.shape[1], dtype=rows.dtype, device=rows.device)
        return base.index_add(0, flat, rows), None, None, None


def check_padding_idx(padding_idx: int | None, num_weights: int) -> int | None:
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= num_weights:
        raise AssertionError("Padding_idx must be within num_embeddings")
    if padding_idx < 0:
        if padding_idx < -num_weights:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx += num_weights
    return padding_idx


def _renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale, in place, the looked-up rows whose norm exceeds max_norm down to max_norm (torch's
    embedding_renorm_: factor max_norm / (norm + 1e-7))."""
    with no_grad():
        flat = indices.reshape(-1)
        rows = weight[flat]
        norms = rows.vector_norm(norm_type, 1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).where(norms > max_norm, 1.0)
        weight[flat] = rows * scale


def _check_indices(input: Tensor) -> None:
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise RuntimeError(
            f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {torch_type_name(input.dtype)} instead (while checking arguments "
            "for embedding)"
        )


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """weight[input]; the padding_idx row gets no gradient; with max_norm the looked-up rows are first
    renormalised in place, as torch."""
    _check_indices(input)
    if sparse:
        raise NotImplementedError("sparse gradients are not supported; use sparse=False")
    padding_idx = check_padding_idx(padding_idx, weight.shape[0])
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return _Embedding.apply(weight, input, padding_idx, scale_grad_by_freq)


def _bags(input: Tensor, offsets: Tensor | None, include_last_offset: bool) -> tuple[Tensor, Tensor, int]:
    """The indices as one flat list, the bag each belongs to, and the number of bags."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                f"fixed length sequences. However, found offsets of type {type(offsets).__name__}"
            )
        n_bags, length = input.shape
        bag_of = arange(n_bags, device=input.device).reshape(n_bags, 1).expand(n_bags, length).reshape(-1)
        return input.reshape(-1), bag_of, n_bags
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    n_bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    # A 1 at each bag's start (beyond the first), summed up: the bag of every position. Empty bags
    # stack their 1s at one position, so the count skips them.
    starts = offsets[1:n_bags].to(dtype="int64")
    n = input.shape[0]
    marks = zeros(n + 1, dtype="int64", device=input.device).index_add(
        0, starts, ones(starts.shape[0], dtype="int64", device=input.device)
    )
    return input, marks[:n].cumsum(0), n_bags


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of embedding rows per bag: a bag is a row of a 2D input, or a run of a 1D
    input starting at each offset. Entries equal to padding_idx are left out (and not counted by "mean");
    an empty bag gives zeros."""
    _check_indices(input)
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub."
            )
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                f"then it must have the same shape as the input ({list(input.shape)})"
            )
    flat, bag_of, n_bags = _bags(input, offsets, include_last_offset)
    padding_idx = check_padding_idx(padding_idx, weight.shape[0])
    rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)
    if mode == "max":
        return _bag_max(rows, bag_of, n_bags, None if padding_idx is None else flat != padding_idx)
    keep = None if padding_idx is None else (flat != padding_idx).to(weight.dtype)
    scale = keep
    if per_sample_weights is not None:
        psw = per_sample_weights.reshape(-1)
        scale = psw if scale is None else psw * scale
    if scale is not None:
        rows = rows * scale.unsqueeze(1)
    out = zeros(n_bags, weight.shape[1], dtype=rows.dtype, device=rows.device).index_add(0, bag_of, rows)
    if mode == "mean":
        counted = keep if keep is not None else ones(flat.shape[0], dtype=weight.dtype, device=weight.device)
        counts = zeros(n_bags, dtype=weight.dtype, device=weight.device).index_add(0, bag_of, counted)
        out = out / counts.clamp_min(1.0).unsqueeze(1)  # empty bags stay zero
    return out


def _bag_max(rows: Tensor, bag_of: Tensor, n_bags: int, keep: Tensor | None) -> Tensor:
    """The elementwise maximum of each bag's rows (bags are consecutive runs of ``rows``).

    The rows are laid out as (bag, position in bag, dim), padded with -inf, and reduced by max,
    whose gradient reaches the one winning row per element, as torch's max mode does.
    """
    n, dim = rows.shape
    device = rows.device
    if n == 0:
        return zeros(n_bags, dim, dtype=rows.dtype, device=device)
    counts = zeros(n_bags, dtype="int64", device=device).index_add(0, bag_of, ones(n, dtype="int64", device=device))
    first = counts.cumsum(0) - counts  # where each bag starts in the flat list
    position = arange(n, device=device) - first[bag_of]
    width = int(counts.max().item())  # the longest bag: the padded layout's size (one host read)
    if keep is not None:
        rows = rows.masked_fill(~keep.unsqueeze(1), float("-inf"))
        counts = zeros(n_bags, dtype="int64", device=device).index_add(0, bag_of, keep.to(dtype="int64"))
    dense = full((n_bags, width, dim), float("-inf"), dtype=rows.dtype, device=device)
    dense[bag_of, position] = rows
    values = dense.max(1).values
    return values.where((counts > 0).unsqueeze(1), 0.0)  # empty (or all-padding) bags give zeros


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 (*, num_classes) with a 1 at each value's position; num_classes=-1 means max + 1."""
    if tensor.dtype.is_floating_point or tensor.dtype.name == "bool":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel():
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        top = tensor.max().item()
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(dtype="int64")
