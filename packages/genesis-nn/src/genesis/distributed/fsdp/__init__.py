"""genesis.distributed.fsdp: fully sharded data parallel with torch's FSDP2 API (``fully_shard``).

    from genesis.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    for block in model.blocks:
        fully_shard(block, mp_policy=MixedPrecisionPolicy(param_dtype=genesis.bfloat16))
    fully_shard(model)
    opt = genesis.optim.AdamW(model.parameters())   # the sharded parameters (fp32 master shards)

Files: policies.py (MixedPrecisionPolicy, OffloadPolicy, CPUOffloadPolicy), sharded_tensor.py (each rank's
rows of a parameter: ShardedParameter, ShardedTensor), param_group.py (the flat shard, all-gather and
reduce-scatter of one module's parameters), state.py (the forward / backward hooks, prefetch and the
root's end of backward), fully_shard.py (fully_shard, FSDPModule). State dicts and sharded checkpoints
are genesis.distributed.checkpoint's.
"""

from .fully_shard import FSDPModule, UnshardHandle, fully_shard
from .policies import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy
from .sharded_tensor import ShardedParameter, ShardedTensor, ShardSpec

__all__ = [
    "CPUOffloadPolicy",
    "FSDPModule",
    "MixedPrecisionPolicy",
    "OffloadPolicy",
    "ShardSpec",
    "ShardedParameter",
    "ShardedTensor",
    "UnshardHandle",
    "fully_shard",
]
