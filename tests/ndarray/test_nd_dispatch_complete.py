"""Both backends implement one op surface: every op registered for cpu is registered for cuda and the
reverse, and it is exactly the set of ops the device-independent layer dispatches.

Runs without a GPU: looking up a device's table imports its backend package, whose modules register
their real functions on import (the cuda ones need Triton, not a device, for that).
"""

from __future__ import annotations

import re
from pathlib import Path

import genesis_ndarray
from genesis_ndarray import registry

# Ops one backend registers and the other does not, each with the reason. None is intended today: a
# new entry must say why a device cannot have the op.
INTENDED_EXCEPTIONS: dict[str, str] = {}

# Where the device-independent layer names the ops it dispatches: self._ops["op"], table(...)["op"],
# registry.lookup("op", ...), and creation.py's helpers _make("op", ...) / _random("op", ...).
_DISPATCH = re.compile(r"""(?:_ops|table\([^)]*\)|\bops)\["(\w+)"\]|(?:lookup|_make|_random)\("(\w+)\"""")


def _registered(device_type: str) -> set[str]:
    return set(registry.table(device_type))


def _dispatched() -> set[str]:
    package = Path(genesis_ndarray.__file__).parent
    names: set[str] = set()
    for source in package.glob("*.py"):  # the layer above the backends (backends/ itself is not scanned)
        for a, b in _DISPATCH.findall(source.read_text()):
            names.add(a or b)
    return names


def test_cpu_and_cuda_register_the_same_ops():
    cpu, cuda = _registered("cpu"), _registered("cuda")
    assert sorted(cpu - cuda - INTENDED_EXCEPTIONS.keys()) == [], "registered for cpu only"
    assert sorted(cuda - cpu - INTENDED_EXCEPTIONS.keys()) == [], "registered for cuda only"


def test_intended_exceptions_are_still_exceptions():
    cpu, cuda = _registered("cpu"), _registered("cuda")
    for op in INTENDED_EXCEPTIONS:
        assert (op in cpu) != (op in cuda), f"{op} is now on both devices (or on neither): drop it from the list"


def test_every_dispatched_op_is_registered_and_every_registered_op_is_dispatched():
    dispatched = _dispatched()
    assert len(dispatched) > 50, "the dispatch pattern no longer finds the ops (NDArray changed its spelling?)"
    for device_type in ("cpu", "cuda"):
        registered = _registered(device_type)
        assert sorted(dispatched - registered - INTENDED_EXCEPTIONS.keys()) == [], f"dispatched, not on {device_type}"
        assert sorted(registered - dispatched) == [], f"registered on {device_type} but never dispatched (dead)"
