"""diagonal / unfold / unflatten / movedim / swapaxes / as_strided views (geometry equal to torch's,
writes reaching the base), and the in-place random fills, randperm and the generators' state."""

from __future__ import annotations

import math

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor, to_torch

import genesis_ndarray as nd

F32, F64, F16, I64 = torch.float32, torch.float64, torch.float16, torch.int64


def _base(layout: str, device):
    """A (4, 5, 6) base as a torch tensor and an NDArray of the same values and layout."""
    if layout == "contiguous":
        t = random_tensor((4, 5, 6), F32)
        return t, from_torch(t, device)
    full = random_tensor((6, 7, 4), F32)  # permuted and sliced: strides (1, 4, 28), offset 4 + 28
    return full.permute(2, 1, 0)[:, 1:6], from_torch(full, device).permute(2, 1, 0)[:, 1:6]


VIEWS = [
    ("diagonal", lambda x: x.diagonal()),
    ("diagonal-offset", lambda x: x.diagonal(2)),
    ("diagonal-neg-offset", lambda x: x.diagonal(-1, 0, 2)),
    ("diagonal-dims", lambda x: x.diagonal(1, 2, 0)),
    ("diagonal-neg-dims", lambda x: x.diagonal(0, -1, -2)),
    ("diagonal-off-the-end", lambda x: x.diagonal(9)),
    ("diagonal-of-slice", lambda x: x[1:, ::2].diagonal(-1, 1, 0)),
    ("unfold", lambda x: x.unfold(2, 2, 2)),
    ("unfold-gaps", lambda x: x.unfold(1, 2, 3)),
    ("unfold-neg-dim", lambda x: x.unfold(-3, 3, 4)),
    ("unfold-whole", lambda x: x.unfold(0, 4, 1)),
    ("unflatten", lambda x: x.unflatten(2, (2, 3))),
    ("unflatten-infer", lambda x: x.unflatten(-1, (3, -1))),
    ("unflatten-ones", lambda x: x.unflatten(0, (1, 4, 1))),
    ("movedim", lambda x: x.movedim(0, 2)),
    ("movedim-many", lambda x: x.movedim((0, -1), (1, 0))),
    ("moveaxis", lambda x: x.moveaxis(-1, 0)),
    ("swapaxes", lambda x: x.swapaxes(0, 2)),
    ("swapdims", lambda x: x.swapdims(-1, 1)),
    ("mT", lambda x: x.mT),
    ("T", lambda x: x[1].T),
    ("as_strided", lambda x: x.as_strided((3, 4), (2, 7), x.storage_offset() + 1)),
    ("chain", lambda x: x.swapaxes(0, 1).diagonal(1, 1, 2).unfold(0, 2, 2)),
]


@pytest.mark.parametrize("layout", ["contiguous", "permuted"])
@pytest.mark.parametrize("fn", [f for _, f in VIEWS], ids=[n for n, _ in VIEWS])
def test_view_geometry_and_write_through(device, fn, layout):
    tb, base = _base(layout, device)
    tv, v = fn(tb), fn(base)
    assert v.shape == tuple(tv.shape)
    assert v.stride() == tv.stride()
    assert v.storage_offset() == tv.storage_offset()
    if tv.numel():  # torch reports 0 as the data_ptr of an empty tensor
        assert v.data_ptr() - base.data_ptr() == tv.data_ptr() - tb.data_ptr()
    assert v.is_contiguous() == tv.is_contiguous()
    assert_same(v, tv)
    if tv.numel():
        src = random_tensor(tuple(tv.shape), F32)
        tv.copy_(src)
        v.copy_(from_torch(src, device))
        assert_same(base, tb)  # the write went through the view into the base


def test_overlapping_unfold_windows_share_memory(device):
    tb = random_tensor((7,), F32)
    base = from_torch(tb, device)
    tv, v = tb.unfold(0, 3, 1), base.unfold(0, 3, 1)
    assert (v.shape, v.stride(), v.storage_offset()) == (tuple(tv.shape), tv.stride(), tv.storage_offset())
    assert_same(v, tv)
    base[3] = 100.0  # one element of the base is in three windows
    tb[3] = 100.0
    assert_same(v, tv)
    got = to_torch(v)
    assert (got == 100.0).sum() == 3


@pytest.mark.parametrize("size", [0, 1])
def test_unfold_of_a_0d_array(device, size):
    t = torch.tensor(2.5)
    a = from_torch(t, device)
    tv, v = t.unfold(0, size, 1), a.unfold(0, size, 1)
    assert (v.shape, v.stride(), v.storage_offset()) == (tuple(tv.shape), tv.stride(), tv.storage_offset())
    assert_same(v, tv)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 1 but size is 2"):
        a.unfold(0, 2, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        a.unfold(1, 1, 1)


def test_movedim_and_mT_of_small_arrays(device):
    t0 = torch.tensor(1.5)
    a0 = from_torch(t0, device)
    assert a0.movedim(0, 0).shape == () and a0.mT.shape == ()
    a1 = from_torch(random_tensor((3,), F32), device)
    with pytest.raises(RuntimeError, match="mT is only supported on matrices"):
        _ = a1.mT
    with pytest.raises(RuntimeError, match="mT is only supported on matrices"):
        _ = torch.zeros(3).mT


# (call, expected error type, pattern): each checked on torch too, so the class is torch's.
BAD = [
    (lambda x: x.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical"),
    (lambda x: x.diagonal(0, 0, 3), IndexError, "Dimension out of range"),
    (lambda x: x.diagonal(0, -4, 1), IndexError, "Dimension out of range"),
    (lambda x: x.unfold(3, 2, 1), IndexError, "Dimension out of range"),
    (lambda x: x.unfold(1, 6, 1), RuntimeError, "maximum size for tensor at dimension 1 is 5 but size is 6"),
    (lambda x: x.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda x: x.unfold(1, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    (lambda x: x.unflatten(1, (2, 2)), RuntimeError, r"Provided sizes \[2, 2\] don't multiply up to the size of dim 1"),
    (lambda x: x.unflatten(1, ()), RuntimeError, "sizes must be non-empty"),
    (lambda x: x.unflatten(1, (-1, 3)), RuntimeError, "don't multiply up"),
    (lambda x: x.unflatten(1, (-1, -1)), RuntimeError, "only one dimension can be inferred"),
    (lambda x: x.unflatten(3, (1, -1)), IndexError, "Dimension out of range"),
    (lambda x: x.movedim((0, 1), (1,)), RuntimeError, "should contain the same number of dims"),
    (lambda x: x.movedim((0, 0), (1, 2)), RuntimeError, "repeated dim in `source`"),
    (lambda x: x.movedim((0, 1), (2, -1)), RuntimeError, "repeated dim in `destination`"),
    (lambda x: x.movedim(3, 0), IndexError, "Dimension out of range"),
    (lambda x: x.swapaxes(0, 3), IndexError, "Dimension out of range"),
]


@pytest.mark.parametrize("call,error,pattern", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_view_arguments_raise_torch_errors(device, call, error, pattern):
    t = random_tensor((4, 5, 6), F32)
    with pytest.raises(error):
        call(t)
    with pytest.raises(error, match=pattern):
        call(from_torch(t, device))


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
