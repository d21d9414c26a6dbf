"""genesis.compile(mode="reduce-overhead" / "max-autotune"): the compiled graph, forward and backward, replayed
as CUDA graphs from a set of guards' third call; everything else as the default mode. Training with it is
held against eager genesis and torch on the same values; on the CPU the modes add nothing (no graphs)."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, g

import genesis
import genesis.nn as nn


@pytest.fixture(autouse=True)
def _fresh_compiler():
    yield
    genesis.compiler.reset()


class _Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


def _copy_weights(src: nn.Module, dst: torch.nn.Module) -> None:
    for (name, p), (tname, tp) in zip(src.named_parameters(), dst.named_parameters()):
        assert name == tname
        with torch.no_grad():
            tp.copy_(torch.from_numpy(p.detach().cpu().numpy()))


def _torch_block(width: int) -> torch.nn.Module:
    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.LayerNorm(width)
            self.up = torch.nn.Linear(width, 4 * width)
            self.down = torch.nn.Linear(4 * width, width)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))

    return Block()


@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_training_steps_match_torch(device: str, mode: str) -> None:
    width = 32
    genesis.manual_seed(0)
    model = _Block(width).to(device)
    reference = _torch_block(width).double()
    _copy_weights(model, reference)
    compiled = genesis.compile(model, mode=mode)
    opt = genesis.optim.AdamW(model.parameters(), lr=1e-2)
    topt = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    for step in range(6):
        tx = torch.randn(4, 8, width, dtype=torch.float64)
        target = torch.randn(4, 8, width, dtype=torch.float64)
        loss = ((compiled(g(tx.float(), device)) - g(target.float(), device)) ** 2).mean()
        tloss = ((reference(tx) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss.backward()
        topt.step()
        assert abs(loss.item() - tloss.item()) < 1e-4 * max(1.0, abs(tloss.item())), step
        for p, tp in zip(model.parameters(), reference.parameters()):
            assert_close(p, tp.float(), atol=1e-4, rtol=1e-4)
    (replay,) = compiled._compiled.cuda_graphs
    # cuda: recorded at the third call and replayed since; cpu: never recorded (no CUDA device)
    assert replay.recorded == (device == "cuda"), replay.failed
    if device == "cpu":
        assert "CUDA" in replay.failed


def test_inputs_stay_the_callers_and_outputs_are_static(device: str) -> None:
    compiled = genesis.compile(lambda x, w: (x * w).sigmoid() + w, mode="reduce-overhead")
    w = g(torch.randn(16), device)
    inputs = [torch.randn(16) for _ in range(5)]
    kept = []
    for tx in inputs:
        x = g(tx, device)
        out = compiled(x, w)
        assert_close(out, _ref(tx, w))
        assert_close(x, tx)  # the graphs copy the input into their own buffer: the caller's is untouched
        kept.append(out.clone())
    for out, tx in zip(kept, inputs):  # clones keep each call's values past the next call
        assert_close(out, _ref(tx, w))


def _ref(tx: torch.Tensor, w) -> torch.Tensor:
    tw = torch.from_numpy(w.detach().cpu().numpy())
    return (tx * tw).sigmoid() + tw


def test_new_shapes_get_their_own_graphs(device: str) -> None:
    compiled = genesis.compile(lambda x: (x.exp() - 1) * 2, mode="reduce-overhead")
    for n in (8, 8, 8, 8, 12, 12, 12, 12, 8):
        tx = torch.randn(n)
        assert_close(compiled(g(tx, device)), (tx.exp() - 1) * 2)
    replays = compiled.cuda_graphs
    assert len(replays) == 2
    assert all(r.recorded == (device == "cuda") for r in replays)


def test_a_graph_with_a_host_read_keeps_the_default_replay(device: str) -> None:
    def fn(x):
        y = x * 2
        return y + 1 if y.sum().item() > 0 else y - 1  # a host read: two pieces

    compiled = genesis.compile(fn, mode="reduce-overhead")
    for _ in range(4):
        tx = torch.rand(6) + 0.1
        assert_close(compiled(g(tx, device)), tx * 2 + 1)
    (replay,) = compiled.cuda_graphs
    assert not replay.recorded and "breaks" in replay.failed


def test_no_grad_inference(device: str) -> None:
    model = _Block(16).to(device).eval()
    compiled = genesis.compile(model, mode="reduce-overhead")
    with genesis.no_grad():
        for _ in range(5):
            tx = torch.randn(3, 16)
            x = g(tx, device)
            want = torch.from_numpy(model(x).cpu().numpy())  # eager genesis on the same weights
            assert_close(compiled(x), want, atol=1e-5, rtol=1e-5)
