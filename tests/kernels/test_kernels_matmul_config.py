"""matmul_plan's ``config`` override (PointerConfig / TmaConfig) and the small-M latency rule, against torch."""

from __future__ import annotations

import importlib

import pytest
import torch
from kernels_helpers import assert_close, buf, make, sync

import genesis_kernels as gk

mm = importlib.import_module("genesis_kernels.matmul")


def _recurrent_operands(device: str, dtype: str, m: int, k: int, n: int) -> tuple[torch.Tensor, ...]:
    """h (1, m, k) @ W^T with W (n, k) stored row-major (a recurrent step's forward), and an output."""
    a = make((1, m, k), dtype, device, low=-1, high=1)
    w = make((n, k), dtype, device, low=-1, high=1)
    out = torch.full((1, m, n), float("nan"), dtype=a.dtype, device=device)
    return a, w.t().unsqueeze(0), out


@pytest.mark.parametrize("split", [1, 3])
@pytest.mark.parametrize("tf32", [False, True])
def test_pointer_config_is_used_and_exact(device: str, split: int, tf32: bool) -> None:
    """A forced pointer configuration, with and without split-K, gives the product (bias and activation
    included); split > 1 runs the split-sum pass, split == 1 does not."""
    a, b, out = _recurrent_operands(device, "float32", 24, 200, 40)
    bias = make((40,), "float32", device, low=-1, high=1)
    mm._SPLIT_SUM.cache.clear()
    cfg = mm.PointerConfig(32, 32, 32, 4, 2, split=split)
    plan = gk.matmul_plan(buf(a), buf(b), buf(out), bias=buf(bias), activation="relu", allow_tf32=tf32, config=cfg)
    assert plan is not None
    plan(a.data_ptr(), b.data_ptr(), out.data_ptr(), bias.data_ptr(), 0)
    sync(device)
    assert bool(mm._SPLIT_SUM.cache) == (split > 1)
    ref = torch.relu(a.double() @ b.double() + bias.double()).float()
    t = dict(rtol=5e-3, atol=5e-3) if tf32 else dict(rtol=1e-5, atol=1e-5 * 200**0.5)
    assert_close(out, ref, **t)


def test_config_is_part_of_the_plan_key(device: str) -> None:
    """The same buffers with another config (or none) get another plan, each computing the product."""
    a, b, out = _recurrent_operands(device, "float32", 16, 96, 48)
    plans = {
        gk.matmul_plan(buf(a), buf(b), buf(out), config=cfg)
        for cfg in (None, mm.PointerConfig(16, 16, 16, 4, 2), mm.PointerConfig(16, 32, 32, 4, 2, split=2))
    }
    assert len(plans) == 3
    for plan in plans:
        out.fill_(float("nan"))
        plan(a.data_ptr(), b.data_ptr(), out.data_ptr(), out.data_ptr(), 0)
        sync(device)
        assert_close(out, (a.double() @ b.double()).float(), rtol=1e-5, atol=1e-4)


def test_tma_config_is_used(device: str) -> None:
    """A forced TMA configuration on a bfloat16 step product (64 rows, as a recurrent step)."""
    a, b, out = _recurrent_operands(device, "bfloat16", 64, 64, 96)
    calls = []
    original = mm._matmul_tma

    def spy(*args):  # type: ignore[no-untyped-def]
        calls.append(args[6])  # (a, b, out, bias, activation, tf32, config, accumulate)
        return original(*args)

    mm._matmul_tma = spy
    try:
        plan = gk.matmul_plan(buf(a), buf(b), buf(out), config=mm.TmaConfig(64, 32, 32, 4, 2, warp_specialize=False))
    finally:
        mm._matmul_tma = original
    assert calls == [mm.TmaConfig(64, 32, 32, 4, 2, warp_specialize=False)]
    assert plan is not None
    plan(a.data_ptr(), b.data_ptr(), out.data_ptr(), out.data_ptr(), 0)
    sync(device)
    assert_close(out, (a.double() @ b.double()).to(torch.bfloat16), "bfloat16")


def test_tma_config_refused_where_tma_cannot_read(device: str) -> None:
    """Exact float32 has no TMA path: a TmaConfig is refused with the operands named."""
    a, b, out = _recurrent_operands(device, "float32", 64, 64, 64)
    with pytest.raises(ValueError, match=r"needs the TMA kernel.*float32"):
        gk.matmul_plan(buf(a), buf(b), buf(out), config=mm.TmaConfig(64, 64, 32, 4, 2))


@pytest.mark.parametrize(
    "bad", [mm.PointerConfig(24, 32, 32, 4, 2), mm.PointerConfig(32, 8, 32, 4, 2), mm.PointerConfig(32, 32, 32, 3, 2)]
)
def test_bad_pointer_config_is_refused(device: str, bad) -> None:
    a, b, out = _recurrent_operands(device, "float32", 16, 32, 32)
    with pytest.raises(ValueError, match="matmul: "):
        gk.matmul_plan(buf(a), buf(b), buf(out), config=bad)


@pytest.mark.parametrize(
    "dtype, mnk, expected",
    [
        # the LSTM benchmark's forward (h @ W_hh^T): 32-column tiles fill 128 of 132 SMs, one launch
        ("float32", (64, 4096, 1024), mm.PointerConfig(64, 32, 32, 4, 3, 1)),
        # its backward (dgates @ W_hh): 32 tiles, K split four ways to fill one wave
        ("float32", (64, 1024, 4096), mm.PointerConfig(64, 32, 32, 4, 3, 4)),
        ("bfloat16", (64, 1024, 4096), mm.PointerConfig(64, 32, 64, 4, 3, 4)),
        # a wide output fills the chip with wider tiles; a short batch takes a short row tile
        ("float32", (64, 32768, 1024), mm.PointerConfig(64, 128, 32, 4, 3, 1)),
        ("bfloat16", (5, 16384, 1024), mm.PointerConfig(16, 64, 64, 4, 3, 1)),
        # a short K is not split below four K steps a slice
        ("float32", (64, 256, 256), mm.PointerConfig(64, 32, 32, 4, 3, 2)),
    ],
)
def test_latency_config_rule(monkeypatch, dtype: str, mnk: tuple[int, int, int], expected) -> None:
    monkeypatch.setattr(mm, "sm_count", lambda: 132)
    assert mm.latency_config(dtype, *mnk) == expected
