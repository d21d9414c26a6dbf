"""Docstring coverage of Genesis's public API, measured on the imported package.

    python tools/docs_coverage.py            # table + undocumented names; exit 1 if a namespace is under 90 %
    python tools/docs_coverage.py --min 95   # another threshold

Why runtime inspection instead of an interrogate-style count of the files: Tensor's methods are defined
in a dozen mixin files (genesis_autograd/functions/*.py) and reach users through ``genesis.Tensor``; what a
user sees is decided by ``__all__``, re-exports and the class's MRO, not by which file a ``def`` sits in.
A file counter would also count private helpers and the Functions' forward/backward, which are no API.

What is counted, per namespace:
  - every public name (no leading underscore) of the module's ``__all__`` that is a function or a class;
    submodules, dtypes and other values are not callables and are left out;
  - for a class, also its public methods, properties and slots that are defined in a class of Genesis's
    own packages along its MRO (not those of object or of builtins such as tuple);
  - a method is counted once, where it is defined; an override of a Genesis base class's method (each
    layer's ``forward``, each optimizer's ``step``) counts as documented when it has a docstring of its
    own or the method it overrides has one: that is the docstring ``help()``, ``inspect.getdoc`` and
    Sphinx show for it (torch documents ``forward`` on the module's class, not on each ``forward``);
  - Tensor's own methods (its mixins' included) are counted in the ``genesis.Tensor`` row only, so
    ``nn.Parameter`` in ``genesis.nn`` adds its own members, not Tensor's again.
A name is documented when its own ``__doc__`` is non-empty (for a slot: its entry in a dict ``__slots__``,
which is where help() reads it).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field

import genesis
import genesis.nn.functional
import genesis.optim.lr_scheduler

OWN_PACKAGES = {"genesis", "genesis_autograd", "genesis_ndarray", "genesis_kernels", "genesis_storage"}
MEMBER_KINDS = (types.FunctionType, staticmethod, classmethod, property, types.MemberDescriptorType)


@dataclass
class Row:
    namespace: str
    documented: list[str] = field(default_factory=list)
    undocumented: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.documented) + len(self.undocumented)

    @property
    def percent(self) -> float:
        return 100.0 * len(self.documented) / self.total if self.total else 100.0


def is_own(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] in OWN_PACKAGES


def has_doc(obj: object) -> bool:
    if isinstance(obj, type):
        doc = obj.__dict__.get("__doc__")
    elif isinstance(obj, types.MemberDescriptorType):  # a slot: documented by a dict __slots__, as help() reads it
        slots = getattr(obj.__objclass__, "__slots__", None)
        doc = slots.get(obj.__name__) if isinstance(slots, dict) else None
    else:
        doc = getattr(obj, "__doc__", None)
    return bool(doc and doc.strip())


def unwrap(member: object) -> object:
    return member.__func__ if isinstance(member, (staticmethod, classmethod)) else member


def members(cls: type, skip: set[type]) -> Iterator[tuple[str, bool]]:
    """(qualified name, documented) for each public method / property that Genesis's classes in
    ``cls``'s MRO define, except those of the classes in ``skip``."""
    own = [k for k in cls.__mro__ if is_own(k) and k not in skip]
    for i, klass in enumerate(own):
        for name, member in vars(klass).items():
            if name.startswith("_") or not isinstance(member, MEMBER_KINDS):
                continue
            documented = has_doc(unwrap(member))
            # An override takes the docstring of the method it overrides (see the module docstring).
            for base in own[i + 1 :]:
                if name in vars(base) and isinstance(vars(base)[name], MEMBER_KINDS):
                    documented = documented or has_doc(unwrap(vars(base)[name]))
            yield f"{klass.__qualname__}.{name}", documented


def measure(namespace: str, module: types.ModuleType, skip: set[type]) -> Row:
    row, seen = Row(namespace), set()

    def add(name: str, documented: bool) -> None:
        if name not in seen:
            seen.add(name)
            (row.documented if documented else row.undocumented).append(name)

    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name)
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        if isinstance(obj, type):
            add(name, has_doc(obj))
            for qualname, documented in members(obj, skip):
                add(qualname, documented)
        elif callable(obj) and not isinstance(obj, genesis.DType):
            add(name, has_doc(obj))
    return row


def tensor_row(skip: set[type]) -> Row:
    row = Row("genesis.Tensor")
    for qualname, documented in members(genesis.Tensor, set()):
        name = "Tensor." + qualname.split(".")[-1]
        (row.documented if documented else row.undocumented).append(name)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=float, default=90.0, help="the lowest coverage accepted, in percent")
    args = parser.parse_args(argv)

    tensor_classes = set(genesis.Tensor.__mro__)  # Tensor and its mixins: measured in their own row
    rows = [
        measure("genesis", genesis, tensor_classes),
        measure("genesis.nn", genesis.nn, tensor_classes),
        measure("genesis.nn.functional", genesis.nn.functional, tensor_classes),
        measure("genesis.optim", genesis.optim, tensor_classes),
        measure("genesis.optim.lr_scheduler", genesis.optim.lr_scheduler, tensor_classes),
        tensor_row(tensor_classes),
    ]
    width = max(len(r.namespace) for r in rows)
    print(f"{'namespace':<{width}}  documented  total  coverage")
    for r in rows:
        print(f"{r.namespace:<{width}}  {len(r.documented):>10}  {r.total:>5}  {r.percent:>7.1f} %")
    failing = [r for r in rows if r.percent < args.min]
    for r in rows:
        if r.undocumented:
            print(f"\nundocumented in {r.namespace} ({len(r.undocumented)}):")
            print("  " + "\n  ".join(sorted(r.undocumented)))
    if failing:
        print(f"\nunder {args.min:g} %: {', '.join(r.namespace for r in failing)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
