"""Deterministic mode (torch.use_deterministic_algorithms): the process-wide switch and the alert that
nondeterministic paths raise.

genesis' cuda backend accumulates with atomics in a few places (scatter_add, index_add, embedding's
backward, index_put / put with accumulate); the order of those additions varies from run to run, so
float results may differ in the last bits. In deterministic mode these paths call
:func:`alert_not_deterministic`, which raises RuntimeError naming the op, or warns with ``warn_only``.
The cpu backend is torch, so the switch is handed to torch as well: cpu ops then behave as torch's do
in deterministic mode.
"""

from __future__ import annotations

import warnings

import torch

_DEBUG_MODES = ("default", "warn", "error")
_enabled = False
_warn_only = False


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Make nondeterministic ops raise RuntimeError (``mode=True``), or warn instead with ``warn_only``."""
    global _enabled, _warn_only
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(
            f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not {type(warn_only).__name__}"
        )
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    _enabled, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether deterministic mode is on."""
    return _enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode only warns (``warn_only=True``)."""
    return _warn_only


def get_deterministic_debug_mode() -> int:
    """0 when deterministic mode is off, 1 when it warns, 2 when it raises."""
    if not _enabled:
        return 0
    return 1 if _warn_only else 2


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """The debug-mode spelling of use_deterministic_algorithms: "default" / 0 off, "warn" / 1, "error" / 2."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got {debug_mode}"
            )
        level = _DEBUG_MODES.index(debug_mode)
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
        level = debug_mode
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    use_deterministic_algorithms(level > 0, warn_only=level == 1)


def alert_not_deterministic(op: str) -> None:
    """Called by a nondeterministic path before it runs: raises RuntimeError (warns with ``warn_only``)
    naming ``op`` in deterministic mode, does nothing otherwise."""
    if not _enabled:
        return
    message = (
        f"{op} does not have a deterministic implementation, but you set "
        "'genesis.use_deterministic_algorithms(True)'. You can turn off determinism just for this operation, "
        "or you can use the 'warn_only=True' option, if that's acceptable for your application."
    )
    if _warn_only:
        warnings.warn(message, UserWarning, stacklevel=3)
        return
    raise RuntimeError(message)


__all__ = [
    "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "get_deterministic_debug_mode",
    "set_deterministic_debug_mode",
    "alert_not_deterministic",
]
