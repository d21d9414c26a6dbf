"""genesis.special against torch.special: every name torch has, forward values in float64 on both devices,
gradients of the compositions, the orthogonal polynomials over degrees, the Bessel / Airy functions (no
gradient), number arguments and torch's errors."""

from __future__ import annotations

import pytest
import torch

import genesis
import genesis.special as gs

NOT_FUNCTIONS = {"Tensor", "torch", "common_args", "multi_dim_common"}


def _g(t: torch.Tensor, device: str, requires_grad: bool = False) -> genesis.Tensor:
    return genesis.tensor(t.detach().numpy(), device=device, requires_grad=requires_grad)


def _close(actual: genesis.Tensor, expected: torch.Tensor, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
    got = torch.from_numpy(actual.detach().cpu().numpy())
    torch.testing.assert_close(got, expected.detach(), rtol=rtol, atol=atol, equal_nan=True)


def _x(n: int = 12, low: float = -3.0, high: float = 3.0, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return low + (high - low) * torch.rand(n, generator=g, dtype=torch.float64)


def test_every_torch_special_name_is_there():
    names = {n for n in dir(torch.special) if not n.startswith("_")} - NOT_FUNCTIONS
    assert sorted(names - set(gs.__all__)) == []
    assert all(callable(getattr(gs, n)) for n in gs.__all__)


# name: (call(lib, x), input range)
UNARY = {
    "erf": (lambda s, x: s.erf(x), (-3, 3)),
    "erfc": (lambda s, x: s.erfc(x), (-3, 6)),
    "erfcx": (lambda s, x: s.erfcx(x), (-3, 30)),
    "erfinv": (lambda s, x: s.erfinv(x), (-0.99, 0.99)),
    "expit": (lambda s, x: s.expit(x), (-8, 8)),
    "logit": (lambda s, x: s.logit(x), (0.01, 0.99)),
    "logit_eps": (lambda s, x: s.logit(x, eps=0.1), (0.01, 0.99)),
    "exp2": (lambda s, x: s.exp2(x), (-5, 5)),
    "expm1": (lambda s, x: s.expm1(x), (-1, 1)),
    "log1p": (lambda s, x: s.log1p(x), (-0.9, 3)),
    "gammaln": (lambda s, x: s.gammaln(x), (-5, 20)),
    "digamma": (lambda s, x: s.digamma(x), (-5, 20)),
    "psi": (lambda s, x: s.psi(x), (0.1, 20)),
    "polygamma2": (lambda s, x: s.polygamma(2, x), (0.2, 10)),
    "multigammaln": (lambda s, x: s.multigammaln(x, 4), (2, 10)),
    "i0": (lambda s, x: s.i0(x), (-40, 40)),
    "i0e": (lambda s, x: s.i0e(x), (-40, 40)),
    "i1": (lambda s, x: s.i1(x), (-40, 40)),
    "i1e": (lambda s, x: s.i1e(x), (-40, 40)),
    "modified_bessel_i0": (lambda s, x: s.modified_bessel_i0(x), (-20, 20)),
    "modified_bessel_i1": (lambda s, x: s.modified_bessel_i1(x), (-20, 20)),
    "spherical_bessel_j0": (lambda s, x: s.spherical_bessel_j0(x), (-20, 20)),
    "ndtr": (lambda s, x: s.ndtr(x), (-6, 6)),
    "ndtri": (lambda s, x: s.ndtri(x), (0.001, 0.999)),
    "log_ndtr": (lambda s, x: s.log_ndtr(x), (-30, 6)),
    "sinc": (lambda s, x: s.sinc(x), (-4, 4)),
    "round": (lambda s, x: s.round(x, decimals=2), (-4, 4)),
    "entr": (lambda s, x: s.entr(x), (-1, 3)),
    "softmax": (lambda s, x: s.softmax(x.reshape(3, 4), 1), (-3, 3)),
    "log_softmax": (lambda s, x: s.log_softmax(x.reshape(3, 4), 0), (-3, 3)),
    "logsumexp": (lambda s, x: s.logsumexp(x.reshape(3, 4), 1), (-3, 3)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward(device, name):
    fn, (low, high) = UNARY[name]
    x = _x(12, low, high)
    _close(fn(gs, _g(x, device)), fn(torch.special, x))


GRAD = ["entr", "expit", "logit", "logit_eps", "ndtr", "log_ndtr", "sinc", "erfcx", "multigammaln", "softmax"]


@pytest.mark.parametrize("name", GRAD)
def test_unary_gradients(device, name):
    fn, (low, high) = UNARY[name]
    x = _x(12, max(low, 0.05), high).requires_grad_()  # entr's gradient is -inf at 0: stay positive
    gx = _g(x, device, requires_grad=True)
    w = _x(12, 0.5, 2.0, seed=1)
    y, gy = fn(torch.special, x), fn(gs, gx)
    (y * w.reshape(y.shape)).sum().backward()
    (gy * _g(w.reshape(y.shape), device)).sum().backward()
    _close(gx.grad, x.grad, rtol=1e-8)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta", "gammainc", "gammaincc"])
def test_binary_forward_and_number_arguments(device, name):
    x, y = _x(12, 0.5, 6), _x(12, 0.5, 6, seed=2)
    x[:3] = 0.0 if name.startswith("xlog") else x[:3]
    g, t = getattr(gs, name), getattr(torch.special, name)
    _close(g(_g(x, device), _g(y, device)), t(x, y))
    if name.startswith("gammainc"):  # torch takes tensors only there
        with pytest.raises(TypeError, match="must be Tensor"):
            g(_g(x, device), 2.5)
        return
    _close(g(_g(x, device), 2.5), t(x, 2.5))
    _close(g(3, _g(y, device)), t(3, y))


def test_xlog1py_gradients(device):
    x, y = _x(8, -2, 2).requires_grad_(), _x(8, 0.1, 3, seed=3).requires_grad_()
    gx, gy = _g(x, device, True), _g(y, device, True)
    torch.special.xlog1py(x, y).sum().backward()
    gs.xlog1py(gx, gy).sum().backward()
    _close(gx.grad, x.grad)
    _close(gy.grad, y.grad)


POLYNOMIALS = [n for n in dir(torch.special) if n.endswith("_polynomial_" + n.rsplit("_", 1)[-1]) and "polynomial" in n]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials(device, name):
    x = _x(10, 0.0 if "shifted" in name else -1.0, 1.0)
    n = torch.tensor([-1, 0, 1, 2, 3, 4, 5, 6, 3, 2])
    got = getattr(gs, name)(_g(x, device), _g(n, device))
    _close(got, getattr(torch.special, name)(x, n), rtol=1e-9, atol=1e-9)
    assert not got.requires_grad
    xs = _x(4, -1.0, 1.0)
    _close(getattr(gs, name)(_g(xs, device), 3), getattr(torch.special, name)(xs, 3), rtol=1e-9, atol=1e-9)


def test_top_level_spellings_match(device):
    x = _x(10, 0.1, 0.9)
    gx = _g(x, device)
    _close(genesis.special.gammaln(gx), torch.lgamma(x))
    _close(genesis.special.gammainc(gx, gx + 1), torch.igamma(x, x + 1))
    _close(genesis.special.multigammaln(gx + 2, 2), torch.mvlgamma(x + 2, 2))
    expected = torch.special.softmax(x.float().reshape(2, 5), 1, dtype=torch.float64)
    _close(genesis.special.softmax(gx.float().reshape(2, 5), 1, dtype=genesis.float64), expected)


def test_errors(device):
    x = _g(_x(4), device)
    with pytest.raises(RuntimeError, match="does not support negative n"):
        gs.polygamma(-2, x)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        gs.multigammaln(x, 0)
    with pytest.raises(NotImplementedError, match="derivative for 'zeta'"):
        q = _g(_x(4, 1, 2), device, requires_grad=True)
        gs.zeta(2.0, q).sum().backward()


BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1"]
BESSEL += ["scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai"]


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_and_airy(device, name):
    x = _x(16, 0.05, 30) if "_y" in name or "_k" in name else _x(16, -20, 20)
    gx = _g(x, device, requires_grad=True)
    got = getattr(gs, name)(gx)
    assert not got.requires_grad  # torch gives them no derivative
    # torch's own float64 J / Y / Ai are off by up to ~6e-7 absolute (its float32-accurate tables; measured
    # against mpmath, which the kernel tests compare the cuda kernels with at 1e-12): the bound here
    _close(got, getattr(torch.special, name)(x), rtol=1e-5, atol=1e-6)
    ints = torch.tensor([1, 2, 3])
    _close(getattr(gs, name)(_g(ints, device)), getattr(torch.special, name)(ints), rtol=1e-5, atol=1e-6)
