"""The sync debug mode (torch.cuda.set_sync_debug_mode): warn about, or refuse, every implicit host wait.

An op that must read device data on the host (``item()``, ``tolist()``, a copy to the cpu, the element
count of ``nonzero`` / ``masked_select``, the eager bounds check of an index whose range the host does not
know) waits for its stream, and the host then stops queueing work while the GPU drains: in a decode loop
one such wait per layer serialises host and GPU. Every such path of genesis calls :func:`check` (through
``capture.forbid_readback`` or directly) before it waits; in mode 1 ("warn") that warns, in mode 2
("error") it raises RuntimeError naming the op, before anything waits. Explicit synchronisation
(``synchronize()``, ``Event.synchronize()``) is what the caller asked for and is not reported.

The mode is process-wide, as torch's.
"""

from __future__ import annotations

import warnings

_NAMES = {"default": 0, "warn": 1, "error": 2}
_mode = 0


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """0 / "default": nothing; 1 / "warn": warn on each synchronising op; 2 / "error": raise RuntimeError."""
    global _mode
    if isinstance(debug_mode, str):
        if debug_mode not in _NAMES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _NAMES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"set_sync_debug_mode(): debug_mode must be int or str, not {type(debug_mode).__name__}")
    # torch keeps any int: 0 and below are silent, 1 warns, 2 and above raise
    _mode = debug_mode


def get_sync_debug_mode() -> int:
    """The current mode: 0 (default), 1 (warn) or 2 (error)."""
    return _mode


def check(op: str) -> None:
    """Called by ``op`` just before it makes the host wait for a stream: warn or raise per the mode."""
    if _mode <= 0:
        return
    message = f"called a synchronizing CUDA operation: {op}"
    if _mode >= 2:
        raise RuntimeError(message)
    warnings.warn(message, UserWarning, stacklevel=3)


__all__ = ["check", "get_sync_debug_mode", "set_sync_debug_mode"]
