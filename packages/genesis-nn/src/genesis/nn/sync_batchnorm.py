"""SyncBatchNorm: batch normalisation whose training statistics cover the batch of every rank of a process
group. Each rank's per-channel sums, sums of squares and counts are all-reduced in one call; the all-reduce
is differentiable (its backward all-reduces the gradient), so autograd gives each rank the gradient of
the sum of every rank's loss, as torch's SyncBatchNorm does. Without an initialised group of more than one
rank, or outside training, it is BatchNorm."""

from __future__ import annotations

from typing import Any

from genesis_autograd import Function, Tensor, cat, no_grad

from .. import distributed as dist
from .batchnorm import _BatchNorm
from .module import Module


class _AllReduceSum(Function):
    """The sum over the group's ranks; its gradient is the sum of every rank's gradient."""

    @staticmethod
    def forward(ctx: Any, tensor: Tensor, group: Any) -> Tensor:
        ctx.group = group
        out = tensor.detach().clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        total = grad.detach().clone()
        dist.all_reduce(total, group=ctx.group)
        return total, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation of (N, C, *) input with statistics synchronised over a process group.

    Args:
        num_features: C.
        eps: added to the variance.
        momentum: the running statistics' update factor (None: their cumulative average).
        affine: learn ``weight`` (ones at start) and ``bias`` (zeros) per channel.
        track_running_stats: keep running_mean / running_var (updated in training, used in eval).
        process_group: the group whose ranks share statistics (default: the whole world).
        device, dtype: where and in which dtype the parameters and buffers are made.

    Shape: input (N, C, *); output the same shape.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def _sync_group(self) -> Any:
        """The group to synchronise over in this call, or None to behave as BatchNorm."""
        if not self.training or not dist.is_available() or not dist.is_initialized():
            return None
        group = self.process_group if self.process_group is not None else dist.group.WORLD
        return group if dist.get_world_size(group) > 1 else None

    def forward(self, input: Tensor) -> Tensor:
        """Normalise ``input`` with the whole group's batch statistics in training (BatchNorm otherwise)."""
        group = self._sync_group()
        if group is None:
            return super().forward(input)
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise ValueError(
                f"expected input's size at dim=1 to match num_features ({self.num_features}), but got: "
                f"{input.shape[1]}."
            )
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        dims = (0,) + tuple(range(2, input.ndim))
        c = self.num_features
        local = input.to(dtype="float64") if input.dtype.name in ("float16", "bfloat16") else input
        count = local.new_full((c,), float(input.numel() // c))
        totals = _AllReduceSum.apply(cat([local.sum(dims), (local * local).sum(dims), count]), group)
        total_count = totals[2 * c :]
        mean = totals[:c] / total_count
        var = (totals[c : 2 * c] / total_count - mean * mean).clamp_min(0.0)
        if float(total_count[0].item()) <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {list(input.shape)}"
            )
        shape = (1, c) + (1,) * (input.ndim - 2)
        out = (local - mean.reshape(shape)) * (var.reshape(shape) + self.eps).rsqrt()
        out = out.to(dtype=input.dtype)
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        if self.track_running_stats and self.running_mean is not None and self.running_var is not None:
            with no_grad():
                n = total_count[0]
                unbiased = var.detach() * n / (n - 1)
                self.running_mean.mul_(1 - factor).add_(mean.detach().to(dtype=self.running_mean.dtype) * factor)
                self.running_var.mul_(1 - factor).add_(unbiased.to(dtype=self.running_var.dtype) * factor)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every BatchNorm*d in it (itself included) replaced by a SyncBatchNorm holding the
        same parameters, buffers, requires_grad and training mode."""
        output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):  # instance norms are not
            output = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            if module.affine:
                with no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output
