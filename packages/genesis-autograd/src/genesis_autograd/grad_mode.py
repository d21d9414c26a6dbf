"""Whether operations record a graph: no_grad, enable_grad, set_grad_enabled,
inference_mode. The switch is per thread, as in torch."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled = True
    inference = False


_state = _State()


def is_grad_enabled() -> bool:
    """Whether operations record a graph on this thread (False inside no_grad / inference_mode)."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside an enabled inference_mode region."""
    return _state.inference


class _GradModeContext:
    """Base: a context manager that is also a decorator."""

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]  # functools.wraps keeps fn's signature

    def _args(self) -> tuple:
        return ()

    if TYPE_CHECKING:  # each subclass defines them

        def __enter__(self) -> Any: ...
        def __exit__(self, *exc: object) -> Literal[False]: ...


class set_grad_enabled(_GradModeContext):
    """Enable or disable gradient recording; usable as a call, a context or a decorator.

    Called plainly (``set_grad_enabled(False)``) it switches at once for this thread; as a context it
    restores the previous state on exit.

    Args:
        mode: True to record graphs, False not to.
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.prev = _state.enabled
        _state.enabled = self.mode

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _state.enabled = self.prev
        return False

    def _args(self) -> tuple:
        return (self.mode,)


class no_grad(_GradModeContext):
    """A context (or decorator) inside which no graph is recorded: results do not require grad.

    For evaluation and for in-place updates of parameters (optimizers, nn.init). Per thread.
    """

    def __enter__(self) -> Any:
        self.prev = _state.enabled
        _state.enabled = False
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _state.enabled = self.prev
        return False


class enable_grad(_GradModeContext):
    """A context (or decorator) that turns graph recording back on inside a no_grad region."""

    def __enter__(self) -> Any:
        self.prev = _state.enabled
        _state.enabled = True
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _state.enabled = self.prev
        return False


class inference_mode(_GradModeContext):
    """A context (or decorator) like no_grad, for code that never needs gradients.

    Args:
        mode: False makes it a no-op (so a flag can switch it).
    """

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> Any:
        self.prev = (_state.enabled, _state.inference)
        if self.mode:
            _state.enabled = False
            _state.inference = True
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _state.enabled, _state.inference = self.prev
        return False

    def _args(self) -> tuple:
        return (self.mode,)
