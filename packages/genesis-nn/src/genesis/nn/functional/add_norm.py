"""Residual add + normalisation in one op: add_rms_norm, add_layer_norm (Genesis extensions: torch has no
``F.add_rms_norm``; there it is ``s = residual + input`` followed by ``F.rms_norm(s, ...)``).

genesis_autograd's functions themselves (documented there): a pre-norm block calls them twice per layer,
so no wrapper adds a call of its own.
"""

from __future__ import annotations

from genesis_autograd import add_layer_norm, add_rms_norm

__all__ = ["add_layer_norm", "add_rms_norm"]
