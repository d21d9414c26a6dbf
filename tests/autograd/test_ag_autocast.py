"""Autocast as a dispatch rule: each op's inputs are cast by torch's policy; state nests per thread."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
import torch

import genesis_autograd as ag
from device_support import HAS_CUDA, NO_CUDA_REASON

LOW = [("bfloat16", torch.bfloat16), ("float16", torch.float16)]


def pair(shape, device, dtype="float32", seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ag.tensor(data, device=device).to(dtype=dtype), torch.tensor(data).to(getattr(torch, dtype))


@pytest.mark.parametrize(("low", "torch_low"), LOW)
def test_op_policies_follow_torchs_cuda_lists(device: str, low: str, torch_low) -> None:
    """torch's CUDA autocast lists, on every device (torch's own CPU lists are shorter)."""
    a, ta = pair((4, 5), device, seed=1)
    b, tb = pair((5, 3), device, seed=2)
    h, th = pair((4, 5), device, low, seed=3)
    with ag.autocast(device, dtype=low):
        cases = {  # name: (ours, the reference computed as torch's CUDA autocast would, expected dtype)
            "matmul": (a @ b, ta.to(torch_low) @ tb.to(torch_low), low),  # lower
            "softmax": (h.softmax(-1), th.float().softmax(-1), "float32"),  # float32
            "exp": (h.exp(), th.float().exp(), "float32"),
            "sum": (h.sum(), th.float().sum(), "float32"),
            "add": (h + h, th + th, low),  # no policy: the inputs' dtype
            "mixed add": (h + a, th + ta, "float32"),  # ordinary promotion
            "cat": (ag.cat([h, a]), torch.cat([th.float(), ta]), "float32"),  # promote to the widest
            "relu": (h.relu(), th.relu(), low),
        }
    for name, (ours, theirs, expected) in cases.items():
        assert ours.dtype.name == expected, name
        # torch's default tolerance of the result's dtype (bfloat16 1.6e-2, float16 1e-3, float32 1.3e-6)
        got = torch.from_numpy(ours.float().cpu().numpy()).to(theirs.dtype)
        torch.testing.assert_close(got, theirs, msg=name)


@pytest.mark.parametrize(("low", "torch_low"), LOW)
@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA_REASON)
def test_dtypes_equal_torch_cuda_autocast(low: str, torch_low) -> None:
    a, ta = pair((4, 5), "cuda", seed=1)
    h, th = pair((4, 5), "cuda", low, seed=3)
    ta, th = ta.cuda(), th.cuda()
    with ag.autocast("cuda", dtype=low), torch.autocast("cuda", dtype=torch_low):
        pairs = [
            (a @ a.T, ta @ ta.T),
            (h.softmax(-1), th.softmax(-1)),
            (h.exp(), th.exp()),
            (h.sum(), th.sum()),
            (ag.cat([h, a]), torch.cat([th, ta])),
            (h.log_softmax(-1), th.log_softmax(-1)),
        ]
    for ours, theirs in pairs:
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")


def test_gradients_come_back_in_each_inputs_own_dtype(device: str) -> None:
    a, _ = pair((4, 5), device, seed=4)
    w, _ = pair((5, 3), device, seed=5)
    a.requires_grad_()
    w.requires_grad_()
    with ag.autocast(device, dtype="bfloat16"):
        out = a @ w
    assert out.dtype == ag.bfloat16
    out.float().sum().backward()
    assert a.grad.dtype == ag.float32 and w.grad.dtype == ag.float32
    expected = np.ones((4, 3), np.float32) @ w.detach().cpu().numpy().T
    np.testing.assert_allclose(a.grad.cpu().numpy(), expected, rtol=2e-2, atol=2e-2)


def test_float64_is_left_alone_by_lower_ops(device: str) -> None:
    a = ag.randn(3, 3, dtype="float64", device=device)
    with ag.autocast(device, dtype="bfloat16"):
        assert (a @ a).dtype == ag.float64


def test_regions_nest_restore_and_disable(device: str) -> None:
    a, _ = pair((2, 2), device)
    assert not ag.is_autocast_enabled(device)
    with ag.autocast(device, dtype="bfloat16"):
        assert (a @ a).dtype == ag.bfloat16 and ag.get_autocast_dtype(device) == ag.bfloat16
        with ag.autocast(device, enabled=False):
            assert not ag.is_autocast_enabled(device)
            assert (a @ a).dtype == ag.float32
        with ag.autocast(device, dtype="float16"):
            assert (a @ a).dtype == ag.float16
        assert (a @ a).dtype == ag.bfloat16
    assert not ag.is_autocast_enabled(device) and (a @ a).dtype == ag.float32


def test_decorator_form(device: str) -> None:
    a, _ = pair((2, 2), device)

    @ag.autocast(device, dtype="bfloat16")
    def product(x):
        return x @ x

    assert product(a).dtype == ag.bfloat16
    assert (a @ a).dtype == ag.float32


def test_state_is_per_thread() -> None:
    seen = []
    with ag.autocast("cpu", dtype="bfloat16"):
        worker = threading.Thread(target=lambda: seen.append(ag.is_autocast_enabled("cpu")))
        worker.start()
        worker.join()
        assert ag.is_autocast_enabled("cpu")
    assert seen == [False]


def test_other_device_types_are_untouched() -> None:
    a, _ = pair((2, 2), "cpu")
    with ag.autocast("cuda", dtype="bfloat16"):
        assert (a @ a).dtype == ag.float32


def test_bad_arguments_say_so() -> None:
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        ag.autocast("tpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        region = ag.autocast("cpu", dtype="float64")
    assert not region.enabled and "not supported" in str(caught[0].message)
    with pytest.raises(ValueError, match="policy"):
        ag.autocast_policy("fast")


@pytest.mark.parametrize(("low", "torch_low"), LOW)
@pytest.mark.parametrize("bias_by_keyword", [False, True])
def test_linear_keeps_a_float32_bias(device: str, low: str, torch_low, bias_by_keyword: bool) -> None:
    """autocast's "linear" policy: input and weight in the low dtype, a float32 bias added to the float32
    accumulator before the one rounding (torch rounds the bias first). The output is the float64 product
    of the rounded operands plus the exact bias, rounded once; the bias gradient is the float32 column sum
    of the low-precision output gradient, and no cast of the bias is recorded (the bias's own gradient
    sink is the Linear node's third edge)."""
    import genesis.nn.functional as F

    x, tx = pair((6, 40), device, seed=6)
    w, tw = pair((5, 40), device, seed=7)
    b, tb = pair((5,), device, seed=8)
    for t in (x, w, b):
        t.requires_grad_()
    with ag.autocast(device, dtype=low):
        out = F.linear(x, w, bias=b) if bias_by_keyword else F.linear(x, w, b)
    assert out.dtype.name == low
    assert out.grad_fn.next_functions[2][0] is b._grad_edge()[0]  # the bias itself: no Cast node between
    exact = tx.to(torch_low).double() @ tw.to(torch_low).double().T + tb.double()
    got = torch.from_numpy(out.detach().float().cpu().numpy())
    torch.testing.assert_close(got.double(), exact, rtol=torch.finfo(torch_low).eps, atol=1e-6)
    g, tg = pair((6, 5), device, low, seed=9)
    out.backward(g)
    assert b.grad.dtype == ag.float32 and w.grad.dtype == ag.float32 and x.grad.dtype == ag.float32
    torch.testing.assert_close(
        torch.from_numpy(b.grad.cpu().numpy()).double(), tg.double().sum(0), rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize(("low", "torch_low"), LOW)
def test_linear_casts_inside_and_gives_float32_gradients(device: str, low: str, torch_low) -> None:
    """Linear applies autocast itself (the "own" policy): the product reads the low-dtype casts, but the
    graph holds no Cast nodes (the weight's and the input's edges are their own), and the gradients of the
    float32 input and weight come straight from the backward products' float32 accumulators: the float64
    products of the low-dtype operands, to float32's precision (torch rounds them to the low dtype first)."""
    import genesis.nn.functional as F

    x0, tx = pair((3, 8, 96), device, seed=10)
    w, tw = pair((48, 96), device, seed=11)
    x0.requires_grad_()
    w.requires_grad_()
    x = x0 * 1.0  # a non-leaf input, as a LayerNorm's output is
    with ag.autocast(device, dtype=low):
        out = F.linear(x, w)
    assert out.dtype.name == low
    edges = [e[0] for e in out.grad_fn.next_functions]
    assert edges[0] is x.grad_fn and edges[1] is w._grad_edge()[0]  # no Cast node between
    g, tg = pair((3, 8, 48), device, low, seed=12)
    out.backward(g)
    assert x0.grad.dtype == ag.float32 and w.grad.dtype == ag.float32
    xl, wl, gl = tx.to(torch_low).double(), tw.to(torch_low).double(), tg.double()
    exact_gx, exact_gw = gl @ wl, gl.reshape(-1, 48).T @ xl.reshape(-1, 96)
    got_gx = torch.from_numpy(x0.grad.cpu().numpy()).double()
    got_gw = torch.from_numpy(w.grad.cpu().numpy()).double()
    torch.testing.assert_close(got_gx, exact_gx, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(got_gw, exact_gw, rtol=1e-5, atol=1e-4)
    # torch's autocast, for comparison: its gradients were rounded to the low dtype, so they differ from ours by
    # at most that rounding (half an ulp: eps / 2 relative)
    tx_, tw_ = tx.clone().requires_grad_(), tw.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch_low):
        torch.nn.functional.linear(tx_, tw_).backward(tg)
    torch.testing.assert_close(got_gw, tw_.grad.double(), rtol=torch.finfo(torch_low).eps / 2, atol=1e-5)


def test_linear_weight_cast_is_cached_and_refreshed(device: str) -> None:
    """A weight used by several Linear calls in one region is cast once; an in-place change (an optimizer
    step inside the region) or a new ``.data`` is seen by the next call; both uses' gradients add up."""
    import genesis.nn.functional as F

    x, tx = pair((4, 32), device, seed=13)
    w, tw = pair((16, 32), device, seed=14)
    w.requires_grad_()
    with ag.autocast(device, dtype="bfloat16"):
        first = F.linear(x, w)
        second = F.linear(x, w)
        with ag.no_grad():
            w.mul_(2.0)
        doubled = F.linear(x, w)
        w.data = (w.data * 0.5).astype(w.data.dtype)
        restored = F.linear(x, w)
    ref = tx.bfloat16().double() @ tw.bfloat16().double().T
    for got, scale in ((first, 1.0), (second, 1.0), (doubled, 2.0), (restored, 1.0)):
        # one bf16 rounding of the float32 accumulator: half an ulp, 2^-8 relative at most
        torch.testing.assert_close(torch.from_numpy(got.detach().float().cpu().numpy()).double(), ref * scale,
                                   rtol=2**-8, atol=1e-5)  # fmt: skip
    (first.float().sum() + second.float().sum()).backward()
    want = 2 * tx.bfloat16().double().sum(0).expand(16, 32)
    torch.testing.assert_close(torch.from_numpy(w.grad.cpu().numpy()).double(), want, rtol=1e-5, atol=1e-4)


def test_linear_under_autocast_has_a_second_derivative(device: str) -> None:
    """create_graph through an autocast Linear: the casts the op made inside get their history back, so a
    gradient penalty reaches the weight (against the same graph written with explicit casts)."""
    import genesis.nn.functional as F

    def penalty(explicit: bool):
        x, _ = pair((5, 24), device, seed=15)
        w, _ = pair((12, 24), device, seed=16)
        x.requires_grad_()
        w.requires_grad_()
        if explicit:
            out = F.linear(x.to(dtype="bfloat16"), w.to(dtype="bfloat16"))
        else:
            with ag.autocast(device, dtype="bfloat16"):
                out = F.linear(x, w)
        (gx,) = ag.grad((out.float() ** 2).sum(), [x], create_graph=True)
        (gx.float() ** 2).sum().backward()
        return w.grad, gx

    (ours, gx_ours), (theirs, gx_theirs) = penalty(False), penalty(True)
    assert gx_ours.dtype == ag.float32 and ours.dtype == ag.float32
    for a, b in ((ours, theirs), (gx_ours, gx_theirs)):
        a, b = (torch.from_numpy(t.detach().float().cpu().numpy()) for t in (a, b))
        assert a.abs().max() > 0
        torch.testing.assert_close(a, b, rtol=3e-2, atol=3e-2 * b.abs().max().item())


def test_linear_outside_autocast_refuses_a_bias_of_another_dtype(device: str) -> None:
    import genesis.nn.functional as F

    x, _ = pair((2, 4), device, "bfloat16")
    w, _ = pair((3, 4), device, "bfloat16")
    b, _ = pair((3,), device)
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Float and BFloat16"):
        F.linear(x, w, b)
