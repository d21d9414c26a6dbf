"""The KV-cache write on CUDA: keys and values of every sequence at its own position, one launch.

genesis_kernels.kv_cache_write reads the positions on the device (no host sync, capturable in a CUDA graph)
and the new keys / values through their strides; the caches must be contiguous. The caches' memory changes:
their host-known value ranges are dropped first.
"""

from __future__ import annotations

import genesis_kernels as gk

from .common import View, forget_range, reg, stream_of


@reg("kv_cache_write_")
def kv_cache_write_(keys: View, values: View, k_new: View, v_new: View, positions: View) -> None:
    if not (keys.is_contiguous() and values.is_contiguous()):
        raise RuntimeError(
            f"kv_cache_write_: the caches must be contiguous, got strides {keys.strides} and {values.strides}"
        )
    forget_range(keys)
    forget_range(values)
    gk.kv_cache_write(keys, values, k_new, v_new, positions, stream=stream_of(keys))
