"""Which devices this machine has, for every test tier: one answer, imported by the conftest and the helpers.

Imports genesis_storage only (never triton), so the conftest can still switch Triton's
interpreter on before anything loads triton.
"""

from __future__ import annotations

import pytest


def _cuda_present() -> bool:
    try:
        import genesis_storage

        return genesis_storage.is_available()
    except Exception:
        return False


HAS_CUDA = _cuda_present()
NO_CUDA_REASON = "no CUDA device on this machine (tools/gpu-test runs these on a GPU machine)"
# Marks of a case that needs the GPU: skipped, with the reason shown, where there is none.
requires_cuda = [pytest.mark.cuda, pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA_REASON)]
