"""The op registry: op name -> per-device implementation, and the resolved entries of the hot path.

Backends register their functions here; NDArray looks them up by its device
type. Adding a device means registering its functions, and no code above this
package ever asks which device it is on.

Resolved entries. A general implementation (``binary(op, a, b)``) checks its operands,
finds the op by name and works out the result dtype on every call. For the common case
a backend may also register a *resolver* for the family: given one signature (the op
name and the operands' dtypes) it returns, once, the function that does that op on those
dtypes and the dtype of its result, or None where the general path must run. NDArray asks
``table.resolved[(family, op, *dtypes)]``; the first call resolves and caches the answer
(None included), later calls are one dict lookup. A new registration on a device type
clears that device's cached entries, and ``invalidate()`` clears them all (set_default_dtype
calls it, although no resolver may depend on the default dtype).

Plans. Below a resolved entry, a backend may keep a :class:`PlanCache` of what one call of an op on
one layout class needs (output shape, kernel, grid, strides), keyed by everything that decides it
(dtypes, shapes, strides, pointer alignment, global switches such as the matmul precision), so that
a repeated call costs one dict lookup. ``invalidate()`` and every registration clear them too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


class Resolved(dict):
    """One device type's resolved entries: (family, op, *dtypes) -> entry or None, made on first use."""

    __slots__ = ("resolvers",)

    def __init__(self) -> None:
        super().__init__()
        self.resolvers: dict[str, Callable[..., Any]] = {}  # family -> resolver(op, *dtypes) -> entry | None

    def __missing__(self, key: tuple) -> Any:
        resolver = self.resolvers.get(key[0])
        entry = None if resolver is None else resolver(*key[1:])
        self[key] = entry
        return entry


class OpTable(dict):
    """One device type's ops (op name -> implementation), with its resolved entries beside them."""

    __slots__ = ("resolved",)

    def __init__(self) -> None:
        super().__init__()
        self.resolved = Resolved()


class PlanCache(dict):
    """A backend's per-layout plans of one op: key -> plan, bounded (cleared when full), cleared by invalidate()."""

    __slots__ = ("limit",)

    def __init__(self, limit: int = 1024) -> None:
        super().__init__()
        self.limit = limit
        _PLAN_CACHES.append(self)

    def put(self, key: Any, plan: Any) -> Any:
        """Keep ``plan`` under ``key`` (forgetting every plan first when full) and return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = plan
        return plan


_TABLES: dict[str, OpTable] = {}
_PLAN_CACHES: list[PlanCache] = []

# Backends are imported on first use: the cuda backend pulls in Triton, which a
# CPU-only program never needs.
_BACKEND_MODULES = {
    "cpu": "genesis_ndarray.backends.cpu",
    "cuda": "genesis_ndarray.backends.cuda",
}


def _table(device_type: str) -> OpTable:
    found = _TABLES.get(device_type)
    if found is None:
        found = _TABLES[device_type] = OpTable()
    return found


def register(op: str, device_type: str) -> Callable[[Callable], Callable]:
    """Decorator: make ``fn`` the implementation of ``op`` on ``device_type``."""

    def decorate(fn: Callable) -> Callable:
        ops = _table(device_type)
        ops[op] = fn
        ops.resolved.clear()  # an entry may have been resolved to the implementation this one replaces
        _clear_plans()
        return fn

    return decorate


def register_resolver(family: str, device_type: str) -> Callable[[Callable], Callable]:
    """Decorator: make ``resolver(op, *dtypes) -> entry | None`` the resolver of ``family`` on ``device_type``.

    What an entry is, is the family's contract with NDArray (see ndarray.py); None means "take the
    general path" for that signature.
    """

    def decorate(resolver: Callable) -> Callable:
        ops = _table(device_type)
        ops.resolved.resolvers[family] = resolver
        ops.resolved.clear()
        _clear_plans()
        return resolver

    return decorate


def _clear_plans() -> None:
    for plans in _PLAN_CACHES:
        plans.clear()


def invalidate() -> None:
    """Forget every resolved entry and every plan (they are made again on next use)."""
    for ops in _TABLES.values():
        ops.resolved.clear()
    _clear_plans()


def table(device_type: str) -> OpTable:
    """The op table of one device type (op name -> implementation; ``.resolved``: its resolved entries)."""
    found = _TABLES.get(device_type)
    if found is None:
        module = _BACKEND_MODULES.get(device_type)
        if module is None:
            raise RuntimeError(f"no backend is registered for device type {device_type!r}")
        importlib.import_module(module)
        found = _TABLES[device_type]
    return found


def lookup(op: str, device_type: str) -> Callable:
    """The implementation of ``op`` on ``device_type``; NotImplementedError when it has none."""
    ops = table(device_type)
    try:
        return ops[op]
    except KeyError:
        raise NotImplementedError(f"operator {op!r} is not implemented for device type {device_type!r}") from None


def resolve(family: str, op: str, device_type: str, *dtypes: Any) -> Any:
    """The resolved entry of ``op`` of ``family`` on ``device_type`` for operands of ``dtypes`` (cached),
    or None where that signature takes the general path."""
    return table(device_type).resolved[(family, op, *dtypes)]


def device_types() -> tuple[str, ...]:
    """Every device type a backend exists for (loaded or not)."""
    return tuple(dict.fromkeys([*_BACKEND_MODULES, *_TABLES]))
