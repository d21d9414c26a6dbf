"""The GPT example: the same model, weights and batches give torch's per-step losses; it trains end to end.

The torch side is examples/train_gpt.py itself with its three genesis imports replaced by
torch's: the example is written in torch's names only.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from example_loading import GENESIS_TO_TORCH, ROOT, load_script

import genesis
from device_support import requires_cuda

EXAMPLE = ROOT / "examples" / "train_gpt.py"
TINY = dict(block_size=32, n_layer=2, n_head=2, n_embd=32, dropout=0.0)


def train_losses(
    script, model, data, steps: int, device: str, batch_size: int = 4, autocast_dtype: str | None = None
) -> list[float]:
    """The example's own optimiser, schedule and clipping, on batches drawn from a fixed seed
    (the forward under autocast to ``autocast_dtype`` when given, as the example does on cuda)."""
    lib = script.genesis
    optimizer = script.configure_optimizer(model, lr=2e-3, weight_decay=0.1)
    scheduler = lib.optim.lr_scheduler.LambdaLR(optimizer, lambda s: script.lr_factor(s, 10, steps))
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x, y = data.batch("train", batch_size, TINY["block_size"], rng)
        with lib.autocast(device, dtype=getattr(lib, autocast_dtype or "float32"), enabled=autocast_dtype is not None):
            _, loss = model(lib.tensor(x, device=device), lib.tensor(y, device=device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        script.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


@pytest.mark.slow
def test_per_step_losses_match_torch(device: str) -> None:
    ours = load_script(EXAMPLE, "train_gpt_genesis")
    theirs = load_script(EXAMPLE, "train_gpt_torch", GENESIS_TO_TORCH)
    data = ours.CharData()
    torch.manual_seed(0)
    reference = theirs.GPT(theirs.GPTConfig(vocab_size=len(data.chars), **TINY))
    model = ours.GPT(ours.GPTConfig(vocab_size=len(data.chars), **TINY)).to(device)
    # Same initial weights: torch's, copied in (the tied head arrives once, through wte).
    model.load_state_dict({k: genesis.tensor(v.numpy(), device=device) for k, v in reference.state_dict().items()})
    steps = 100
    expected = train_losses(theirs, reference, data, steps, "cpu")
    got = train_losses(ours, model, data, steps, device)
    relative = np.abs(np.array(got) - np.array(expected)) / np.abs(np.array(expected))
    tolerance = 1e-5 if device == "cpu" else 1e-3  # float32 throughout; cuda kernels round differently
    assert relative.max() < tolerance, (relative.max(), int(relative.argmax()))
    assert expected[-1] < 0.75 * expected[0]  # and the run itself learns


@pytest.mark.slow
@pytest.mark.parametrize("_", [pytest.param("cuda", marks=requires_cuda)])
def test_bf16_autocast_losses_track_torch_within_bf16_noise(_) -> None:
    """Under bf16 autocast on cuda, genesis's per-step losses stay as close to torch's bf16 run as
    torch's bf16 run stays to its own float32 run: bf16 rounding is the only difference allowed."""
    ours = load_script(EXAMPLE, "train_gpt_genesis_bf16")
    theirs = load_script(EXAMPLE, "train_gpt_torch_bf16", GENESIS_TO_TORCH)
    data = ours.CharData()
    torch.manual_seed(0)
    config = dict(vocab_size=len(data.chars), **TINY)
    reference = theirs.GPT(theirs.GPTConfig(**config)).to("cuda")
    start = {k: v.detach().clone() for k, v in reference.state_dict().items()}
    steps = 50
    torch_bf16 = train_losses(theirs, reference, data, steps, "cuda", autocast_dtype="bfloat16")
    reference.load_state_dict(start)
    torch_fp32 = train_losses(theirs, reference, data, steps, "cuda")
    model = ours.GPT(ours.GPTConfig(**config)).to("cuda")
    model.load_state_dict({k: genesis.tensor(v.cpu().numpy(), device="cuda") for k, v in start.items()})
    got = train_losses(ours, model, data, steps, "cuda", autocast_dtype="bfloat16")
    noise = np.abs(np.array(torch_bf16) - np.array(torch_fp32)).max()
    deviation = np.abs(np.array(got) - np.array(torch_bf16)).max()
    assert noise > 0  # bf16 really rounded somewhere: otherwise the bound below means nothing
    assert deviation <= 3 * noise + 1e-3, (deviation, noise)
    assert got[-1] < 0.75 * got[0]


@pytest.mark.slow
def test_the_example_trains_checkpoints_and_resumes(tmp_path) -> None:
    script = load_script(EXAMPLE, "train_gpt_genesis_main")
    common = [
        "--device",
        "cpu",
        "--batch-size",
        "8",
        "--block-size",
        "32",
        "--n-layer",
        "2",
        "--n-head",
        "2",
        "--n-embd",
        "32",
        "--eval-interval",
        "40",
        "--eval-batches",
        "2",
        "--sample-tokens",
        "20",
        "--warmup",
        "10",
        "--out-dir",
        str(tmp_path),
        "--quiet",
    ]
    first = script.main([*common, "--steps", "40"])
    assert (tmp_path / "ckpt.safetensors").exists() and (tmp_path / "loss.png").exists()
    resumed = script.main([*common, "--steps", "80", "--resume"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == resumed
    assert resumed["final_val"] < first["first_train"]
