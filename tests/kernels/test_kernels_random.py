"""Philox random kernels: reproducible, offset-addressable, distributed as claimed."""

from __future__ import annotations

import pytest
import torch
from kernels_helpers import buf, make, sync

import genesis_kernels as gk


def test_rand_reproducible_and_offset_addressable(device: str) -> None:
    a = torch.empty(5000, device=device)
    b = torch.empty(5000, device=device)
    tail = torch.empty(4000, device=device)
    gk.rand(buf(a), seed=1234, offset=0)
    gk.rand(buf(b), seed=1234, offset=0)
    gk.rand(buf(tail), seed=1234, offset=1000)
    sync(device)
    assert torch.equal(a, b)
    assert torch.equal(a[1000:], tail)  # element i uses counter offset + i
    assert 0.0 <= a.min().item() and a.max().item() < 1.0
    assert abs(a.mean().item() - 0.5) < 0.02
    other = torch.empty(5000, device=device)
    gk.rand(buf(other), seed=1235, offset=0)
    sync(device)
    assert not torch.equal(a, other)


def test_rand_strided_out_uses_logical_order(device: str) -> None:
    flat = torch.empty(6, 7, device=device)
    gk.rand(buf(flat), seed=9, offset=3)
    strided = torch.empty(7, 6, device=device).t()
    gk.rand(buf(strided), seed=9, offset=3)
    sync(device)
    assert torch.equal(flat, strided)


def test_randn_moments(device: str) -> None:
    out = torch.empty(20000, device=device)
    gk.randn(buf(out), seed=7, offset=0)
    sync(device)
    assert abs(out.mean().item()) < 0.03
    assert abs(out.std().item() - 1.0) < 0.03
    half = torch.empty(1000, dtype=torch.bfloat16, device=device)
    gk.normal(buf(half), 3.0, 0.5, seed=7, offset=0)
    sync(device)
    assert abs(half.float().mean().item() - 3.0) < 0.1


def test_randint_uniform_bernoulli(device: str) -> None:
    ints = torch.empty(10000, dtype=torch.int64, device=device)
    gk.randint(buf(ints), -3, 5, seed=3, offset=0)
    flo = torch.empty(10000, device=device)
    gk.uniform(buf(flo), -2.0, 2.0, seed=3, offset=0)
    mask = torch.empty(10000, dtype=torch.bool, device=device)
    gk.bernoulli(0.3, buf(mask), seed=3, offset=0)
    probs = make((10000,), "float32", device, low=0.0, high=1.0)
    coins = torch.empty(10000, device=device)
    gk.bernoulli(buf(probs), buf(coins), seed=4, offset=0)
    sync(device)
    assert ints.min().item() == -3 and ints.max().item() == 4
    assert torch.bincount(ints + 3).min().item() > 1000
    assert -2.0 <= flo.min().item() and flo.max().item() < 2.0
    assert abs(mask.float().mean().item() - 0.3) < 0.02
    assert abs(coins.mean().item() - probs.mean().item()) < 0.02


@pytest.mark.parametrize("p", [0.0, 0.25, 1.0])
def test_dropout_mask_recomputed(device: str, p: float) -> None:
    x = make((50, 41), "float32", device)
    out = torch.empty_like(x)
    gk.dropout(buf(x), buf(out), p, seed=11, offset=100)
    grad = make((50, 41), "float32", device)
    gx = torch.empty_like(grad)
    gk.dropout(buf(grad), buf(gx), p, seed=11, offset=100)  # backward: same seed and offset
    sync(device)
    kept = out != 0
    assert torch.equal(kept, gx != 0)
    mask = torch.empty(50, 82, dtype=torch.bool, device=device)[:, ::2]  # the keep-mask, written through strides
    again = torch.empty_like(x)
    gk.dropout(buf(x), buf(again), p, seed=11, offset=100, mask=buf(mask))
    sync(device)
    assert torch.equal(again, out) and torch.equal(mask, kept)
    if p < 1.0:
        torch.testing.assert_close(out[kept], x[kept] / (1 - p))
        assert abs((~kept).float().mean().item() - p) < 0.03
    else:
        assert not kept.any()


# The interpreter computes with numpy, which warns on the 0 * inf this test is about.
@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply:RuntimeWarning")
@pytest.mark.parametrize("p", [0.5, 1.0])
def test_dropout_is_x_times_mask_times_scale(device: str, p: float) -> None:
    """As torch's x * mask * scale: a dropped inf or NaN gives NaN (0 * inf), not 0; a kept one stays."""
    x = torch.tensor([float("inf"), float("nan"), -float("inf"), 1.0] * 256, device=device)
    out = torch.empty_like(x)
    keep = torch.empty(x.shape, dtype=torch.uint8, device=device)
    gk.dropout(buf(x), buf(out), p, seed=5, offset=0, mask=buf(keep))
    sync(device)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    torch.testing.assert_close(out, x * keep * scale, equal_nan=True)
    assert 0 < keep.sum().item() < x.numel() if p < 1.0 else keep.sum().item() == 0
