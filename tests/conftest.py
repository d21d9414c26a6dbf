"""Test-wide setup: which devices exist, and Triton's interpreter where no GPU does.

Tests that take the ``device`` fixture run once per device; the cuda case is
skipped, with the reason shown, on a machine without a GPU. tools/gpu-test sets
GENESIS_REQUIRE_CUDA=1 so that a missing GPU fails the run instead.
"""

from __future__ import annotations

import os

from device_support import HAS_CUDA, requires_cuda

if not HAS_CUDA:
    # Before anything imports triton: kernels then run on the CPU, on host memory.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest

if os.environ.get("GENESIS_REQUIRE_CUDA") == "1" and not HAS_CUDA:
    raise pytest.UsageError("GENESIS_REQUIRE_CUDA=1 but genesis_storage sees no CUDA device")

DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param


def pytest_terminal_summary(terminalreporter) -> None:
    """Skips summarised by reason (one line each with a count), instead of one line per skipped test."""
    from collections import Counter

    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: Counter[str] = Counter()
    for report in skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    terminalreporter.section("skips by reason")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count:6d}  {reason}")
