"""examples/train_gpt.py --fsdp --resume on cpu (gloo, torchrun-launched): two processes train and write the
sharded checkpoint; it holds the weights gathered into ckpt.safetensors and the AdamW state; resuming from
it on two processes and on one (resharded on load) continues alike: the same losses of the same global
batches, the same weights at the end, the history carried on."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import dist_helpers
import numpy as np
import pytest

import genesis

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--device", "cpu", "--eval-batches", "2", "--block-size", "16", "--n-layer", "1", "--n-head", "2"]
TINY += ["--n-embd", "32", "--warmup", "100", "--sample-tokens", "0", "--quiet", "--eval-interval", "3", "--fsdp"]
B = 2  # per process, of a global batch of 4


def _launch(world: int, out: Path, *extra: str) -> list[str]:
    script = [str(ROOT / "examples" / "train_gpt.py"), *TINY, "--out-dir", str(out), *extra]
    if world == 1:
        return [sys.executable, *script, "--batch-size", str(B * 2)]
    port = f"--master_port={dist_helpers.free_port()}"
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc_per_node={world}",
        port,
        *script,
        "--batch-size",
        str(B),
    ]


def _run_together(commands: list[list[str]]) -> None:
    procs = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for c in commands]
    outputs = [p.communicate(timeout=240)[0].decode() for p in procs]
    for p, text in zip(procs, outputs):
        assert p.returncode == 0, text[-3000:]


@pytest.mark.slow
def test_fsdp_resume_on_the_same_and_another_world_size(tmp_path):
    import genesis.distributed.checkpoint as dcp

    first = tmp_path / "first"
    _run_together([_launch(2, first, "--steps", "3")])
    # the sharded checkpoint holds the weights of ckpt.safetensors (gathered on rank 0) and the AdamW moments
    gathered = genesis.load(first / "ckpt.safetensors")
    state = {"model": {k: genesis.zeros(*v.shape) for k, v in gathered["model"].items()}, "step": 0}
    trained = [n for n, _ in genesis.load(first / "ckpt.safetensors")["model"].items() if n != "lm_head.weight"]
    state["optim"] = {"state": {n: {"exp_avg": genesis.zeros(*gathered["model"][n].shape)} for n in trained}}
    dcp.load(state, checkpoint_id=first / "ckpt_sharded")
    assert state["step"] == 3
    for name, value in gathered["model"].items():
        np.testing.assert_array_equal(state["model"][name].numpy(), value.numpy(), err_msg=name)
    for name in trained:  # the head is tied to the token embedding: one parameter, one state
        assert np.abs(state["optim"]["state"][name]["exp_avg"].numpy()).max() > 0, name
    # resume on two processes and on one, from copies of the same checkpoint, to step 6
    two, one = tmp_path / "two", tmp_path / "one"
    shutil.copytree(first, two)
    shutil.copytree(first, one)
    _run_together(
        [
            _launch(2, two, "--steps", "6", "--resume", "--loss-log", str(two / "losses.json")),
            _launch(1, one, "--steps", "6", "--resume", "--loss-log", str(one / "losses.json")),
        ]
    )
    logs = [json.loads((d / "losses.json").read_text()) for d in (two, one)]
    assert [log["start"] for log in logs] == [3, 3] and len(logs[0]["losses"]) == 3
    # within fp32 noise: one process sums the whole batch where two all-reduce two halves
    np.testing.assert_allclose(logs[1]["losses"], logs[0]["losses"], rtol=1e-5)
    ends = [genesis.load(d / "ckpt.safetensors") for d in (two, one)]
    assert ends[0]["history"]["eval_step"] == [3, 6] == ends[1]["history"]["eval_step"]
    for name, value in ends[0]["model"].items():
        np.testing.assert_allclose(ends[1]["model"][name].numpy(), value.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
