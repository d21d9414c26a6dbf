"""The top-level statistics, binning, integrals and windows (_torch_stats.py, _torch_windows.py, Tensor
methods of functions/stats.py) against torch: values (float64) on both devices, indices where torch's are
determined, every differentiable result's gradient, and torch's errors."""

from __future__ import annotations

import pytest
import torch

import genesis


def _g(t: torch.Tensor, device: str, requires_grad: bool = False) -> genesis.Tensor:
    return genesis.tensor(t.detach().numpy(), device=device, requires_grad=requires_grad)


def _close(actual, expected: torch.Tensor, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
    got = torch.from_numpy(actual.detach().cpu().numpy())
    torch.testing.assert_close(got, expected.detach(), rtol=rtol, atol=atol, equal_nan=True)


def _data(seed: int = 0, nan: bool = True) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 7, generator=g, dtype=torch.float64)
    if nan:
        x[1, 2] = float("nan")
        x[3, :] = float("nan")  # an all-NaN row
    return x


# name: fn(lib, x) -> a tensor or a (values, indices) tuple
CASES = {
    "median_all": lambda lib, x: lib.median(x),
    "median_dim": lambda lib, x: lib.median(x, 1, keepdim=True),
    "nanmedian_dim": lambda lib, x: lib.nanmedian(x, 1),
    "nanmedian_all": lambda lib, x: lib.nanmedian(x),
    "kthvalue": lambda lib, x: lib.kthvalue(x, 3, 1),
    "quantile": lambda lib, x: lib.quantile(x, 0.3, dim=1),
    "quantile_q_tensor": lambda lib, x: lib.quantile(x, lib.tensor([0.1, 0.5, 0.95], dtype=lib.float64), 1, True),
    "quantile_all": lambda lib, x: lib.quantile(x, 0.75),
    "nanquantile_lower": lambda lib, x: lib.nanquantile(x, 0.4, dim=1, interpolation="lower"),
    "nanquantile_higher": lambda lib, x: lib.nanquantile(x, 0.4, dim=0, interpolation="higher"),
    "nanquantile_midpoint": lambda lib, x: lib.nanquantile(x, 0.4, dim=1, interpolation="midpoint"),
    "nanquantile_nearest": lambda lib, x: lib.nanquantile(x, 0.5, dim=1, interpolation="nearest"),
    "cummax": lambda lib, x: lib.cummax(x, 1),
    "cummin": lambda lib, x: lib.cummin(x, 0),
    "logcumsumexp": lambda lib, x: lib.logcumsumexp(x * 30, 1),
    "nansum": lambda lib, x: lib.nansum(x, 1),
    "nanmean": lambda lib, x: lib.nanmean(x, 0, keepdim=True),
    "renorm": lambda lib, x: lib.renorm(x, 2, 0, 1.5),
    "trapezoid": lambda lib, x: lib.trapezoid(x, dx=0.5),
    "trapz_x": lambda lib, x: lib.trapz(x, x[0].detach().abs().cumsum(0)),  # uneven sample points
    "cumulative_trapezoid": lambda lib, x: lib.cumulative_trapezoid(x, dim=0),
}
NAN_FREE = {"renorm", "trapezoid", "trapz_x", "cumulative_trapezoid", "logcumsumexp", "cummax", "cummin"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients(device, name):
    fn = CASES[name]
    x = _data(nan=name not in NAN_FREE)
    tx, gx = x.clone().requires_grad_(), _g(x, device, requires_grad=True)
    t_out, g_out = fn(torch, tx), fn(genesis, gx)
    t_vals, g_vals = (t_out[0], g_out[0]) if isinstance(t_out, tuple) else (t_out, g_out)
    _close(g_vals, t_vals)
    if isinstance(t_out, tuple) and name.startswith("cum"):
        _close(g_out[1], t_out[1])  # running extremes: torch's index is the latest occurrence
    elif isinstance(t_out, tuple):  # the index of a value equal to it (torch's choice among ties is unspecified)
        picked = gx.detach().gather(1, g_out[1] if g_out[1].ndim == 2 else g_out[1].unsqueeze(1))
        _close(picked.reshape(tuple(t_vals.shape)), t_vals)
    w = torch.rand(t_vals.shape, dtype=torch.float64) + 0.5
    finite = ~t_vals.isnan()
    (t_vals.where(finite, 0) * w).sum().backward()
    (g_vals.where(_g(finite, device), 0.0) * _g(w, device)).sum().backward()
    _close(gx.grad, tx.grad)


def test_mode(device):
    x = torch.randint(0, 4, (3, 9))
    got = genesis.mode(_g(x, device), 1)
    expected = torch.mode(x, 1)
    _close(got.values, expected.values)
    _close(got.indices, expected.indices)  # the last occurrence, as torch


def test_searchsorted_and_bucketize(device):
    seq = torch.tensor([1.0, 3.0, 3.0, 5.0, 7.0], dtype=torch.float64)
    v = torch.tensor([[0.0, 3.0, 6.0], [7.0, 8.0, 3.0]], dtype=torch.float64)
    for kw in ({}, {"right": True}, {"side": "right"}, {"out_int32": True}):
        _close(genesis.searchsorted(_g(seq, device), _g(v, device), **kw), torch.searchsorted(seq, v, **kw))
    rows = torch.sort(torch.randn(2, 6, dtype=torch.float64), 1).values
    _close(genesis.searchsorted(_g(rows, device), _g(v, device)), torch.searchsorted(rows, v))
    perm = torch.tensor([4, 0, 2, 1, 3])
    shuffled = seq[torch.argsort(perm)]
    sorter = torch.argsort(shuffled)
    _close(
        genesis.searchsorted(_g(shuffled, device), _g(v, device), sorter=_g(sorter, device)),
        torch.searchsorted(shuffled, v, sorter=sorter),
    )
    _close(genesis.searchsorted(_g(seq, device), 4.0), torch.searchsorted(seq, torch.tensor(4.0, dtype=torch.float64)))
    _close(genesis.bucketize(_g(v, device), _g(seq, device), right=True), torch.bucketize(v, seq, right=True))


def test_binning(device):
    x = torch.randn(40, dtype=torch.float64)
    _close(genesis.histc(_g(x, device), bins=6), torch.histc(x, bins=6))
    _close(genesis.histc(_g(x, device), 5, -1, 1), torch.histc(x, 5, -1, 1))
    for bins in (5, torch.tensor([-2.0, -0.5, 0.0, 0.3, 2.0], dtype=torch.float64)):
        gb = bins if isinstance(bins, int) else _g(bins, device)
        w = torch.rand(40, dtype=torch.float64)
        got = genesis.histogram(_g(x, device), gb, weight=_g(w, device), density=True)
        expected = torch.histogram(x, bins, weight=w, density=True)
        _close(got.hist, expected.hist)
        _close(got.bin_edges, expected.bin_edges)
    got = _g(x, device).histogram(4, range=(-1.0, 1.0))
    _close(got.hist, torch.histogram(x, 4, range=(-1.0, 1.0)).hist)
    i = torch.tensor([1, 4, 4, 0, 2, 4])
    _close(genesis.bincount(_g(i, device), minlength=8), torch.bincount(i, minlength=8))
    w = torch.rand(6, dtype=torch.float64)
    _close(genesis.bincount(_g(i, device), _g(w, device)), torch.bincount(i, w))


def test_vander(device):
    x = torch.tensor([1.5, -2.0, 0.5], dtype=torch.float64, requires_grad=True)
    gx = _g(x, device, requires_grad=True)
    for kw in ({}, {"N": 4, "increasing": True}):
        _close(genesis.vander(gx, **kw), torch.vander(x, **kw))
    torch.stack([x**p for p in (3, 2, 1, 0)], 1).sum().backward()  # (torch.vander's own backward fails in place)
    genesis.vander(gx, 4).sum().backward()
    _close(gx.grad, x.grad)
    i = torch.tensor([1, 2, 3], dtype=torch.int32)
    _close(genesis.vander(_g(i, device)), torch.vander(i))


WINDOWS = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
def test_windows(device, name):
    for length in (0, 1, 2, 9):
        for periodic in (True, False):
            got = getattr(genesis, name)(length, periodic, dtype=genesis.float64, device=device)
            _close(got, getattr(torch, name)(length, periodic, dtype=torch.float64))
            assert got.device.type == device
    _close(getattr(genesis, name)(8), getattr(torch, name)(8), rtol=1e-6, atol=1e-7)


def test_extra_window_parameters(device):
    got = genesis.hamming_window(9, False, 0.5, 0.5, device=device)
    _close(got, torch.hamming_window(9, False, 0.5, 0.5), rtol=1e-6, atol=1e-7)
    _close(genesis.kaiser_window(9, True, 5.0, device=device), torch.kaiser_window(9, True, 5.0), rtol=1e-6)


def test_errors(device):
    x = _g(_data(nan=False), device)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        x.kthvalue(8, 1)
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        x.quantile(1.5)
    with pytest.raises(RuntimeError, match="input tensor must be either float or double"):
        genesis.quantile(genesis.tensor([1, 2], device=device), 0.5)
    with pytest.raises(RuntimeError, match="interpolation must be one of"):
        x.quantile(0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="non-negative integral"):
        genesis.bincount(genesis.tensor([1, -1], device=device))
    with pytest.raises(NotImplementedError, match="bincount_cpu"):
        genesis.bincount(x[0])
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        genesis.histc(x, bins=0)
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        genesis.searchsorted(x[0], x[1], side="middle")
    with pytest.raises(RuntimeError, match="nanmean"):
        genesis.nanmean(genesis.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        genesis.hann_window(4, dtype=genesis.int64)
