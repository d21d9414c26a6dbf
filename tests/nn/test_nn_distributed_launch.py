"""The GPT example under torchrun on cpu (gloo), as the README launches it: two processes on one
"node", two "nodes" of one process each (two torchrun launches rendezvousing over localhost), and one
process with the global batch all train the same (the loss curve of the global batch, the weights)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dist_helpers
import numpy as np
import pytest

import genesis

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--device", "cpu", "--steps", "21", "--eval-interval", "21", "--eval-batches", "2", "--block-size", "16"]
TINY += ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--warmup", "5", "--sample-tokens", "0", "--quiet"]
B = 4  # per process


def _torchrun(*launcher: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *launcher, str(ROOT / "examples" / "train_gpt.py")]


def _run(commands: list[list[str]], out: Path) -> dict:
    """Start the commands together (the launches of one job), wait for all; rank 0's checkpoint."""
    procs = [
        subprocess.Popen([*c, *TINY, "--out-dir", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for c in commands
    ]
    outputs = [p.communicate(timeout=240)[0].decode() for p in procs]
    for p, text in zip(procs, outputs):
        assert p.returncode == 0, text[-3000:]
    return genesis.load(out / "ckpt.safetensors")


@pytest.mark.slow
def test_one_node_two_nodes_and_one_process_train_the_same(tmp_path):
    port = str(dist_helpers.free_port())
    one_node = _run(
        [_torchrun("--nnodes=1", "--nproc_per_node=2", f"--master_port={port}") + ["--batch-size", str(B)]],
        tmp_path / "one_node",
    )
    port = str(dist_helpers.free_port())
    nodes = [
        _torchrun(
            "--nnodes=2", f"--node_rank={r}", "--nproc_per_node=1", "--master_addr=127.0.0.1", f"--master_port={port}"
        )
        + ["--batch-size", str(B)]
        for r in range(2)
    ]
    two_nodes = _run(nodes, tmp_path / "two_nodes")
    single = _run(
        [[sys.executable, str(ROOT / "examples" / "train_gpt.py"), "--batch-size", str(2 * B)]], tmp_path / "one"
    )
    curves = [np.array(c["history"]["train"] + c["history"]["val"]) for c in (one_node, two_nodes, single)]
    assert len(curves[0]) == 4, curves  # the global batch's loss at steps 0, 10, 20; the validation loss
    assert abs(curves[0][2] - curves[0][0]) > 0.05, curves  # it trains: the comparison means something
    # Within fp32 noise: torch's cpu kernels under two busy cores may split a sum across threads
    # differently, and one process sums the whole batch where two all-reduce two halves.
    np.testing.assert_allclose(curves[1], curves[0], rtol=1e-5)  # the same global batches and validation
    np.testing.assert_allclose(curves[2][:3], curves[0][:3], rtol=1e-4)  # (validation: --batch-size rows each)
    for name, value in one_node["model"].items():
        for other in (two_nodes, single):
            np.testing.assert_allclose(other["model"][name].numpy(), value.numpy(), rtol=1e-3, atol=2e-5, err_msg=name)
