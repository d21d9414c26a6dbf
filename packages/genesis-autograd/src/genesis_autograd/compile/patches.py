"""What a capture installs while it runs, and how it reads a new tensor's origin.

Every op of the framework is a ``Function.apply`` (function.py calls ``capture_hook`` when one is set),
except a few ways of making tensors that skip it: the arithmetic operators' and unary methods' inline
paths when no graph is recorded, the comparisons, the factories (``arange``, ``empty``, ``randn``, ...), in-place
methods (which write through ``Tensor._inplace``) and host reads (``item``, ``tolist``, ``numpy``). For
the capture's duration only, Tensor's ``__init__``, its in-place methods and its host reads are wrapped
(the class is restored afterwards, so eager code never pays for this): a tensor born outside an op is
traced back through its creating frame to the call that made it (:func:`origin`).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..tensor import Tensor

if TYPE_CHECKING:
    from .capture import Capture

_MISSING = object()
HOST_READS = ("item", "tolist", "numpy", "__array__", "__dlpack__")
_EXTRA_INPLACE = ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__")
_FACTORIES = "genesis_autograd.factories"


@functools.cache
def inplace_methods() -> tuple[str, ...]:
    """Tensor's public in-place methods (``add_``, ``bernoulli_``, ...) and in-place operators."""
    names = [n for n in dir(Tensor) if n.endswith("_") and not n.startswith("_")]
    names += [n for n in _EXTRA_INPLACE if hasattr(Tensor, n)]
    return tuple(n for n in names if inspect.isfunction(getattr(Tensor, n, None)))


@functools.cache
def _inline_table() -> dict[Any, Callable[[FrameType], tuple[Callable[..., Any], tuple, str, type | None]]]:
    """Code object of an inline fast path -> how to read, from its frame, the op it computed."""
    from ..functions.elementwise import Add, Div, Mul, Sub

    def binary(fn: Any) -> Callable[[FrameType], tuple]:
        return lambda f: (fn.apply, (f.f_locals["self"], f.f_locals["other"]), fn.__name__, fn)

    def unary(f: FrameType) -> tuple:
        fn = f.f_locals["fn"]
        return fn.apply, (f.f_locals["self"],), fn.__name__, fn

    table: dict[Any, Callable[[FrameType], tuple]] = {
        Tensor.__add__.__code__: binary(Add),
        Tensor.__sub__.__code__: binary(Sub),
        Tensor.__mul__.__code__: binary(Mul),
        Tensor.__truediv__.__code__: binary(Div),
        Tensor.detach.__code__: lambda f: (Tensor.detach, (f.f_locals["self"],), "Tensor.detach", None),
        # comparisons and logic (==, <, &, ...): the NDArray op wrapped, no Function (no gradient)
        Tensor._no_grad_binary.__code__: lambda f: (
            Tensor._no_grad_binary,
            (f.f_locals["self"], f.f_locals["op"], f.f_locals["other"]),
            f"Tensor.{f.f_locals['op']}",
            None,
        ),
    }
    unary_code = Tensor.exp.__code__  # every unary method is _unary_method's one closure
    if unary_code.co_name == "method":
        table[unary_code] = unary
    return table


def origin(frame: FrameType) -> tuple[Callable[..., Any], tuple, dict, str, type | None] | str:
    """The call that made a tensor born in ``frame`` outside any op: (fn, args, kwargs, label, Function
    class) to replay, or a string saying why it cannot be replayed."""
    read = _inline_table().get(frame.f_code)
    if read is not None:
        fn, args, label, cls = read(frame)
        return fn, args, {}, label, cls
    outer = None
    f: FrameType | None = frame
    while f is not None and f.f_globals.get("__name__") == _FACTORIES:
        outer = f
        f = f.f_back
    if outer is not None and not outer.f_code.co_name.startswith("_"):
        fn = outer.f_globals[outer.f_code.co_name]
        args, kwargs = _call_arguments(outer)
        return fn, args, kwargs, f"genesis.{outer.f_code.co_name}", None
    code = frame.f_code
    return f"a tensor made outside the captured ops, in {code.co_name} ({code.co_filename}:{frame.f_lineno})"


def _call_arguments(frame: FrameType) -> tuple[tuple, dict]:
    """The arguments ``frame``'s function was called with (its parameters' current values)."""
    code = frame.f_code
    names, local = code.co_varnames, frame.f_locals
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    args = [local[n] for n in names[:npos]]
    kwargs = {n: local[n] for n in names[npos : npos + nkw]}
    i = npos + nkw
    if code.co_flags & inspect.CO_VARARGS:
        args += list(local[names[i]])
        i += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(local[names[i]])
    return tuple(args), kwargs


class Patches:
    """Tensor's class attributes swapped for the capture's wrappers; :meth:`restore` puts them back."""

    def __init__(self, capture: Capture) -> None:
        self.saved: dict[str, Any] = {}
        init = Tensor.__init__

        def born(t: Tensor, data: Any, requires_grad: bool = False) -> None:
            init(t, data, requires_grad)
            capture.on_birth(t, sys._getframe(1))

        self._set("__init__", born)
        for name in HOST_READS:
            if hasattr(Tensor, name):
                self._set(name, _host_read(capture, name, getattr(Tensor, name)))
        for name in inplace_methods():
            self._set(name, _inplace(capture, name, getattr(Tensor, name)))

    def _set(self, name: str, value: Any) -> None:
        self.saved[name] = Tensor.__dict__.get(name, _MISSING)
        setattr(Tensor, name, value)

    def restore(self) -> None:
        """Put Tensor's own attributes back (an inherited one: the wrapper is removed)."""
        for name, value in self.saved.items():
            if value is _MISSING:
                delattr(Tensor, name)
            else:
                setattr(Tensor, name, value)
        self.saved.clear()


def _host_read(capture: Capture, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def read(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        splits = capture.on_host_read(self, name, sys._getframe(1), bool(args or kwargs))
        value = method(self, *args, **kwargs)
        if splits:
            capture.after_host_read(value)
        return value

    return read


def _inplace(capture: Capture, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def write(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return capture.on_call(method, (self, *args), kwargs, f"Tensor.{name}", None)

    return write
