"""Graph breaks: the exception ``fullgraph=True`` raises, and the user's source line a break names."""

from __future__ import annotations

import sys
from dataclasses import dataclass

# Frames of these packages are the framework's own: a break names the first frame outside them.
_FRAMEWORK = frozenset({"genesis", "genesis_autograd", "genesis_ndarray", "genesis_kernels", "genesis_storage"})


class Unsupported(RuntimeError):
    """Raised under ``fullgraph=True`` where the capture cannot continue one graph (torch raises
    ``torch._dynamo.exc.Unsupported`` there): a host read, data-dependent control flow, an op it
    cannot replay. The message names the op and the user's source line."""


@dataclass(frozen=True)
class GraphBreak:
    """Why a capture stopped: what happened (``reason``) and where in the user's code (``site``)."""

    reason: str
    site: str

    def message(self) -> str:
        """The text a warning or an :class:`Unsupported` carries."""
        return f"graph break: {self.reason} at {self.site}"


def user_site(skip: int = 1) -> str:
    """``file:line in function`` of the innermost frame outside the framework (the user's code)."""
    frame = sys._getframe(skip)
    while frame is not None:
        package = str(frame.f_globals.get("__name__", "")).split(".")[0]
        if package not in _FRAMEWORK:
            code = frame.f_code
            return f"{code.co_filename}:{frame.f_lineno} in {code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"
