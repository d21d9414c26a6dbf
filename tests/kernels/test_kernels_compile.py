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
        "chunk_cat",
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


def test_bf16_tiles_keep_the_float32_layout() -> None:
    """A bf16 tile among float32 ones (autocast's block output, the normed output written in bf16, its
    gradient), or in an all-bf16 norm whose math is float32, is read and written in float32's vector runs: no
    layout conversion through shared memory, so each kernel's sm_90 code has as many barriers as its all-float32
    specialisation's (the norms' row reductions'; none in the residual add)."""
    barriers: dict[tuple[str, bool, str], set[int]] = {}  # (kernel, RMSNorm, dtypes) -> barrier counts
    for line in _compile("mixed_widths")[:-1]:
        name = line.split()[0]
        pointers = line.split("pointers=")[1].split()[0]
        key = (name, "'RMS': True" in line, "bf16" if "bf16" in pointers else "fp32")
        barriers.setdefault(key, set()).add(int(line.split("barriers=")[1].split()[0]))
    kernels = ("_binary_dense_kernel", "_add_norm_fwd_kernel", "_add_norm_bwd_kernel", "_norm_fwd_kernel",
               "_norm_bwd_kernel")  # fmt: skip
    checked = 0
    for (kernel, rms, kind), counts in barriers.items():
        if kernel in kernels and kind == "bf16":
            (fp32,) = barriers[(kernel, rms, "fp32")]
            assert counts == {fp32}, (kernel, rms, barriers)
            checked += 1
    assert checked == 7  # the add, add_norm both ways, LayerNorm and RMSNorm both ways
    assert barriers[("_binary_dense_kernel", False, "bf16")] == {0}
