"""Anomaly mode (torch.autograd.detect_anomaly): the backward engine checks each node's gradients and raises,
naming the node, where one holds NaN. Off by default: the check reads every gradient back (a sync on cuda)."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import Any, Literal


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


_state = _State()


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on in this thread."""
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode, when on, checks the gradients for NaN (``check_nan``)."""
    return _state.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off in this thread (torch.set_anomaly_enabled)."""
    _state.enabled, _state.check_nan = bool(enabled), bool(check_nan)


class set_detect_anomaly:
    """Context manager (or plain call) that sets anomaly mode to ``mode`` and restores it on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = (_state.enabled, _state.check_nan)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> Literal[False]:
        _state.enabled, _state.check_nan = self._previous
        return False


class detect_anomaly:
    """Context manager that turns anomaly mode on: a backward node whose gradient holds NaN raises a
    RuntimeError naming the node (torch.autograd.detect_anomaly). Genesis records no forward traceback."""

    def __init__(self, check_nan: bool = True) -> None:
        self._check_nan = check_nan
        self._previous = (False, True)
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
            "for debugging.",
            UserWarning,
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self._previous = (_state.enabled, _state.check_nan)
        set_anomaly_enabled(True, self._check_nan)

    def __exit__(self, *exc: object) -> Literal[False]:
        _state.enabled, _state.check_nan = self._previous
        return False


def check_gradients(node: Any, grads: Sequence[Any]) -> None:
    """Raise torch's RuntimeError if one of ``node``'s returned gradients holds NaN (the engine calls this
    while anomaly mode is on)."""
    if not _state.check_nan:
        return
    for i, g in enumerate(grads):
        if g is not None and bool(g.isnan().any().item()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
