"""genesis.compiler: torch.compiler's names for genesis.compile's state.

``reset()`` forgets every compiled function's graphs; ``config.recompile_limit`` (alias
``cache_size_limit``, torch._dynamo.config's names; 8 by default) bounds the graphs one compiled function
keeps, one per set of guards: a call whose guards match none of them, once the limit is reached, runs
eagerly with a warning. ``Unsupported`` is what ``fullgraph=True`` raises at a graph break.
``is_compiling()`` is True while a compiled function's first call is being captured.

Setting ``GENESIS_COMPILE_DEBUG=1`` prints every captured graph and the source of its generated kernels
to stderr; ``GENESIS_COMPILE_DEBUG=<directory>`` writes them there as files.
"""

from __future__ import annotations

from genesis_autograd.compile import GraphBreak, Unsupported
from genesis_autograd.compile.capture import is_capturing

from ._compile import compile, config, reset

__all__ = ["GraphBreak", "Unsupported", "compile", "config", "is_compiling", "reset"]


def is_compiling() -> bool:
    """Whether genesis.compile is capturing a compiled function's first call right now."""
    return is_capturing()
