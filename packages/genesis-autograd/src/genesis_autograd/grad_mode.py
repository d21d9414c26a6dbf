"""Whether operations record a graph: no_grad, enable_grad, set_grad_enabled,
inference_mode. The switch is per thread, as in torch."""

from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True
    inference = False


_state = _State()


def is_grad_enabled() -> bool:
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _GradModeContext:
    """Base: a context manager that is also a decorator."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)

        return wrapper

    def _args(self) -> tuple:
        return ()


class set_grad_enabled(_GradModeContext):
    """Enable or disable gradient recording; usable as a call, a context or a decorator."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self.prev = _state.enabled
        _state.enabled = self.mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False

    def _args(self) -> tuple:
        return (self.mode,)


class no_grad(_GradModeContext):
    """Tensors computed inside do not require grad, and no graph is recorded."""

    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = False
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class enable_grad(_GradModeContext):
    def __enter__(self):
        self.prev = _state.enabled
        _state.enabled = True
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class inference_mode(_GradModeContext):
    """no_grad, and tensors made inside are marked as inference tensors."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (_state.enabled, _state.inference)
        if self.mode:
            _state.enabled = False
            _state.inference = True
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self.prev
        return False

    def _args(self) -> tuple:
        return (self.mode,)
