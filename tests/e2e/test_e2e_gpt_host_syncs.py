"""A GPT training step on the GPU makes no host synchronisation beyond the reads its user writes.

One eager step of examples/train_gpt.py's GPT (bf16 autocast, AdamW, clip_grad_norm_), after warm-up,
runs under ``genesis.cuda.set_sync_debug_mode("error")`` (every implicit read-back raises) while every
CUDA driver call genesis makes from Python is counted: the step issues its work and returns without
waiting for the GPU once. The user's own ``loss.item()`` afterwards is the one synchronisation.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from tests.device_support import requires_cuda
from tests.e2e.example_loading import ROOT, load_script

import genesis

# Driver calls that make the host wait for the device (or for all its streams).
SYNCHRONISING = {
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "cuMemcpyDtoH",
    "cuMemcpyDtoH_v2",
    "cuMemcpy",
    "cuMemFree",
    "cuMemFree_v2",
    "cuMemFreeHost",
    "cuDeviceSynchronize",
}


class _Counting:
    """A driver binding whose ``cu*`` calls are counted by name, then made."""

    def __init__(self, inner: Any, calls: Counter) -> None:
        self._inner, self._calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not (name.startswith("cu") and callable(value)):
            return value
        calls = self._calls

        def call(*args: Any) -> Any:
            calls[name] += 1
            return value(*args)

        return call


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_gpt_training_step_waits_for_nothing(device):
    import genesis_kernels.runtime as rt
    from genesis_storage import _driver

    gpt = load_script(ROOT / "examples" / "train_gpt.py", "gpt_host_syncs")
    config = gpt.GPTConfig(vocab_size=512, block_size=128, n_layer=2, n_head=4, n_embd=128)
    model = gpt.GPT(config).to(device)
    optimizer = gpt.configure_optimizer(model, lr=3e-4, weight_decay=0.1)
    rng = np.random.default_rng(0)
    batches = [
        tuple(genesis.tensor(rng.integers(0, 512, size=(4, 128)), device=device) for _ in range(2)) for _ in range(4)
    ]

    def step(x, y):
        with genesis.autocast(device, dtype=genesis.bfloat16):
            _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        genesis.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    for x, y in batches[:3]:
        step(x, y)
    genesis.cuda.synchronize()
    calls: Counter[str] = Counter()
    real_driver = _driver.driver()
    try:
        real_lib = rt.cuda().lib  # the kernels runtime's own libcuda (read-backs, scratch)
    except OSError:  # tools/host_gpu's fake device has no libcuda: nothing to count there
        real_lib = None
    _driver._driver = _Counting(real_driver, calls)
    if real_lib is not None:
        rt.cuda().lib = _Counting(real_lib, calls)  # type: ignore[assignment]
    genesis.cuda.set_sync_debug_mode("error")
    try:
        loss = step(*batches[3])
    finally:
        genesis.cuda.set_sync_debug_mode("default")
        _driver._driver = real_driver
        if real_lib is not None:
            rt.cuda().lib = real_lib
    waits = {name: n for name, n in calls.items() if name in SYNCHRONISING}
    assert waits == {}, f"the step synchronised: {waits} (all driver calls: {dict(calls)})"
    assert np.isfinite(loss.item())  # the user's read: the one wait


def test_the_counting_binding_counts():
    calls: Counter[str] = Counter()

    class Fake:
        def cuStreamSynchronize(self, stream: int) -> tuple:
            return (0,)

        version = 3

    counted = _Counting(Fake(), calls)
    assert counted.cuStreamSynchronize(7) == (0,) and counted.version == 3
    assert calls == Counter({"cuStreamSynchronize": 1})
