"""Every kernel family compiles for sm_90 (Hopper), checked without a GPU.

The interpreter never runs Triton's compiler, so this closes the gap in CPU-only CI:
``compile_check.py`` compiles representative specialisations to PTX/cubin with
TRITON_INTERPRET off, in a subprocess (the variable is read once, at import).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.mark.parametrize(
    "group",
    [
        "elementwise",
        "reduce",
        "softmax",
        "activation",
        "cross_entropy",
        "normalization",
        "add_norm",
        "attention",
        "matmul",
        "random",
        "creation",
        "index",
        "getitem",
        "sort",
        "scan",
        "optimizer",
        "rnn",
        "rope",
        "kv_cache",
        "special",
        "search",
    ],
)
def test_compiles_for_sm90(group: str) -> None:
    # The child sees this process's import path (PYTHONPATH entries may be relative).
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run(
        [sys.executable, str(HERE / "compile_check.py"), group],
        env=env,
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "compiled" in proc.stdout.splitlines()[-1]
