"""DistributedDataParallel: one model replica per process, gradients averaged across the processes
during backward (torch.nn.parallel.DistributedDataParallel's behaviour and arguments)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import genesis_autograd as ag

from ... import distributed as dist
from ..module import Module
from .reducer import Reducer


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``loss.backward()`` leaves every rank with the gradient averaged over all
    ranks, as if one process had run the whole (concatenated) batch.

    At construction rank 0's parameters and buffers are copied to the other ranks. During backward,
    gradients are all-reduced in buckets of about ``bucket_cap_mb`` MiB as soon as each bucket is complete,
    overlapping communication with the rest of backward; backward returns once all are averaged.

    Args:
        module: the model, already on its device (``device_ids`` / ``output_device`` are accepted for
            torch's signature; the module's device decides).
        broadcast_buffers: copy rank 0's buffers (e.g. BatchNorm statistics) to every rank at each forward.
        process_group: the group to average over (default: the world).
        bucket_cap_mb: bucket size in MiB (25).
        find_unused_parameters: look for parameters the forward did not use and count them ready, so that
            a model whose forward skips some parameters still reduces; a parameter unused on every rank
            keeps ``.grad`` None.
        gradient_as_bucket_view: leave each ``.grad`` a view of its slot in the reducer's flat bucket
            buffer, so that no gradient is copied back after the all-reduce (and later backwards
            accumulate straight into the bucket). Off by default, as in torch (``.grad`` never
            aliases the bucket); on, it saves one copy per parameter after backward, host time in a
            host-bound step (examples/train_gpt.py turns it on).

    ``state_dict()`` keys carry the ``module.`` prefix, as torch's; ``ddp.module.state_dict()`` has none.
    """

    def __init__(
        self,
        module: Module,
        device_ids: list[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
    ) -> None:
        super().__init__()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
                "gradient."
            )
        self.module = module
        self.process_group = dist.process_group.default_group(process_group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.require_backward_grad_sync = True
        self._sync_module_states()
        params = [p for p in module.parameters() if p.requires_grad]
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.reducer = Reducer(
            params, self.process_group, self.bucket_cap_mb, find_unused_parameters, gradient_as_bucket_view
        )

    def _sync_module_states(self) -> None:
        """Rank 0's parameters and buffers, everywhere."""
        src = self.process_group.ranks[0]
        for tensor in [*self.module.parameters(), *self.module.buffers()]:
            dist.broadcast(tensor.detach(), src, group=self.process_group)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.reducer.unfinished:
            self.reducer.unfinished = False
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`. Parameter indices which did not receive grad for "
                f"rank {dist.get_rank(self.process_group)}: {' '.join(map(str, self.reducer.missing))}"
            )
        if self.broadcast_buffers:
            src = self.process_group.ranks[0]
            for buffer in self.module.buffers():
                dist.broadcast(buffer.detach(), src, group=self.process_group)
        outputs = self.module(*inputs, **kwargs)
        if ag.is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare_for_backward(outputs)
        else:
            self.reducer.skip_backward()
        return outputs

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, forwards do not synchronise: their backward only accumulates local gradients (the first
        forward-backward after the block averages the sum)."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
