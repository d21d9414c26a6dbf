"""Special functions (functions/special.py) against torch: forward values and every input's gradient in
float64, gradcheck where the rule is new, the in-place forms, integer inputs, and torch's errors (zeta's and
igamma's first input have no derivative; heaviside none at all)."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    I,
    assert_close,
    assert_inplace_forms_match_torch,
    check_forward_and_gradients,
    check_gradcheck,
    params,
    to_genesis,
    values,
)

import genesis


def _nextafter_213(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """torch 2.13's nextafter with its derivative (self: the gradient, other: zeros), which torch 2.11 lacks
    ("the derivative for 'nextafter' is not implemented"): the value is nextafter's, exactly (x + (n - x)
    is n for adjacent floats), the gradient flows to x whole and to y as zeros."""
    return x + (torch.nextafter(x, y) - x).detach() + 0 * y


CASES = [
    ("erfc", lambda lib, x: lib.erfc(x), [I((3, 4))]),
    ("erfinv", lambda lib, x: lib.erfinv(x * 0.8), [I((3, 4), domain="small")]),
    ("erfcx", lambda lib, x: lib.special.erfcx(x * 3), [I((3, 4))]),
    ("lgamma", lambda lib, x: lib.lgamma(x * 3), [I((3, 4))]),
    ("digamma", lambda lib, x: lib.digamma(x * 3), [I((3, 4))]),
    ("polygamma1", lambda lib, x: lib.polygamma(1, x * 3), [I((3, 4))]),
    ("polygamma3", lambda lib, x: lib.polygamma(3, x), [I((3, 4), domain="pos")]),
    ("mvlgamma", lambda lib, x: lib.mvlgamma(x + 2, 3), [I((3, 4), domain="pos")]),
    ("ndtri", lambda lib, x: lib.special.ndtri(lib.sigmoid(x * 2)), [I((3, 4))]),
    ("log_ndtr", lambda lib, x: lib.special.log_ndtr(x * 4), [I((3, 4))]),
    ("i0", lambda lib, x: lib.i0(x * 5), [I((3, 4))]),
    ("i0e", lambda lib, x: lib.special.i0e(x * 5), [I((3, 4))]),
    ("i1", lambda lib, x: lib.special.i1(x * 5), [I((3, 4))]),
    ("i1e", lambda lib, x: lib.special.i1e(x * 5), [I((3, 4))]),
    (
        "igamma",
        lambda lib, a, x: lib.igamma(a * 3, x * 2),
        [I((3, 1), rg=False, domain="pos"), I((3, 4), domain="pos")],
    ),
    (
        "igammac",
        lambda lib, a, x: lib.igammac(a * 3, x * 2),
        [I((4,), rg=False, domain="pos"), I((3, 4), domain="pos")],
    ),
    (
        "nextafter",
        lambda lib, x, y: (lib.nextafter if lib is genesis else _nextafter_213)(x, y),
        [I((3, 4)), I((3, 4))],
    ),
    ("sinc", lambda lib, x: lib.sinc(x), [I((3, 4))]),
    ("xlogy", lambda lib, x, y: lib.xlogy(x, y), [I((3, 4)), I((4,), domain="pos")]),
    ("logit", lambda lib, x: lib.logit(lib.sigmoid(x)), [I((3, 4))]),
    ("logit_eps", lambda lib, x: lib.logit(lib.sigmoid(x * 3), eps=0.2), [I((3, 4))]),
    ("copysign", lambda lib, x, y: lib.copysign(x, y), [I((3, 4)), I((3, 4), rg=False)]),
    ("float_power", lambda lib, x, y: lib.float_power(x, y), [I((3, 4), domain="pos"), I((3, 4))]),
    ("ldexp", lambda lib, x, y: lib.ldexp(x, y), [I((3, 4)), I((3, 4), rg=False)]),
    ("logaddexp2", lambda lib, x, y: lib.logaddexp2(x * 3, y), [I((3, 4)), I((4,))]),
    ("nan_to_num", lambda lib, x: lib.nan_to_num(lib.log(x), nan=0.5), [I((3, 4))]),
    ("frexp", lambda lib, x: lib.frexp(x * 100), [I((3, 4))]),
]


@pytest.mark.parametrize("case, device", params(CASES))
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


@pytest.mark.parametrize(
    "case, device", params([c for c in CASES if c[0] in ("erfinv", "erfcx", "i1e", "log_ndtr", "igamma")])
)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("op", ["erfinv", "digamma", "lgamma", "i0", "erfc", "sinc", "logit"])
def test_integer_inputs_give_float32(device, op):
    t = torch.tensor([0, 1, 2, 3]) if op != "erfinv" else torch.tensor([0, 1, -1, 0])
    got = getattr(genesis, op)(genesis.tensor(t.numpy(), device=device))
    assert_close(got, getattr(torch, op)(t), rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_low_precision_dtypes(device, dtype):
    x = (torch.rand(16, dtype=torch.float64) * 1.8 - 0.9).to(dtype)
    gx = genesis.tensor(x.float().numpy(), device=device).to(getattr(genesis, str(dtype).removeprefix("torch.")))
    for op in ("erfinv", "digamma", "i0"):
        got = getattr(gx, op)().float()
        expected = getattr(x, op)().float()
        assert got.dtype == genesis.float32
        # both sides compute in float32 and round to the input's dtype: two ulps of it (float32: its kernels'
        # accuracy against torch's)
        rtol = {torch.float16: 2 * 2**-10, torch.bfloat16: 2 * 2**-7, torch.float32: 1e-5}[dtype]
        torch.testing.assert_close(torch.from_numpy(got.cpu().numpy()), expected, rtol=rtol, atol=rtol * 1e-2)


def test_inplace_forms(device):
    forms = [
        ("erfc_", ()),
        ("erfinv_", ()),
        ("lgamma_", ()),
        ("digamma_", ()),
        ("i0_", ()),
        ("polygamma_", (2,)),
        ("mvlgamma_", (1,)),
        ("sinc_", ()),
        ("xlogy_", ("b",)),
        ("logit_", (0.1,)),
        ("nan_to_num_", ()),
        ("copysign_", ("b",)),
        ("ldexp_", ("b",)),
        ("nextafter_", ("b",)),
        ("igamma_", ("b",)),
        ("igammac_", ("b",)),
    ]
    assert_inplace_forms_match_torch(device, [(n, a) for n, a in forms if n != "erfinv_"])
    t = values((3, 4), "small") * 0.5
    g = to_genesis(t, device)
    assert g.erfinv_() is g
    assert_close(g, t.erfinv())


def test_integer_ops(device):
    a = torch.randint(-40, 40, (5, 6))
    b = torch.randint(-40, 40, (6,))
    ga, gb = to_genesis(a, device), to_genesis(b, device)
    assert_close(genesis.gcd(ga, gb), torch.gcd(a, b))
    assert_close(genesis.lcm(ga, gb), torch.lcm(a, b))
    assert_close(ga.clone().gcd_(gb), a.clone().gcd_(b))
    assert_close(ga.signbit(), a.signbit())


def test_bit_level_results(device):
    x = torch.tensor([0.0, -0.0, 1.5, -2.0, float("inf"), -float("inf")], dtype=torch.float64)
    gx = to_genesis(x, device)
    assert_close(gx.signbit(), x.signbit())
    y = torch.tensor([1.0, -1.0, 0.0, 3.0, 0.0, 0.0], dtype=torch.float64)
    assert_close(gx.nextafter(to_genesis(y, device)), x.nextafter(y), rtol=0, atol=0)
    assert_close(gx.copysign(-0.0), x.copysign(-0.0))
    m, e = to_genesis(x[2:4], device).frexp()
    mt, et = x[2:4].frexp()
    assert_close(m, mt)
    assert_close(e, et)
    v = torch.tensor([[0.0, 1.0, -2.0]], dtype=torch.float64)
    assert_close(to_genesis(v, device).heaviside(to_genesis(v * 0 + 0.5, device)), v.heaviside(v * 0 + 0.5))


def test_errors_match_torch(device):
    x = to_genesis(values((3,)), device, requires_grad=True)
    q = to_genesis(values((3,), "pos"), device, requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative for 'zeta'"):
        genesis.special.zeta(x * 0 + 2, q).sum().backward()
    with pytest.raises(NotImplementedError, match="derivative for 'igamma: input'"):
        genesis.igamma(q, q.detach()).sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside"):
        x.heaviside(x.detach()).sum().backward()
    with pytest.raises(RuntimeError, match="does not support negative n"):
        genesis.polygamma(-1, x)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        genesis.mvlgamma(x, 0)
    with pytest.raises(NotImplementedError, match=r"gcd_cpu.*Double"):
        genesis.gcd(x.detach(), x.detach())
    with pytest.raises(NotImplementedError, match=r"nextafter_cpu.*Long"):
        genesis.nextafter(genesis.tensor([1], device=device), genesis.tensor([2], device=device))
    with pytest.raises(RuntimeError, match="different dtypes"):
        x.heaviside(x.detach().float())
    with pytest.raises(RuntimeError, match="only supports floating-point"):
        genesis.tensor([1], device=device).frexp()
    with pytest.raises(RuntimeError, match=r"can't be cast|Double"):
        genesis.tensor([1.0], device=device).float_power_(2)
