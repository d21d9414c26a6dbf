"""What fully_shard is told about precision and placement: MixedPrecisionPolicy, OffloadPolicy and
CPUOffloadPolicy (torch.distributed.fsdp's frozen dataclasses, same fields and defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from genesis_autograd import DType


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """Dtypes of the unsharded parameters, the gradient reduction and the forward's output.

    Attributes:
        param_dtype: the dtype of the all-gathered (unsharded) parameters that forward and backward use;
            None keeps the parameters' own. The sharded parameters the optimizer steps keep their dtype.
        reduce_dtype: the dtype of the gradient reduce-scatter (and of gradients accumulated without
            synchronisation); None: ``param_dtype``'s.
        output_dtype: the dtype the root module's floating-point outputs are cast to; None: no cast.
        cast_forward_inputs: whether the module's floating-point forward inputs are cast to ``param_dtype``.
    """

    param_dtype: DType | None = None
    reduce_dtype: DType | None = None
    output_dtype: DType | None = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """No offloading: the sharded parameters, their gradients and the optimizer state stay on the device."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """The sharded parameters and gradients live in host memory (so the optimizer steps there); each
    all-gather copies the shard to the device first, each reduce-scatter's result is copied back.

    Attributes:
        pin_memory: keep the host shards in page-locked memory (faster, asynchronous copies).
    """

    pin_memory: bool = True
