"""Shared piece of the CPU backend: registration under the device type "cpu".

Native arrays of this backend are torch CPU tensors; every op is torch's own function,
with torch's semantics and messages.
"""

from __future__ import annotations

from collections.abc import Callable

from ...registry import register, register_resolver

CPU = "cpu"


def reg(name: str) -> Callable[[Callable], Callable]:
    """Decorator: register ``fn`` as the cpu implementation of op ``name``."""
    return register(name, CPU)


def resolver(family: str) -> Callable[[Callable], Callable]:
    """Decorator: register ``fn(op, *dtypes) -> entry | None`` as the cpu resolver of ``family`` (registry.py)."""
    return register_resolver(family, CPU)
