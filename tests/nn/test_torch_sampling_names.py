"""torch's sampling and creation names (issue #30 item 5, part B 3; issue #29's multinomial): distribution checks
of every sampler with a fixed seed (chi-square against the probabilities, with a bound that a wrong sampler
cannot meet: the same counts are also shown to fail against a wrong distribution), exact properties (no
repeats without replacement, zero-probability categories never drawn), torch's errors, and the factories
against torch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from names_helpers import assert_same

import genesis

N = 20_000  # draws per distribution check
# chi-square bound: for the degrees of freedom below (<= 12), P(chi2 > 45) < 1e-5 under a right sampler,
# while every wrong distribution tried below scores in the hundreds or more.
CHI2_BOUND = 45.0


def chi2(counts: np.ndarray, probs: np.ndarray) -> float:
    """Pearson's statistic of observed ``counts`` against ``probs`` (categories of probability 0 must be empty)."""
    expected = probs * counts.sum()
    seen = expected > 0
    assert counts[~seen].sum() == 0, "a category of probability zero was drawn"
    return float((((counts - expected) ** 2)[seen] / expected[seen]).sum())


def assert_fits(counts: np.ndarray, probs: np.ndarray, wrong: np.ndarray) -> None:
    assert chi2(counts, probs) < CHI2_BOUND
    assert chi2(counts, wrong) > 10 * CHI2_BOUND  # the check has the power to see a wrong distribution


P = np.array([0.1, 0.0, 0.25, 0.05, 0.4, 0.2])
WRONG = np.array([0.2, 0.0, 0.25, 0.05, 0.3, 0.2])  # a tenth of the mass moved between two categories


def test_multinomial_with_replacement_frequencies(device):
    genesis.manual_seed(0)
    p = genesis.tensor(P * 3.0, device=device)  # unnormalised weights
    draws = genesis.multinomial(p, N, replacement=True).cpu().numpy()
    assert draws.shape == (N,) and draws.dtype == np.int64
    assert_fits(np.bincount(draws, minlength=len(P)), P, WRONG)


def test_multinomial_batched_rows(device):
    genesis.manual_seed(1)
    rows = np.stack([P, P[::-1], np.full(6, 1 / 6)])
    draws = genesis.tensor(rows, dtype=genesis.float32, device=device).multinomial(N, True).cpu().numpy()
    assert draws.shape == (3, N)
    wrongs = [WRONG, WRONG[::-1], np.array([0.1, 0.2, 0.2, 0.1, 0.2, 0.2])]
    for row, got, wrong in zip(rows, draws, wrongs):
        assert_fits(np.bincount(got, minlength=6), row, wrong)


def test_multinomial_without_replacement(device):
    genesis.manual_seed(2)
    p = genesis.tensor(np.tile(P, (N, 1)), device=device)
    draws = p.multinomial(4).cpu().numpy()  # 4 of the 5 categories of nonzero probability, per row
    assert draws.shape == (N, 4)
    assert all(len(set(r)) == 4 for r in draws), "a row repeated a category"
    assert not (draws == 1).any(), "the category of probability zero was drawn"
    first = np.bincount(draws[:, 0], minlength=6)  # the first draw follows the probabilities
    assert_fits(first, P, WRONG)
    # every category of a row, once each: the zero-probability one comes last (as torch)
    full = genesis.tensor([[0.5, 0.0, 0.5]], device=device).multinomial(3).cpu().numpy()
    assert sorted(full[0]) == [0, 1, 2] and full[0, 2] == 1


def test_multinomial_generator_reproduces_and_is_separate():
    p = genesis.tensor(P)
    a = genesis.multinomial(p, 50, True, generator=genesis.Generator().manual_seed(7))
    genesis.rand(10)  # the global stream moves; the generator's does not depend on it
    b = p.multinomial(50, True, generator=genesis.Generator().manual_seed(7))
    assert a.tolist() == b.tolist()
    if genesis.cuda.is_available():
        with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
            genesis.multinomial(p.cuda(), 2, generator=genesis.Generator())


ERRORS = {
    "negative": (lambda m: m.multinomial(m.tensor([0.2, -0.1]), 1), "contains either `inf`, `nan` or element < 0"),
    "nan": (lambda m: m.multinomial(m.tensor([0.2, float("nan")]), 1), "contains either `inf`, `nan`"),
    "inf": (lambda m: m.multinomial(m.tensor([0.2, float("inf")]), 1, True), "contains either `inf`, `nan`"),
    "zero_sum": (lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1), r"invalid multinomial distribution \(sum of"),
    "too_many": (lambda m: m.multinomial(m.tensor([0.5, 0.5]), 3), "cannot sample n_sample > prob_dist.size"),
    "zero_samples": (lambda m: m.multinomial(m.tensor([0.5, 0.5]), 0), "cannot sample n_sample <= 0 samples"),
    "3d": (lambda m: m.multinomial(m.ones(2, 2, 2), 1), "prob_dist must be 1 or 2 dim"),
    "integer": (
        lambda m: m.multinomial(m.tensor([1, 2]), 1),
        "only supports floating-point dtypes for input, got: Long",
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_multinomial_errors_match_torch(name):
    op, match = ERRORS[name]
    for m in (torch, genesis):
        with pytest.raises(RuntimeError, match=match):
            op(m)


def test_poisson(device):
    genesis.manual_seed(3)
    rates = genesis.tensor([4.0] * N, device=device)
    small = genesis.poisson(rates).cpu().numpy().astype(np.int64)
    k = np.arange(13)
    probs = np.exp(-4.0) * 4.0**k / np.array([math.factorial(int(i)) for i in k])
    probs[-1] = 1 - probs[:-1].sum()  # the tail folded into the last bin
    counts = np.bincount(np.minimum(small, 12), minlength=13)
    wrong = np.exp(-4.4) * 4.4**k / np.array([math.factorial(int(i)) for i in k])
    wrong[-1] = 1 - wrong[:-1].sum()
    assert_fits(counts, probs, wrong)
    for lam in (30.0, 300.0):  # the rejection sampler: mean and variance within 5 standard errors
        got = genesis.poisson(genesis.full((N,), lam, dtype=genesis.float64, device=device)).cpu().numpy()
        assert np.all(got == np.round(got)) and got.min() >= 0
        assert abs(got.mean() - lam) < 5 * math.sqrt(lam / N)
        assert abs(got.var() / lam - 1) < 5 * math.sqrt(2 / N)
    zero = genesis.poisson(genesis.zeros(5, device=device))
    assert zero.tolist() == [0.0] * 5


def test_binomial(device):
    genesis.manual_seed(4)
    count, prob = genesis.full((N,), 10.0, device=device), genesis.full((N,), 0.3, device=device)
    draws = genesis.binomial(count, prob).cpu().numpy().astype(np.int64)
    k = np.arange(11)
    pmf = np.array([math.comb(10, int(i)) * 0.3**i * 0.7 ** (10 - i) for i in k])
    wrong = np.array([math.comb(10, int(i)) * 0.35**i * 0.65 ** (10 - i) for i in k])
    assert_fits(np.bincount(draws, minlength=11), pmf, wrong)
    for n, p in ((1000.0, 0.4), (500.0, 0.9), (40.0, 0.5)):  # BTRS, the flipped side, near the switch
        got = genesis.binomial(genesis.full((N,), n, device=device), genesis.full((N,), p, device=device))
        got = got.cpu().numpy()
        mean, var = n * p, n * p * (1 - p)
        assert got.min() >= 0 and got.max() <= n and np.all(got == np.round(got))
        assert abs(got.mean() - mean) < 5 * math.sqrt(var / N)
        assert abs(got.var() / var - 1) < 5 * math.sqrt(2 / N)
    edge = genesis.binomial(
        genesis.tensor([5.0, 5.0, 0.0], device=device), genesis.tensor([0.0, 1.0, 0.5], device=device)
    )
    assert edge.tolist() == [0.0, 5.0, 0.0]
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count"):
        genesis.binomial(genesis.tensor([5], device=device), genesis.tensor([0.5], device=device))


def test_cauchy_log_normal_geometric(device):
    genesis.manual_seed(5)
    c = genesis.empty(N, device=device).cauchy_(2.0, 3.0).cpu().numpy()
    # the quantiles of Cauchy(2, 3): P(x < 2) = 1/2, P(x < 5) = 3/4, P(x < -1) = 1/4
    for edge, share in ((2.0, 0.5), (5.0, 0.75), (-1.0, 0.25)):
        assert abs((c < edge).mean() - share) < 5 * math.sqrt(share * (1 - share) / N)
    ln = genesis.empty(N, dtype=genesis.float64, device=device).log_normal_(0.5, 0.25).cpu().numpy()
    assert ln.min() > 0
    assert abs(np.log(ln).mean() - 0.5) < 5 * 0.25 / math.sqrt(N)
    assert abs(np.log(ln).std() / 0.25 - 1) < 5 * math.sqrt(0.5 / N)
    g = genesis.empty(N, dtype=genesis.int64, device=device).geometric_(0.3).cpu().numpy()
    assert g.min() >= 1
    k = np.arange(1, 13)
    probs = np.append(0.7 ** (k[:-1] - 1) * 0.3, 0.7 ** (k[-1] - 1))  # the tail folded into the last bin
    wrong = np.append(0.65 ** (k[:-1] - 1) * 0.35, 0.65 ** (k[-1] - 1))
    assert_fits(np.bincount(np.minimum(g, 12), minlength=13)[1:], probs, wrong)


FILL_ERRORS = {
    "cauchy_sigma": (lambda m: m.zeros(2).cauchy_(sigma=0), RuntimeError, "cauchy_ expects sigma > 0.0"),
    "cauchy_int": (lambda m: m.tensor([1, 2]).cauchy_(), RuntimeError, "dtype must be a floating point"),
    "log_normal_std": (lambda m: m.zeros(2).log_normal_(std=0), RuntimeError, "log_normal_ expects std > 0.0"),
    "log_normal_int": (lambda m: m.tensor([1, 2]).log_normal_(), NotImplementedError, "not implemented for 'Long'"),
    "geometric_p1": (lambda m: m.zeros(2).geometric_(1.0), RuntimeError, r"geometric_ expects p to be in \(0, 1\)"),
    "geometric_p0": (lambda m: m.zeros(2).geometric_(0), RuntimeError, r"geometric_ expects p to be in \(0, 1\)"),
    "poisson_negative": (lambda m: m.poisson(m.tensor([-1.0])), RuntimeError, "invalid Poisson rate"),
}


@pytest.mark.parametrize("name", list(FILL_ERRORS))
def test_fill_errors_match_torch(name):
    op, cls, match = FILL_ERRORS[name]
    for m in (torch, genesis):
        with pytest.raises(cls, match=match):
            op(m)


def test_draws_pass_zero_gradients_and_fills_record_like_fill(device):
    rate = genesis.tensor([2.0, 5.0], device=device, requires_grad=True)
    genesis.poisson(rate).sum().backward()
    assert rate.grad.tolist() == [0.0, 0.0]
    w = genesis.tensor([1.0, 2.0], device=device, requires_grad=True)
    out = w * 1.0
    out.cauchy_()
    out.sum().backward()
    assert w.grad.tolist() == [0.0, 0.0]


def test_factories_match_torch(device):
    for args, kwargs in (((0, 2, 5), {}), ((-1, 1, 4), {"base": 2.0}), ((0, 3, 4), {"base": 2, "dtype": "int64"})):
        t_kwargs = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
        assert_same(genesis.logspace(*args, **kwargs, device=device), torch.logspace(*args, **t_kwargs), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in ((1, 4), (0, 1, 0.25), (5, 1, -2), (2.5, 7)):
            assert_same(genesis.range(*args, device=device), torch.range(*args))
        assert_same(genesis.range(0, 3, dtype=genesis.int64), torch.range(0, 3, dtype=torch.int64))
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        genesis.range(0, 1)
    assert_same(genesis.scalar_tensor(3, device=device), torch.scalar_tensor(3))
    assert_same(genesis.scalar_tensor(True, dtype=genesis.bool), torch.scalar_tensor(True, dtype=torch.bool))
    e = genesis.empty_strided((2, 3), (1, 2), device=device)
    assert e.shape == (2, 3) and e.stride() == torch.empty_strided((2, 3), (1, 2)).stride()
    for layout in ((0, 2, 3, 1), (3, 2, 1, 0), (0, 1, 2, 3)):
        got = genesis.empty_permuted((2, 3, 4, 5), layout, device=device)
        want = torch.empty_permuted((2, 3, 4, 5), layout)
        assert got.shape == want.shape and got.stride() == want.stride()
    r = genesis.randint_like(genesis.zeros(3, 4, dtype=genesis.int32, device=device), 2, 6)
    assert r.dtype == genesis.int32 and r.shape == (3, 4) and 2 <= r.min().item() and r.max().item() < 6


def test_asarray_and_frombuffer():
    a = np.arange(6, dtype=np.float32)
    shared = genesis.asarray(a)
    a[0] = 9
    assert shared[0].item() == 9  # a numpy array's memory is shared
    copied = genesis.asarray(a, copy=True)
    a[1] = 7
    assert copied[1].item() == 1
    t = genesis.tensor([1.0, 2.0])
    assert genesis.asarray(t) is t
    assert genesis.asarray(t, dtype=genesis.float64).dtype == genesis.float64
    with pytest.raises(ValueError):
        genesis.asarray(t, dtype=genesis.float64, copy=False)
    assert_same(genesis.asarray([[1, 2], [3, 4]]), torch.asarray([[1, 2], [3, 4]]))
    buf = bytearray(np.arange(5, dtype=np.int32).tobytes())
    got = genesis.frombuffer(buf, dtype=genesis.int32, count=3, offset=4)
    assert_same(got, torch.frombuffer(bytearray(buf), dtype=torch.int32, count=3, offset=4))
    buf[4] = 42
    assert got[0].item() == 42  # the buffer's memory is shared
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        genesis.frombuffer(bytearray(6), dtype=genesis.int32)
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        torch.frombuffer(bytearray(6), dtype=torch.int32)
