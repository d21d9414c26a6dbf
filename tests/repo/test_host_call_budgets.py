"""Host cost as a design property: Python-level calls per eager operation on the cuda path, held to budgets.

tools/host_call_counts.py runs the cuda backend's Python over a fake device (launches are no-ops) in a
child process and counts, with ``sys.setprofile``, the calls one operation makes after warm-up. The
budgets are the counts measured when the eager host path was last tuned (issue 27), with about 5 %
headroom for interpreter differences: a change that adds calls to the hot path fails here, on the CPU
tier, with no timing involved. Lower a budget when a change makes an operation cheaper.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# case -> (budget, measured at the last tuning)
BUDGETS = {
    "a + b": (28, 28),  # (27 -> 28: NDArray's construction reads the shape once; the ops' reads repay it)
    "a + b, requires_grad": (45, 43),
    "Linear forward + backward": (640, 602),  # (684 -> 614: one NDArray op for the backward's products)
    # one block of examples/train_gpt.py under bf16 autocast, forward + backward: 7,637 calls before the
    # attention layouts, the kept float32 biases, the fused Linear backward, the norm plans and the engine's
    # inline node calls; 5,912 before Linear applied autocast itself (no Cast nodes for its operands) and
    # the mixed-width residual add took the dense path
    "GPT block forward + backward (bf16 autocast)": (5500, 5219),
    "empty": (36, 34),  # (43 -> 34: the factories' resolved (device, dtype) arguments; devices found present)
    "AdamW step (8 params)": (250, 233),
    "Module.__call__ (ReLU)": (32, 31),
    # issue 29: the fused KV-cache write (was ~865 calls through two advanced-index setitems) and the fused
    # rotary of q and k (was ~316 calls, two launches)
    "StaticKVCache.update (keys + values)": (26, 24),
    "RotaryEmbedding (q and k)": (101, 96),
}


@pytest.fixture(scope="module")
def counts() -> dict[str, int]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "host_call_counts.py"), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(BUDGETS))
def test_calls_within_budget(counts, case):
    budget, measured = BUDGETS[case]
    assert counts[case] > 0.5 * measured, f"{case}: {counts[case]} calls; did the counting break?"
    assert counts[case] <= budget, f"{case}: {counts[case]} Python-level calls, over its budget of {budget}"


def test_every_case_has_a_budget(counts):
    assert set(counts) == set(BUDGETS)
