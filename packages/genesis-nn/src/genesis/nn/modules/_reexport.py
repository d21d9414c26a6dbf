"""How each genesis.nn.modules.<name> shim answers: torch's names for that submodule, taken from genesis.nn
(or the genesis.nn family file that defines a private base class) when they are looked up.

Lookups are lazy (a module ``__getattr__``), so a class that genesis.nn gains later is importable from its
shim without editing it: ``from genesis.nn.modules.conv import Conv3d`` works as soon as genesis.nn has one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["shim"]


def _lookup(name: str, sources: Sequence[str], aliases: dict[str, str]) -> Any:
    """``name`` from the first source module that has it (then its alias, if any), or AttributeError."""
    for candidate in (name, aliases.get(name)):
        if candidate is None:
            continue
        for source in sources:
            try:
                module = importlib.import_module(source)
            except ModuleNotFoundError as e:
                if e.name != source:  # a real import error inside an existing file: let it show
                    raise
                continue  # a family file genesis does not have (yet)
            if hasattr(module, candidate):
                return getattr(module, candidate)
    raise AttributeError(name)


def shim(
    module_name: str,
    names: Sequence[str],
    sources: Sequence[str] = (),
    aliases: dict[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a torch-path shim module.

    Args:
        module_name: the shim's ``__name__`` (for error messages).
        names: torch's names in that submodule (its ``__all__`` and the private base classes user code names).
        sources: modules searched after genesis.nn, in order (the family files where private bases live).
        aliases: a stand-in for a name genesis does not define itself (``_NormBase`` -> ``_BatchNorm``).
    """
    known = tuple(names)
    where = ("genesis.nn", *sources)
    stand_ins = dict(aliases or {})

    def available() -> list[str]:
        found = []
        for name in known:
            try:
                _lookup(name, where, stand_ins)
            except (AttributeError, ImportError):
                continue
            found.append(name)
        return found

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return [n for n in available() if not n.startswith("_")]
        if name in known:
            try:
                return _lookup(name, where, stand_ins)
            except (AttributeError, ImportError):
                pass
        raise AttributeError(f"module {module_name!r} has no attribute {name!r} (genesis has no such class yet)")

    def __dir__() -> list[str]:
        return sorted(available())

    return __getattr__, __dir__
