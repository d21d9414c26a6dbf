"""Random numbers on every device: rand / randn / randint, the in-place random fills, randperm, dropout
and the generators' state (seeds replay draws; distributions checked statistically)."""

from __future__ import annotations

import math

import pytest
import torch
from nd_helpers import assert_same, from_torch, raises_like, random_tensor, to_torch

import genesis_ndarray as nd

F32, F64, F16, I64 = torch.float32, torch.float64, torch.float16, torch.int64


# ---------------------------------------------------------------- factories
@pytest.mark.parametrize("dtype", [nd.float32, nd.float16, nd.bfloat16, nd.float64], ids=lambda d: d.name)
def test_rand_randn_distribution_and_seed(device, dtype):
    nd.manual_seed(123)
    u = to_torch(nd.rand(4000, dtype=dtype, device=device)).double()
    n = to_torch(nd.randn(4000, dtype=dtype, device=device)).double()
    assert u.min() >= 0 and u.max() <= 1
    assert abs(u.mean() - 0.5) < 0.03 and abs(u.std() - (1 / 12) ** 0.5) < 0.03
    assert abs(n.mean()) < 0.08 and abs(n.std() - 1) < 0.08
    nd.manual_seed(123)
    torch.testing.assert_close(to_torch(nd.rand(4000, dtype=dtype, device=device)).double(), u, rtol=0, atol=0)
    assert not torch.equal(to_torch(nd.rand(4000, dtype=dtype, device=device)).double(), u)


def test_randint(device):
    nd.manual_seed(7)
    r = nd.randint(-3, 5, (2000,), device=device)
    assert r.dtype is nd.int64 and r.shape == (2000,)
    t = to_torch(r)
    assert t.min() == -3 and t.max() == 4
    assert set(t.tolist()) == set(range(-3, 5))
    assert nd.randint(4, size=(3,), dtype=nd.int32, device=device).dtype is nd.int32
    with pytest.raises(RuntimeError, match="from"):
        nd.randint(5, 5, (2,), device=device)


def test_random_needs_floating_dtype(device):
    with pytest.raises(TypeError, match="int32"):
        nd.randn(3, dtype=nd.int32, device=device)


# ---------------------------------------------------------------- random fills
N = 200_000  # draws for the distribution checks; bounds are 6 standard errors (a false alarm ~ 2e-9)


def _fresh_seed() -> int:
    return nd.seed()


FILLS = [
    ("uniform_", lambda a: a.uniform_(-2.0, 3.0), F32),
    ("normal_", lambda a: a.normal_(1.5, 0.5), F32),
    ("normal_-f64", lambda a: a.normal_(), F64),
    ("exponential_", lambda a: a.exponential_(2.0), F32),
    ("bernoulli_", lambda a: a.bernoulli_(0.3), F32),
    ("bernoulli_-int", lambda a: a.bernoulli_(0.7), I64),
    ("random_", lambda a: a.random_(-5, 9), I64),
    ("random_-to", lambda a: a.random_(7), F32),
    ("random_-full", lambda a: a.random_(), torch.int8),
]


@pytest.mark.parametrize("fill,dtype", [(f, d) for _, f, d in FILLS], ids=[n for n, _, _ in FILLS])
def test_random_fill_reproducible_from_seed_and_state(device, fill, dtype):
    seed = _fresh_seed()
    a = nd.empty(64, 33, dtype=dtype, device=device)
    first = to_torch(fill(a))
    nd.manual_seed(seed)
    assert torch.equal(to_torch(fill(nd.empty(64, 33, dtype=dtype, device=device))), first), seed
    state = nd.get_rng_state(device)
    second = to_torch(fill(a))
    assert not torch.equal(second, first)  # the generator moved on
    nd.set_rng_state(state, device)
    assert torch.equal(to_torch(fill(a)), second), seed


def test_random_fills_write_only_their_view(device):
    nd.seed()
    base = nd.zeros(6, 8, device=device)
    view = base[:, ::2].T  # (4, 6), strides (2, 8)
    assert view.uniform_(2.0, 3.0) is view
    got = to_torch(base)
    assert (got[:, 1::2] == 0).all()
    assert ((got[:, ::2] >= 2.0) & (got[:, ::2] < 3.0)).all()
    assert len(set(got[:, ::2].flatten().tolist())) == 24  # distinct draws


def _moments(t: torch.Tensor) -> tuple[float, float]:
    t = t.double()
    return t.mean().item(), t.std().item()


def test_uniform_distribution(device):
    seed = _fresh_seed()
    lo, hi = -2.0, 3.0
    got = to_torch(nd.empty(N, device=device).uniform_(lo, hi))
    assert got.min() >= lo and got.max() < hi, seed
    mean, std = _moments(got)
    width = hi - lo
    assert abs(mean - (lo + hi) / 2) < 6 * width / math.sqrt(12 * N), (seed, mean)
    # sample std of a uniform: var(s^2) = (mu4 - sigma^4) / N = width^4 / (180 N), so se(s) = width / sqrt(60 N)
    assert abs(std - width / math.sqrt(12)) < 6 * width / math.sqrt(60 * N), (seed, std)


@pytest.mark.parametrize("dtype", [F32, F64, F16])
def test_normal_distribution(device, dtype):
    seed = _fresh_seed()
    mu, sigma = -1.25, 2.5
    got = to_torch(nd.empty(N, dtype=dtype, device=device).normal_(mu, sigma))
    assert got.dtype == dtype
    mean, std = _moments(got)
    assert abs(mean - mu) < 6 * sigma / math.sqrt(N), (seed, mean)
    assert abs(std - sigma) < 6 * sigma / math.sqrt(2 * N), (seed, std)


def test_exponential_distribution(device):
    seed = _fresh_seed()
    lambd = 4.0
    got = to_torch(nd.empty(N, dtype=F64, device=device).exponential_(lambd))
    assert (got >= 0).all(), seed
    mean, std = _moments(got)
    assert abs(mean - 1 / lambd) < 6 / lambd / math.sqrt(N), (seed, mean)
    # sample std of an exponential: standard error ~ sqrt(2) * std / sqrt(N) (kurtosis 9)
    assert abs(std - 1 / lambd) < 6 * math.sqrt(2) / lambd / math.sqrt(N), (seed, std)


@pytest.mark.parametrize("p", [0.0, 0.05, 0.5, 1.0])
def test_bernoulli_scalar_rate(device, p):
    seed = _fresh_seed()
    got = to_torch(nd.empty(N, dtype=F32, device=device).bernoulli_(p))
    assert set(got.unique().tolist()) <= {0.0, 1.0}
    rate = got.double().mean().item()
    assert abs(rate - p) <= 6 * math.sqrt(p * (1 - p) / N), (seed, rate)


def test_bernoulli_with_probability_array(device):
    seed = _fresh_seed()
    probs_t = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0], dtype=F64)
    rows = N // 5
    probs = from_torch(probs_t, device)
    got = to_torch(nd.empty(rows, 5, dtype=F32, device=device).bernoulli_(probs))  # broadcast over rows
    rate = got.double().mean(0)
    bound = 6 * torch.sqrt(probs_t * (1 - probs_t) / rows)
    assert ((rate - probs_t).abs() <= bound).all(), (seed, rate)
    drawn = to_torch(nd.bernoulli(from_torch(probs_t.expand(rows, 5).contiguous(), device)))
    assert drawn.dtype == F64 and tuple(drawn.shape) == (rows, 5)
    assert ((drawn.mean(0) - probs_t).abs() <= bound).all(), seed


def test_random_integers_cover_their_range(device):
    seed = _fresh_seed()
    got = to_torch(nd.empty(N, dtype=I64, device=device).random_(-3, 4))
    assert got.dtype == I64
    counts = torch.bincount(got + 3, minlength=7)
    assert counts.numel() == 7, seed  # nothing outside [-3, 4)
    p = 1 / 7
    assert ((counts / N - p).abs() <= 6 * math.sqrt(p * (1 - p) / N)).all(), (seed, counts)
    small = to_torch(nd.empty(N, dtype=torch.uint8, device=device).random_())
    assert small.min() == 0 and small.max() == 255, seed
    floats = to_torch(nd.empty(1000, dtype=F16, device=device).random_(10))
    assert (floats == floats.round()).all() and floats.min() >= 0 and floats.max() <= 9


@pytest.mark.parametrize("n,dtype", [(1, I64), (10, I64), (5000, I64), (300, torch.int32), (100, F32)])
def test_randperm_is_a_permutation(device, n, dtype):
    seed = _fresh_seed()
    p = nd.randperm(n, dtype=dtype, device=device)
    assert p.shape == (n,) and p.dtype.torch == dtype
    got = to_torch(p)
    assert torch.equal(got.sort().values, torch.arange(n, dtype=dtype)), seed
    if n >= 100:
        assert not torch.equal(got, torch.arange(n, dtype=dtype)), seed
    nd.manual_seed(seed)
    assert torch.equal(to_torch(nd.randperm(n, dtype=dtype, device=device)), got)


def test_randperm_positions_are_uniform(device):
    seed = _fresh_seed()
    n, trials = 8, 2000
    firsts = torch.stack([to_torch(nd.randperm(n, device=device))[:2] for _ in range(trials)])
    counts = torch.bincount(firsts[:, 0], minlength=n).double()
    p = 1 / n
    assert ((counts / trials - p).abs() <= 6 * math.sqrt(p * (1 - p) / trials)).all(), (seed, counts)
    assert (firsts[:, 0] != firsts[:, 1]).all()


def test_cpu_generator_matches_torch():
    seed = _fresh_seed()
    gen = torch.Generator().manual_seed(seed)
    nd.manual_seed(seed)
    a = nd.empty(5, 7)
    assert torch.equal(to_torch(a.uniform_(-1, 2)), torch.empty(5, 7).uniform_(-1, 2, generator=gen))
    assert torch.equal(to_torch(a.normal_(3, 2)), torch.empty(5, 7).normal_(3, 2, generator=gen))
    assert torch.equal(to_torch(nd.randperm(50)), torch.randperm(50, generator=gen))
    assert nd.initial_seed() == seed


def test_seed_and_initial_seed(device):
    s = nd.seed()
    assert nd.initial_seed() == s == nd.initial_seed(device)
    first = to_torch(nd.rand(10, device=device))
    nd.manual_seed(s)
    assert torch.equal(to_torch(nd.rand(10, device=device)), first)
    nd.manual_seed(1234)
    assert nd.initial_seed(device) == 1234
    state = nd.get_rng_state(device)
    assert state.dtype is nd.uint8 and state.device.type == "cpu"
    if device == "cuda":  # torch's layout of a CUDA generator state: seed and offset, 8 bytes each
        assert state.shape == (16,)


# (call on an array of `dtype`, error type, pattern): torch raises the same class for each.
BAD_RANDOM = [
    (lambda a: a.uniform_(2, 1), F32, RuntimeError, r"expects to return a \[from, to\) range"),
    (lambda a: a.normal_(0, -1), F32, RuntimeError, "normal expects std >= 0.0"),
    (lambda a: a.bernoulli_(1.5), F32, RuntimeError, "bernoulli_ expects p to be in"),
    (lambda a: a.bernoulli_(-0.1), F32, RuntimeError, "bernoulli_ expects p to be in"),
    (lambda a: a.exponential_(0), F32, RuntimeError, "exponential_ expects lambda > 0.0"),
    (lambda a: a.exponential_(-1), F32, RuntimeError, "exponential_ expects lambda > 0.0"),
    (lambda a: a.random_(5, 2), F32, RuntimeError, "random_ expects 'from' to be less than 'to'"),
    (lambda a: a.uniform_(), I64, NotImplementedError, "uniform_"),
    (lambda a: a.normal_(), I64, NotImplementedError, "normal_"),
]


@pytest.mark.parametrize("call,dtype,error,pattern", BAD_RANDOM, ids=[str(i) for i in range(len(BAD_RANDOM))])
def test_bad_random_arguments_raise_torch_errors(device, call, dtype, error, pattern):
    with pytest.raises(error):
        call(torch.zeros(3, dtype=dtype))
    with pytest.raises(error, match=pattern):
        call(nd.zeros(3, dtype=dtype, device=device))


def test_bad_randperm_and_state_arguments(device):
    with pytest.raises(RuntimeError):
        torch.randperm(-1)
    with pytest.raises(RuntimeError, match="negative dimension"):
        nd.randperm(-1, device=device)
    with pytest.raises(RuntimeError, match="2049"):
        nd.randperm(3000, dtype="float16", device=device)
    with pytest.raises(RuntimeError):
        torch.bernoulli(torch.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match=r"in \[0, 1\]"):
        nd.bernoulli(nd.array([0.5, 1.5], device=device))
    with pytest.raises(TypeError, match="uint8"):
        nd.set_rng_state([1, 2], device)


def test_random_fill_of_an_empty_array_draws_nothing(device):
    nd.seed()
    state = nd.get_rng_state(device)
    nd.empty(0, 3, device=device).uniform_()
    assert torch.equal(to_torch(nd.get_rng_state(device)), to_torch(state))
    assert_same(nd.randperm(0, device=device), torch.randperm(0))


# ---------------------------------------------------------------- dropout
@pytest.mark.parametrize("p", [0.0, 0.3, 0.75, 1.0])
@pytest.mark.parametrize("dtype", [F32, F64, torch.bfloat16])
def test_dropout_is_native_dropout(device, p, dtype):
    """(x * mask * scale, bool mask) as torch.native_dropout; the mask keeps about 1 - p of the elements and a
    seed replays it."""
    t = random_tensor((200, 100), dtype)
    x = from_torch(t, device)
    nd.manual_seed(5)
    out, mask = x.dropout(p)
    assert mask.dtype is nd.bool_ and out.dtype is x.dtype and out.shape == mask.shape == x.shape
    m = to_torch(mask)
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    assert_same(out, torch.ops.aten.native_dropout_backward(t, m, scale))  # torch's formula, given the mask
    kept = m.double().mean().item()
    assert abs(kept - (1 - p)) <= 6 * math.sqrt(p * (1 - p) / m.numel())  # exact for p = 0 and p = 1
    nd.manual_seed(5)
    out2, mask2 = x.dropout(p)
    assert torch.equal(to_torch(mask2), m) and torch.equal(to_torch(out2), to_torch(out))
    assert not torch.equal(to_torch(x.dropout(0.5)[1]), to_torch(x.dropout(0.5)[1]))  # the generator moves on


def test_cpu_dropout_replays_torch_native_dropout():
    """The cpu backend draws exactly as torch.native_dropout does under the same seed."""
    t = random_tensor((50, 20))
    nd.manual_seed(11)
    out, mask = nd.from_torch(t).dropout(0.4)
    with torch.random.fork_rng():
        torch.manual_seed(11)
        expected_out, expected_mask = torch.native_dropout(t, 0.4, True)
    assert torch.equal(mask.native, expected_mask)
    assert torch.equal(out.native, expected_out)


def test_dropout_keeps_nan_and_inf_like_torch(device):
    """x * mask * scale: a dropped inf or NaN becomes NaN (0 * inf), as torch's, not 0."""
    t = torch.tensor([float("inf"), float("nan"), -float("inf"), 1.0] * 64)
    out, mask = from_torch(t, device).dropout(0.5)
    assert_same(out, torch.ops.aten.native_dropout_backward(t, to_torch(mask), 2.0))


def test_dropout_outside_training_is_a_copy(device):
    t = random_tensor((4, 6))
    x = from_torch(t, device)
    out, mask = x.dropout(0.9, train=False)
    expected_out, expected_mask = torch.native_dropout(t, 0.9, False)
    assert_same(out, expected_out)
    assert_same(mask, expected_mask)
    assert out.data_ptr() != x.data_ptr()
    empty, empty_mask = from_torch(torch.empty(0, 3), device).dropout(0.5)
    assert empty.shape == empty_mask.shape == (0, 3)


BAD_DROPOUT = [("p_above_one", 1.5, F32), ("p_negative", -0.1, F32), ("integers", 0.5, I64)]


@pytest.mark.parametrize("p,dtype", [c[1:] for c in BAD_DROPOUT], ids=[c[0] for c in BAD_DROPOUT])
def test_bad_dropout_arguments_raise_torch_errors(device, p, dtype):
    t = random_tensor((3, 4), dtype)
    raises_like(
        lambda: torch.native_dropout(t, p, True),
        lambda: from_torch(t, device).dropout(p),
        "expects p to be in|can't be cast",
    )


@pytest.mark.parametrize("dtype", [F32, F64, torch.bfloat16])
@pytest.mark.parametrize("scale", [0.0, 1.0, 2.5])
def test_dropout_backward_is_native_dropout_backward(device, dtype, scale):
    g, m = random_tensor((7, 9), dtype), random_tensor((7, 9), torch.bool)
    got = from_torch(g, device).dropout_backward(from_torch(m, device), scale)
    assert_same(got, torch.ops.aten.native_dropout_backward(g, m, scale))
