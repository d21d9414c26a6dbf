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
    lines = _compile(group)
    assert "compiled" in lines[-1]


def _compile(group: str) -> list[str]:
    """compile_check.py's lines for ``group``: one per compiled specialisation, then the count."""
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
    return proc.stdout.splitlines()


def test_a_bf16_operand_among_float32_ones_keeps_the_float32_layout() -> None:
    """A bf16 tensor among float32 ones (autocast's block output, the normed output written in bf16, its
    gradient) is read and written 4 elements per thread, as the float32 ones: no layout conversion through
    shared memory, so the sm_90 code has as many barriers as the all-float32 kernel's (the norm's row
    reductions'; none in the residual add)."""
    barriers: dict[tuple[str, bool], int] = {}
    for line in _compile("mixed_widths")[:-1]:
        name = line.split()[0]
        count = int(line.split("barriers=")[1].split()[0])
        barriers[(name, "bf16" in line.split("pointers=")[1].split()[0])] = count
    for kernel in ("_binary_dense_kernel", "_add_norm_fwd_kernel", "_add_norm_bwd_kernel"):
        assert barriers[(kernel, True)] == barriers[(kernel, False)], barriers
    assert barriers[("_binary_dense_kernel", True)] == 0
