"""genesis.cuda: devices, synchronisation, streams, CUDA graphs and memory statistics (torch.cuda's names)."""

from genesis_autograd.cuda import *  # noqa: F403
from genesis_autograd.cuda import __all__ as _runtime_names
from genesis_autograd.cuda import device_guard as device

from ._graphed_callables import make_graphed_callables


def manual_seed(seed: int) -> None:
    """Seed the generators (genesis keeps one seed for every device, like torch.manual_seed)."""
    from genesis_autograd import manual_seed as seed_all

    seed_all(seed)


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def get_rng_state(device="cuda"):
    """The state of a GPU's generator (16 bytes: Philox seed and offset), a uint8 tensor on the cpu."""
    from genesis_autograd import get_rng_state as state_of

    return state_of(device)


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a state from get_rng_state: the GPU's later draws repeat."""
    from genesis_autograd import set_rng_state as restore

    restore(new_state, device)


__all__ = [
    *_runtime_names,
    "device",
    "get_rng_state",
    "make_graphed_callables",
    "manual_seed",
    "manual_seed_all",
    "set_rng_state",
]
