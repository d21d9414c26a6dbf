"""F.add_rms_norm's host cost: Python-level calls on the cuda path (fake device, launches no-ops), against
the two ops it replaces (``residual + h`` then ``F.rms_norm``) and against budgets.

The point of the fused op is fewer launches and fewer Python calls per pre-norm block; a change that makes
it cost more host time than the composition it stands for fails here, on the CPU tier. Budgets: the counts
measured when the path was tuned, with about 5 % headroom (as test_host_call_budgets.py).
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
BUDGETS = {"inference": (93, 88), "forward + backward": (440, 419)}

_SCRIPT = """
import json, sys
sys.path.insert(0, "tools")
import profile_host
profile_host.fake_gpu()
from host_call_counts import count_calls
import genesis, genesis.nn.functional as F

bf16 = genesis.bfloat16
h, r, dy, ds = (genesis.randn(64, 256, device="cuda", dtype=bf16) for _ in range(4))
w = genesis.randn(256, device="cuda", dtype=bf16)
hg, rg, wg = (t.detach().requires_grad_() for t in (h, r, w))


def train(fused):
    def step():
        hg.grad = rg.grad = wg.grad = None
        if fused:
            y, s = F.add_rms_norm(hg, rg, 256, wg, 1e-6)
        else:
            s = rg + hg
            y = F.rms_norm(s, (256,), wg, 1e-6)
        genesis.autograd.backward([y, s], [dy, ds])
    return step


cases = {
    ("inference", True): lambda: F.add_rms_norm(h, r, 256, w, 1e-6),
    ("inference", False): lambda: F.rms_norm(r + h, (256,), w, 1e-6),
    ("forward + backward", True): train(True),
    ("forward + backward", False): train(False),
}
out = {}
for (name, fused), fn in cases.items():
    with genesis.inference_mode() if name == "inference" else genesis.enable_grad():
        for _ in range(3):
            fn()
        out[f"{name} {'fused' if fused else 'unfused'}"] = count_calls(fn)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def counts() -> dict[str, int]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(BUDGETS))
def test_fused_costs_fewer_calls_than_the_composition_and_stays_in_budget(counts, case):
    budget, measured = BUDGETS[case]
    fused, unfused = counts[f"{case} fused"], counts[f"{case} unfused"]
    assert fused > 0.5 * measured, f"{case}: {fused} calls; did the counting break?"
    assert fused < unfused, f"{case}: fused {fused} Python-level calls, the add + rms_norm it replaces {unfused}"
    assert fused <= budget, f"{case}: {fused} Python-level calls, over its budget of {budget}"
