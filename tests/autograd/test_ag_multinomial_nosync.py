"""multinomial without host waits (issue #29): its frequencies against torch's sampler, with and without
replacement; generator reproducibility; on cuda no draw synchronises (sync debug mode "error"), indexing by
the drawn tokens needs no bounds wait either, and a draw captured in a CUDA graph replays valid, varying
samples; invalid probabilities raise torch's RuntimeError, eagerly on the cpu, on cuda at the next host
read-back (or the graph's next replay), and an invalid row's indices still lie in [0, k)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import genesis
from device_support import requires_cuda
from genesis.generation import sample_next_token

P = np.array([0.15, 0.0, 0.3, 0.05, 0.35, 0.15])
BAD_VALUE = r"probability tensor contains either `inf`, `nan` or element < 0"
CUDA_ONLY = pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])


@pytest.fixture(autouse=True)
def _restore_mode():
    yield
    genesis.cuda.set_sync_debug_mode(0)


def _freq(draws: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(draws.reshape(-1), minlength=k) / draws.size


def _assert_same_frequencies(ours: np.ndarray, theirs: np.ndarray, n: int) -> None:
    """Two samplers of one distribution: per category, the frequencies differ by < 5 standard errors of the
    difference (and a category torch never draws, we never draw)."""
    p = (ours + theirs) / 2
    sigma = np.sqrt(2 * p * (1 - p) / n)
    assert np.all(np.abs(ours - theirs) <= 5 * sigma + 1e-12), (ours, theirs)
    assert np.all(ours[theirs == 0] == 0)


@pytest.mark.parametrize("rows", [1, 2])
def test_with_replacement_frequencies_match_torch(device, rows):
    n = 6000
    weights = np.stack([P * 3.0, P[::-1] * 0.5])[:rows]  # unnormalised, one zero category per row
    genesis.manual_seed(11)
    p = genesis.tensor(weights[0] if rows == 1 else weights, device=device)
    ours = genesis.multinomial(p, n, replacement=True).cpu().numpy().reshape(rows, n)
    theirs = torch.multinomial(torch.tensor(weights), n, True, generator=torch.Generator().manual_seed(11)).numpy()
    assert ours.dtype == np.int64
    for r in range(rows):
        _assert_same_frequencies(_freq(ours[r], 6), _freq(theirs[r], 6), n)
        assert abs(_freq(ours[r], 6) - weights[r] / weights[r].sum()).max() < 0.03  # the distribution itself


def test_without_replacement_frequencies_match_torch(device):
    n = 3000
    weights = np.tile(P, (n, 1))
    genesis.manual_seed(12)
    ours = genesis.tensor(weights, device=device).multinomial(3).cpu().numpy()
    theirs = torch.tensor(weights).multinomial(3, generator=torch.Generator().manual_seed(12)).numpy()
    assert ours.shape == (n, 3)
    assert all(len(set(r)) == 3 for r in ours), "a row repeated a category"
    for j in range(3):  # each position's marginal: the first follows P, the later ones the race's law
        _assert_same_frequencies(_freq(ours[:, j], 6), _freq(theirs[:, j], 6), n)


def test_generator_reproduces_on_cpu_and_is_refused_on_cuda(device):
    p = genesis.tensor(P, device=device)
    if device == "cpu":
        draw = [p.multinomial(20, True, generator=genesis.Generator().manual_seed(s)).tolist() for s in (5, 5, 6)]
        assert draw[0] == draw[1] and draw[0] != draw[2]
        genesis.manual_seed(3)
        want = genesis.rand(4).tolist()
        genesis.manual_seed(3)
        p.multinomial(4, generator=genesis.Generator().manual_seed(5))  # the global stream does not move
        assert genesis.rand(4).tolist() == want
    else:
        with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found 'cpu'"):
            p.multinomial(2, generator=genesis.Generator())
    genesis.manual_seed(9)
    a = p.multinomial(30, True).tolist()
    genesis.manual_seed(9)
    assert p.multinomial(30, True).tolist() == a


@CUDA_ONLY
def test_draws_never_synchronise(device):
    genesis.manual_seed(0)
    probs = genesis.tensor(np.stack([P, P[::-1]]), dtype=genesis.float32, device=device)
    table = genesis.randn(6, 4, device=device)
    logits = genesis.randn(3, 50, device=device)
    genesis.cuda.set_sync_debug_mode("error")
    draws = [
        probs.multinomial(1),
        probs.multinomial(4),
        probs.multinomial(7, True),
        probs[0].multinomial(3, True),
        probs[1].multinomial(5),
        sample_next_token(logits, temperature=0.7, top_k=10, top_p=0.9),
        sample_next_token(logits),
    ]
    picked = table.index_select(0, draws[2].reshape(-1))  # drawn tokens: their range is known, no bounds wait
    embedded = genesis.nn.functional.embedding(draws[1], table)
    genesis.cuda.set_sync_debug_mode(0)
    assert picked.shape == (14, 4) and embedded.shape == (2, 4, 4)
    zero = np.array([[1], [4]])  # each row's category of probability zero
    for d, never in zip(draws[:5], (zero, zero, zero, zero[0], zero[1])):
        values = d.cpu().numpy()
        assert values.min() >= 0 and values.max() < 6 and not (values == never).any()
    assert draws[5].shape == (3,) and 0 <= draws[5].cpu().numpy().min() and draws[5].cpu().numpy().max() < 50


def _capture(fn):
    """``fn()`` captured in a CUDA graph after an eager warm-up: (graph, output). Skips where the device
    refuses capture (tools/host_gpu's fake GPU)."""
    fn()
    genesis.cuda.synchronize()
    graph = genesis.cuda.CUDAGraph()
    try:
        with genesis.cuda.graph(graph):
            out = fn()
    except RuntimeError as err:
        if "NOT_SUPPORTED" in str(err):
            pytest.skip("this device refuses CUDA-graph capture (the fake GPU)")
        raise
    return graph, out


@CUDA_ONLY
@pytest.mark.parametrize("replacement", [False, True])
def test_captured_draw_replays_valid_varying_samples(device, replacement):
    probs = genesis.tensor(np.tile(P, (4, 1)), dtype=genesis.float32, device=device)
    graph, out = _capture(lambda: probs.multinomial(3, replacement))
    seen = []
    for _ in range(12):
        graph.replay()
        genesis.cuda.synchronize()
        seen.append(out.cpu().numpy())
    draws = np.stack(seen)
    assert draws.min() >= 0 and draws.max() < 6 and not (draws == 1).any()
    assert len({d.tobytes() for d in draws}) > 1, "every replay drew the same samples"
    if not replacement:
        assert all(len(set(r)) == 3 for r in draws.reshape(-1, 3))


@CUDA_ONLY
def test_captured_invalid_probabilities_raise_at_replay(device):
    probs = genesis.tensor(np.tile(P, (3, 1)), dtype=genesis.float32, device=device)
    graph, out = _capture(lambda: probs.multinomial(2, True))
    graph.replay()
    genesis.cuda.synchronize()
    probs.copy_(genesis.tensor([[0.2, 0.3, 0.5, 0.0, 0.0, 0.0], [0.1, float("nan"), 1.0, 1.0, 1.0, 1.0], P.tolist()],
                               dtype=genesis.float32, device=device))  # fmt: skip
    graph.replay()
    genesis.cuda.synchronize()
    values = out.cpu().numpy()  # a graph's flag reports at its replay, not at this read
    assert values.min() >= 0 and values.max() < 6  # the invalid row drew in range (as uniform)
    # Two samples with replacement: torch's message names the first invalid row's kind (a NaN fails its
    # "entry >= 0" test, as on torch's own path).
    expected = re.escape(_torch_message([[0.1, float("nan"), 1.0, 1.0, 1.0, 1.0]], 2, True))
    with pytest.raises(RuntimeError, match=expected + ".*in a replay of a CUDA graph that captured multinomial"):
        graph.replay()
    genesis.cuda.synchronize()
    graph.replay()  # the flag was cleared; the replay before this one met the same row, so it reports again
    genesis.cuda.synchronize()
    with pytest.raises(RuntimeError, match=expected):
        graph.replay()


NAN, INF = float("nan"), float("inf")
INVALID = {
    "negative": [[0.2, 0.3, 0.5], [0.4, -0.1, 0.7]],
    "nan": [[0.2, NAN, 0.5], [0.4, 0.1, 0.7]],
    "inf": [[0.2, 0.3, 0.5], [INF, 0.1, 0.7]],
    "minus_inf": [[0.2, 0.3, 0.5], [0.3, -INF, 0.7]],
    "inf_before_negative": [[INF, -1.0, 0.5], [0.4, 0.1, 0.7]],
    "zero_sum": [[0.0, 0.0, 0.0], [0.4, 0.1, 0.7]],
    "zero_sum_before_negative": [[0.0, 0.0, 0.0], [0.4, -0.1, 0.7]],
}


def _torch_message(rows: list, n: int, replacement: bool) -> str:
    """torch's message for this draw (its up-front check, or its with-replacement kernel's for n > 1)."""
    with pytest.raises(RuntimeError) as caught:
        torch.multinomial(torch.tensor(rows), n, replacement)
    return str(caught.value)


@pytest.mark.parametrize("n,replacement", [(2, False), (1, True), (3, True)])
@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_probabilities_raise_torchs_error(device, case, n, replacement):
    rows = INVALID[case]
    p = genesis.tensor(rows, device=device)
    # cpu: at the call; cuda: at the next host read-back at the latest (the draw itself never waits)
    with pytest.raises(RuntimeError, match=re.escape(_torch_message(rows, n, replacement)) + "$"):
        p.multinomial(n, replacement).tolist()
    bad = next(r for r in rows if not (np.all(np.array(r) >= 0) and np.isfinite(r).all() and sum(r) > 0))
    with pytest.raises(RuntimeError, match=re.escape(_torch_message([bad], n, replacement)) + "$"):
        genesis.multinomial(genesis.tensor(bad, device=device), n, replacement).cpu()
    assert genesis.multinomial(genesis.tensor([0.2, 0.8], device=device), 3, True).max().item() <= 1  # reported once
