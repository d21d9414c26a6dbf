"""The GPT step's index ops (token and position embeddings, their backward, the cross-entropy targets)
run no device bounds check for a batch uploaded from host data, and give torch's values and gradients;
Tensor-level writes (in-place ops, setitem, ``.data`` assignment) bring the check back, and a bad batch
still raises IndexError at the call.

Without a GPU, device 0 is faked over host memory (see tests/ndarray/test_nd_known_range.py, whose fixture
this reuses); on a GPU machine the same tests run on the device, and one counts stream synchronisations.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from device_support import requires_cuda

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ndarray"))
from test_nd_known_range import fake_device_checks


@pytest.fixture
def checks(monkeypatch):
    """One fake GPU over host memory (or the real one), device bounds checks counted."""
    yield from fake_device_checks(monkeypatch)


class TinyLM(nn.Module):
    """The GPT example's embedding and loss structure, without the blocks."""

    def __init__(self, vocab: int, block: int, dim: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim, dtype=genesis.float64)
        self.wpe = nn.Embedding(block, dim, dtype=genesis.float64)

    def forward(self, idx, targets):
        positions = genesis.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        logits = x @ self.wte.weight.T  # tied, as the example
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def _torch_loss(model: TinyLM, idx: np.ndarray, targets: np.ndarray):
    wte = torch.tensor(model.wte.weight.detach().cpu().numpy(), requires_grad=True)
    wpe = torch.tensor(model.wpe.weight.detach().cpu().numpy(), requires_grad=True)
    i, t = torch.from_numpy(idx), torch.from_numpy(targets)
    x = torch.nn.functional.embedding(i, wte) + torch.nn.functional.embedding(torch.arange(i.shape[1]), wpe)
    loss = torch.nn.functional.cross_entropy((x @ wte.T).view(-1, wte.shape[0]), t.view(-1))
    loss.backward()
    return loss, wte.grad, wpe.grad


def _step(model: TinyLM, idx, targets):
    model.zero_grad(set_to_none=True)
    loss = model(idx, targets)
    loss.backward()
    return loss


def _close(got: genesis.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(torch.from_numpy(np.array(got.detach().cpu().numpy())), expected, rtol=1e-10, atol=1e-12)


def test_gpt_like_step_runs_no_device_check(checks):
    rng = np.random.default_rng(0)
    vocab, block = 11, 6
    model = TinyLM(vocab, block, 4).to("cuda")
    idx, targets = (rng.integers(0, vocab, (3, block)) for _ in range(2))
    loss = _step(model, genesis.tensor(idx, device="cuda"), genesis.tensor(targets, device="cuda"))
    assert checks.total == 0, "a host-uploaded batch still ran a device bounds check"
    expected, gwte, gwpe = _torch_loss(model, idx, targets)
    _close(loss, expected)
    _close(model.wte.weight.grad, gwte)
    _close(model.wpe.weight.grad, gwpe)
    # The other upload spellings carry the range too.
    for spelling in (
        genesis.tensor(idx).to("cuda"),
        genesis.tensor(idx).cuda(),
        genesis.from_numpy(idx).cuda(),
        genesis.tensor(idx.astype(np.int32), device="cuda").long(),
    ):
        _step(model, spelling, genesis.tensor(targets, device="cuda"))
    assert checks.total == 0


def test_bad_batch_raises_at_the_call(checks):
    model = TinyLM(11, 6, 4).to("cuda")
    idx = np.zeros((2, 6), dtype=np.int64)
    idx[1, 3] = 11
    with pytest.raises(IndexError, match="index 11 is out of bounds for dimension 0 with size 11"):
        model(genesis.tensor(idx, device="cuda"), genesis.tensor(np.zeros_like(idx), device="cuda"))
    assert checks.total == 0  # the host knew
    targets = np.zeros((2, 6), dtype=np.int64)
    targets[0, 0] = -7
    with pytest.raises(IndexError, match=r"Target -7 is out of bounds\."):
        model(genesis.tensor(np.zeros_like(idx), device="cuda"), genesis.tensor(targets, device="cuda"))
    assert checks.total == 0


@pytest.mark.parametrize("write", ["add_", "setitem", "data_assign", "copy_", "view_add_"])
def test_tensor_writes_bring_the_check_back(checks, write):
    model = TinyLM(11, 6, 4).to("cuda")
    idx = genesis.tensor(np.arange(12).reshape(2, 6) % 11, device="cuda")
    targets = genesis.tensor(np.zeros((2, 6), dtype=np.int64), device="cuda")
    if write == "add_":
        idx.add_(5)  # values up to 15: out of range
    elif write == "setitem":
        idx[0, 1] = 15
    elif write == "data_assign":
        idx.data = (idx + 5).data  # computed on the device: no known range
    elif write == "copy_":
        idx.copy_(idx + 5)
    else:
        idx.view(-1)[1:2].add_(14)
    with pytest.raises(IndexError, match="index 15 is out of bounds for dimension 0 with size 11"):
        model(idx, targets)
    assert checks.index == 1  # the device found it


# ------------------------------------------------------------------ on a GPU: no stream synchronisation
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_gpt_like_step_does_not_synchronise_on_a_gpu(device, monkeypatch):
    import genesis_kernels.runtime as rt

    syncs = []
    cuda = rt.cuda()
    real = type(cuda).synchronize
    monkeypatch.setattr(type(cuda), "synchronize", lambda self, stream: (syncs.append(stream), real(self, stream)))
    rng = np.random.default_rng(1)
    model = TinyLM(50, 16, 8).to(device)
    idx, targets = (rng.integers(0, 50, (4, 16)) for _ in range(2))
    x, y = genesis.tensor(idx, device=device), genesis.tensor(targets, device=device)
    _step(model, x, y)  # the first step may build plans
    syncs.clear()
    loss = _step(model, x, y)
    assert syncs == []
    expected, gwte, gwpe = _torch_loss(model, idx, targets)
    _close(loss, expected)
    _close(model.wte.weight.grad, gwte)
    _close(model.wpe.weight.grad, gwpe)
