"""Device memory of a training loop is flat from its second step: nothing the step leaves behind (the
optimizers' device pointer tables included) grows with the step count. Gradients are freed by
``zero_grad(set_to_none=True)`` every step and come back at other addresses, which is what made a
cache of whole pointer tables grow by one 512-byte block a step for the first sixteen steps."""

from __future__ import annotations

import gc

import pytest

import genesis
import genesis.nn as nn
from device_support import requires_cuda

STEPS = 40


def _allocated_after_each_step(make_optimizer, clip: bool) -> list[int]:
    gc.collect()  # an earlier test's model, held in a reference cycle, would be freed mid-loop
    genesis.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).cuda()
    optimizer = make_optimizer(model.parameters())
    x, y = genesis.randn(16, 32, device="cuda"), genesis.randint(0, 10, (16,), device="cuda")
    allocated = []
    for _ in range(STEPS):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        del loss
        allocated.append(genesis.cuda.memory_allocated())
    return allocated


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda p: genesis.optim.SGD(p, lr=0.01, momentum=0.9),
        lambda p: genesis.optim.SGD(p, lr=0.01),
        lambda p: genesis.optim.AdamW(p, lr=1e-3),
    ],
    ids=["sgd-momentum", "sgd", "adamw"],
)
@pytest.mark.parametrize("clip", [False, True], ids=["", "clip"])
@pytest.mark.parametrize("_", [pytest.param("cuda", marks=requires_cuda)])
def test_training_loop_memory_flat_from_the_second_step(make_optimizer, clip: bool, _: str) -> None:
    allocated = _allocated_after_each_step(make_optimizer, clip)
    assert allocated[1:] == [allocated[1]] * (STEPS - 1), allocated
