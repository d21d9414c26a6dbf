"""Generator: a seeded random stream on the cpu, for samplers and random_split (torch.Generator's role).

It holds its own copy of the cpu generator's state and swaps it in for each draw, so
its numbers are the ones torch.Generator().manual_seed(s) gives for the same draws
(genesis's cpu generator is torch's Mersenne Twister), and the global stream is left
untouched. Not thread-safe: draw from one thread at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from genesis_autograd import Device, Tensor, as_device, cuda, get_rng_state, manual_seed, set_rng_state

_DEFAULT_SEED = 67280421310721  # a fresh torch.Generator's seed


def _devices_with_generators() -> list[str]:
    devices = ["cpu"]
    if cuda.is_available():
        devices += [f"cuda:{i}" for i in range(cuda.device_count())]
    return devices


def _cpu_state_for_seed(seed: int) -> Tensor:
    """The cpu generator's state right after seeding it with ``seed``; every generator is left as it was."""
    saved = [(d, get_rng_state(d)) for d in _devices_with_generators()]
    try:
        manual_seed(seed)
        return get_rng_state("cpu")
    finally:
        for device, state in saved:
            set_rng_state(state, device)


class Generator:
    """A cpu random generator with torch.Generator's seeding API."""

    def __init__(self, device: Device | str = "cpu") -> None:
        self.device = as_device(device)
        if self.device.type != "cpu":
            raise RuntimeError("genesis.Generator draws on the cpu only (it serves data loading)")
        self._seed = _DEFAULT_SEED
        self._state: Tensor | None = None  # made on first use: seeding costs a state round trip

    def manual_seed(self, seed: int) -> Generator:
        """Seed this generator with ``seed`` (its stream then matches torch.Generator's); returns self."""
        self._seed = int(seed)
        self._state = None
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy and return the seed."""
        seed = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """A copy of the generator's state, a uint8 tensor, for set_state."""
        return self._current().clone()

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state from get_state: the draws that followed it come again; returns self."""
        self._state = new_state.clone()
        return self

    def _current(self) -> Tensor:
        if self._state is None:
            self._state = _cpu_state_for_seed(self._seed)
        return self._state

    @contextmanager
    def active(self) -> Iterator[None]:
        """Within the block the global cpu generator draws this generator's stream."""
        outside = get_rng_state("cpu")
        set_rng_state(self._current(), "cpu")
        try:
            yield
        finally:
            self._state = get_rng_state("cpu")
            set_rng_state(outside, "cpu")


@contextmanager
def drawing_from(generator: Generator | None) -> Iterator[None]:
    """Draw from ``generator``, or from the global cpu generator when it is None."""
    if generator is None:
        yield
    else:
        with generator.active():
            yield
