"""Test-wide setup: which devices exist, and Triton's interpreter where no GPU does.

Tests that take the ``device`` fixture run once per device; the cuda case is
skipped, with the reason shown, on a machine without a GPU. tools/gpu-test sets
GENESIS_REQUIRE_CUDA=1 so that a missing GPU fails the run instead.
"""

from __future__ import annotations

import os


def _cuda_present() -> bool:
    try:
        import genesis_storage

        return genesis_storage.is_available()
    except Exception:
        return False


HAS_CUDA = _cuda_present()

if not HAS_CUDA:
    # Before anything imports triton: kernels then run on the CPU, on host memory.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

if os.environ.get("GENESIS_REQUIRE_CUDA") == "1" and not HAS_CUDA:
    raise pytest.UsageError("GENESIS_REQUIRE_CUDA=1 but genesis_storage sees no CUDA device")

NO_CUDA_REASON = "no CUDA device on this machine (tools/gpu-test runs these on a GPU machine)"
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA_REASON)

DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, requires_cuda])]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param
