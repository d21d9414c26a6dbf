"""genesis.cuda: devices, synchronisation, streams and memory statistics (torch.cuda's names)."""

from genesis_autograd.cuda import *  # noqa: F403
from genesis_autograd.cuda import __all__ as _runtime_names
from genesis_autograd.cuda import device_guard as device


def manual_seed(seed: int) -> None:
    """Seed the generators (genesis keeps one seed for every device, like torch.manual_seed)."""
    from genesis_autograd import manual_seed as seed_all

    seed_all(seed)


__all__ = [*_runtime_names, "device", "manual_seed"]
