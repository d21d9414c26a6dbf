"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

Sequential and ModuleList keep their modules under the names "0", "1", ... (renumbered after a
deletion), so indexing, slicing, insertion and state-dict keys behave as in torch.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from itertools import chain, islice
from typing import TYPE_CHECKING, Any, Self, overload

from genesis_autograd import Tensor

from .module import Module, _add_indent
from .parameter import Parameter


class _IndexedModules(Module):
    """What Sequential and ModuleList share: modules in order, addressed by position."""

    # Module's table types an entry Module | None (a name may be registered as None). A container's entries
    # are the modules it was given, and its methods hand them out as modules, as torch's containers do: the
    # ignores marked "entries are modules" in this file say that to the type checker.

    if TYPE_CHECKING:  # each subclass defines it

        def __getitem__(self, idx: int | slice) -> Any: ...

    def _abs_index(self, idx) -> int:
        idx = operator.index(idx)
        size = len(self)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return idx % size

    def _key_at(self, idx) -> str:
        return next(islice(iter(self._modules), self._abs_index(idx), None))

    def _renumber(self) -> None:
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]  # entries are modules: see _IndexedModules

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, self._key_at(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key_at(idx)]
        for key in keys:
            delattr(self, key)
        self._renumber()

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module: Module) -> Self:
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def _insert(self, index: int, module: Module) -> None:
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def pop(self, key: int | slice) -> Module:
        """Remove the module at ``key`` and return it (the later ones move up)."""
        value = self[key]
        del self[key]
        return value


class Sequential(_IndexedModules):
    """Modules applied in turn; built from modules, or from an OrderedDict naming them."""

    @overload
    def __init__(self, *args: Module) -> None: ...
    @overload
    def __init__(self, arg: OrderedDict[str, Module], /) -> None: ...

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx: int | slice):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))  # type: ignore[arg-type]  # entries are modules: see _IndexedModules
        return self._modules[self._key_at(idx)]

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        out = Sequential()
        for module in chain(self, other):
            out.append(module)
        return out

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for module in list(other):
            self.append(module)
        return self

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        out = Sequential()
        for _ in range(other):
            for module in self:
                out.append(module)
        return out

    __rmul__ = __mul__

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert ``module`` before position ``index`` (the later ones move down); returns self."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        self._insert(index, module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        """Append each module of ``sequential`` (any iterable of modules); returns self."""
        for module in sequential:
            self.append(module)
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(_IndexedModules):
    """A list of submodules (registered, so their parameters are the list's); not callable."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])  # type: ignore[arg-type]  # entries are modules: see _IndexedModules
        return self._modules[self._key_at(idx)]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index`` (the later ones move down)."""
        self._insert(index, module)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        out = ModuleList()
        for i, module in enumerate(chain(self, other)):
            out.add_module(str(i), module)
        return out

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each module of ``modules``; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def __repr__(self) -> str:
        """Runs of identical modules collapse to "(i-j): n x Module(...)", as torch's."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list] = []  # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_add_indent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of submodules."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]  # entries are modules: see _IndexedModules

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove the module under ``key`` and return it."""
        value = self[key]
        del self[key]
        return value

    def keys(self) -> KeysView[str]:
        """The names, in insertion order."""
        return self._modules.keys()

    def items(self) -> ItemsView[str, Module]:
        """(name, module) pairs, in insertion order."""
        return self._modules.items()  # type: ignore[return-value]  # entries are modules: see _IndexedModules

    def values(self) -> ValuesView[Module]:
        """The modules, in insertion order."""
        return self._modules.values()  # type: ignore[return-value]  # entries are modules: see _IndexedModules

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping (a ModuleDict or an OrderedDict keeps its order)
        or from an iterable of (name, module) pairs.
        """
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                f"{type(modules).__name__}"
            )
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is{type(pair).__name__}")
            n = len(pair)
            if n != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {n}; 2 is required")
            self[pair[0]] = pair[1]


def _entry_repr(value: Any) -> str:
    """How ParameterList / ParameterDict show an entry: kind, dtype, size and (off cpu) device."""
    if isinstance(value, Tensor):
        size = "x".join(str(s) for s in value.shape)
        device = f" ({value.device})" if value.device.type != "cpu" else ""
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        return f"{kind} containing: [{value.dtype} of size {size}{device}]"
    return f"Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped as Parameters), registered as "0", "1", ..."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _abs_index(self, idx) -> str:
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __getitem__(self, idx: int | slice):
        if isinstance(idx, slice):
            return self.__class__([self[i] for i in range(*idx.indices(len(self)))])
        return getattr(self, self._abs_index(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, self._abs_index(idx), param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(len(self))])

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end (a plain Tensor becomes a Parameter); returns self."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append each value of ``values``; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_entry_repr(p)}" for i, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (plain tensors are wrapped as Parameters) with string keys."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key: str) -> str:
        if not isinstance(key, str):
            raise TypeError(
                f"Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                f"'{type(key).__name__}'). Open an issue on github if you need non-string keys."
            )
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        attr = self._attr(key)
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters (not copies of them)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value under ``key``; first set to ``default`` if the key is absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str) -> Any:
        """Remove the entry under ``key`` and return its value."""
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        """Remove the last inserted entry and return it as (key, value)."""
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default`` if the key is absent."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        """A new ParameterDict with ``default`` under each of ``keys``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> KeysView[str]:
        """The keys, in insertion order."""
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        """(key, value) pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        """The values, in insertion order."""
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add or replace entries from a mapping (a plain dict's keys sorted, as torch;
        an OrderedDict or ParameterDict keeps its order) or from (key, value) pairs.
        """
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but got "
                f"{type(parameters).__name__}"
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, value in parameters.items():
                self[key] = value
        elif isinstance(parameters, Mapping):
            for key, value in sorted(parameters.items()):  # torch sorts a plain dict's keys here
                self[key] = value
        else:
            for j, pair in enumerate(parameters):
                if not isinstance(pair, Iterable):
                    raise TypeError(
                        f"ParameterDict update sequence element #{j} should be Iterable; is{type(pair).__name__}"
                    )
                # An Iterable without a length or indexing fails in len() with torch's TypeError (the ignores).
                n = len(pair)  # type: ignore[arg-type]
                if n != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {n}; 2 is required")
                self[pair[0]] = pair[1]  # type: ignore[index]

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_entry_repr(p)}" for k, p in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
