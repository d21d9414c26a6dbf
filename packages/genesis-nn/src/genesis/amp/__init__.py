"""genesis.amp: automatic mixed precision, torch.amp's names.

``autocast`` is a dispatch rule of the autograd layer (genesis_autograd.autocast): inside
it every op casts its inputs by torch's op policy. ``GradScaler`` scales float16 losses
and skips the optimizer steps whose gradients overflowed, with one host read per step.
"""

from genesis_autograd import autocast, autocast_policy, get_autocast_dtype, is_autocast_enabled

from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "autocast_policy", "get_autocast_dtype", "is_autocast_enabled"]
