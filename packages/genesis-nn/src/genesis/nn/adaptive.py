"""AdaptiveLogSoftmaxWithLoss (torch's): a softmax over many classes split into a head (the frequent
classes plus one entry per cluster) and tail clusters of rarer classes behind smaller projections."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import cast

from genesis_autograd import Tensor, cat, zeros

from . import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation (Grave et al., 2016), with torch's parameters and names.

    Args:
        in_features: the input's feature count.
        n_classes: the number of classes.
        cutoffs: increasing class boundaries in [1, n_classes - 1]: classes below cutoffs[0] are in the head,
            each following range is one tail cluster.
        div_value: cluster i projects to in_features // div_value^(i + 1) features.
        head_bias: the head Linear has a bias.

    ``forward(input, target)`` returns (output, loss): each target's log-probability (N) and the mean
    negative log-likelihood.
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where "
                "each value is between 1 and n_classes-1"
            )
        factory = dict(device=device, dtype=dtype)
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **factory), Linear(hidden, size, bias=False, **factory)
                )
            )

    def reset_parameters(self) -> None:
        """Re-draw every Linear's parameters as at construction."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection.children():
                layer.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(
                    f"1D target tensor expects 2D input tensors, but found inputs with size {input_.size()}"
                )
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(
                    f"0D target tensor expects 1D input tensors, but found inputs with size {input_.size()}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and ((target < 0) | (target >= self.n_classes)).any().item():
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. "
            )
        output = zeros(target.shape[0], dtype=input.dtype, device=input.device)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            in_cluster = (target >= low) & (target < high)
            rows = cast(Tensor, in_cluster.nonzero()).reshape(-1)
            if rows.numel() == 0:
                continue
            cluster_logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            local = cluster_logprob.gather(1, (target.index_select(0, rows) - low).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
        # The head's entry of each target: the class itself in the shortlist, else its cluster's entry.
        cluster = sum(
            ((target >= c).long() for c in self.cutoffs[:-1]),
            zeros(target.shape, dtype=target.dtype, device=target.device),
        )
        head_index = target.where(target < self.shortlist_size, self.shortlist_size + cluster - 1)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            entry = self.shortlist_size + i
            parts.append(cluster_logprob + head_logprob[:, entry : entry + 1])
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """log-probabilities of all n_classes classes: (N, in_features) -> (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row, log_prob(input).argmax(1), skipping the tail where the head's
        best entry is a shortlist class for every row: (N, in_features) -> (N)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        not_in_shortlist = output >= self.shortlist_size
        if not not_in_shortlist.any().item():
            return output
        full = self._get_full_log_prob(input, head_output).argmax(1)
        return full.where(not_in_shortlist, output)
