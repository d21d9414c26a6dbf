"""genesis.generation's sampling helpers against torch references written here (HF transformers' logits
processors), on both devices; the draw's frequencies with a fixed seed; filtered tokens never drawn."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
from genesis import generation as gen


def g(t: torch.Tensor, device: str) -> genesis.Tensor:
    return genesis.tensor(t.numpy(), device=device)


def t_(x: genesis.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x.detach().cpu().numpy()))


def test_temperature(device: str) -> None:
    x = torch.randn(3, 7, dtype=torch.float64)
    torch.testing.assert_close(t_(gen.apply_temperature(g(x, device), 0.7)), x / 0.7)
    with pytest.raises(ValueError, match="strictly positive"):
        gen.apply_temperature(g(x, device), 0.0)


@pytest.mark.parametrize("k", [1, 3, 9])
def test_top_k(device: str, k: int) -> None:
    x = torch.randn(4, 9, dtype=torch.float64)
    want = torch.full_like(x, float("-inf")).scatter(-1, x.topk(k, -1).indices, x.topk(k, -1).values)
    torch.testing.assert_close(t_(gen.top_k_filter(g(x, device), k)), want)
    x[0, 2] = x[0, 5] = x[0].max() + 1  # a tie at the top: exactly k kept (which one is topk's choice)
    kept = torch.isfinite(t_(gen.top_k_filter(g(x, device), k)))
    assert (kept.sum(-1) == min(k, 9)).all() and kept[0, 2] | kept[0, 5]


def ref_top_p(x: torch.Tensor, p: float, keep: int) -> torch.Tensor:
    """HF's TopPLogitsWarper, written out."""
    s, idx = torch.sort(x, descending=False)
    remove = s.softmax(-1).cumsum(-1) <= 1 - p
    remove[..., -keep:] = False
    return x.masked_fill(remove.scatter(1, idx, remove), float("-inf"))


@pytest.mark.parametrize("p,keep", [(0.5, 1), (0.9, 1), (0.1, 3), (1.0, 1)])
def test_top_p(device: str, p: float, keep: int) -> None:
    x = torch.randn(5, 11, dtype=torch.float64) * 2
    torch.testing.assert_close(t_(gen.top_p_filter(g(x, device), p, keep)), ref_top_p(x, p, keep))
    with pytest.raises(ValueError, match="top_p"):
        gen.top_p_filter(g(x, device), 1.5)


def test_repetition_penalty(device: str) -> None:
    x = torch.randn(3, 10, dtype=torch.float64)
    ids = torch.randint(0, 10, (3, 4))
    seen = x.gather(1, ids)
    want = x.scatter(1, ids, torch.where(seen < 0, seen * 1.3, seen / 1.3))
    torch.testing.assert_close(t_(gen.apply_repetition_penalty(g(x, device), g(ids, device), 1.3)), want)
    with pytest.raises(ValueError, match="penalty"):
        gen.apply_repetition_penalty(g(x, device), g(ids, device), -1.0)


def test_greedy_and_frequencies(device: str) -> None:
    x = torch.randn(4, 6, dtype=torch.float64)
    got = gen.sample_next_token(g(x, device), greedy=True)
    assert got.dtype == genesis.int64
    torch.testing.assert_close(t_(got), x.argmax(-1))
    # frequencies: 4000 rows of one distribution, temperature 0.8 and top_k 3 applied first
    logits = torch.tensor([1.0, 0.2, -0.5, 0.7, -2.0], dtype=torch.float64)
    genesis.manual_seed(0)
    rows = g(logits.expand(4000, 5).contiguous(), device)
    draws = t_(gen.sample_next_token(rows, temperature=0.8, top_k=3))
    want = torch.full_like(logits, float("-inf"))
    top = (logits / 0.8).topk(3)
    probs = want.scatter(0, top.indices, top.values).softmax(0)
    freq = torch.bincount(draws, minlength=5).double() / 4000
    assert freq[probs == 0].sum() == 0  # filtered tokens never drawn
    sigma = (probs * (1 - probs) / 4000).sqrt()
    assert ((freq - probs).abs() <= 5 * sigma + 1e-12).all(), (freq, probs)


def test_top_p_sampling_stays_in_nucleus(device: str) -> None:
    logits = torch.tensor([[3.0, 2.5, 0.0, -1.0, -3.0]], dtype=torch.float64).expand(500, 5).contiguous()
    genesis.manual_seed(1)
    draws = t_(gen.sample_next_token(g(logits, device), top_p=0.6))
    allowed = torch.isfinite(ref_top_p(logits[:1], 0.6, 1))[0]
    assert allowed[draws].all() and len(set(draws.tolist())) == int(allowed.sum())
