"""genesis.utils.checkpoint: gradients equal to the uncheckpointed model (dropout included, through the
restored RNG state), both variants, nested inputs and kwargs, checkpoint_sequential, torch's warnings and
errors, and fewer live bytes on cuda."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import genesis
import genesis.nn as nn
from device_support import requires_cuda
from genesis.utils.checkpoint import checkpoint, checkpoint_sequential


def _model(device):
    genesis.manual_seed(0)
    return nn.Sequential(
        nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.3), nn.Linear(16, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 3)
    ).to(device=device, dtype=genesis.float64)


def _grads(model, x, run):
    model.zero_grad()
    x.grad = None
    genesis.manual_seed(7)
    out = run(x)
    w = genesis.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=out.dtype, device=x.device)
    (out * w).sum().backward()
    return out.detach().cpu().numpy(), [p.grad.cpu().numpy() for p in model.parameters()], x.grad.cpu().numpy()


def _assert_same(a, b):
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-12)
    for ga, gb in zip(a[1], b[1], strict=True):
        np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a[2], b[2], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gradients_match_with_dropout(device, use_reentrant):
    model = _model(device)
    x = genesis.randn(5, 6, dtype=genesis.float64, device=device, requires_grad=True)
    plain = _grads(model, x, model)
    checkpointed = _grads(model, x, lambda x: checkpoint(model, x, use_reentrant=use_reentrant))
    _assert_same(plain, checkpointed)
    assert (plain[0] != 0).any()


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_matches(device, use_reentrant):
    model = _model(device)
    x = genesis.randn(5, 6, dtype=genesis.float64, device=device, requires_grad=True)
    plain = _grads(model, x, model)
    for segments in (1, 2, 3):
        seq = _grads(model, x, lambda x, n=segments: checkpoint_sequential(model, n, x, use_reentrant=use_reentrant))
        _assert_same(plain, seq)


def test_without_preserved_rng_the_masks_differ(device):
    model = _model(device)
    x = genesis.randn(64, 6, dtype=genesis.float64, device=device, requires_grad=True)
    plain = _grads(model, x, model)
    loose = _grads(model, x, lambda x: checkpoint(model, x, use_reentrant=False, preserve_rng_state=False))
    np.testing.assert_allclose(plain[0], loose[0])  # the forward is the same run
    assert not np.allclose(plain[2], loose[2])  # the recomputation drew other dropout masks


def test_non_reentrant_nested_inputs_kwargs_and_outputs(device):
    genesis.manual_seed(3)
    lin = nn.Linear(4, 4).to(device=device, dtype=genesis.float64)
    a = genesis.randn(2, 4, dtype=genesis.float64, device=device, requires_grad=True)
    b = genesis.randn(2, 4, dtype=genesis.float64, device=device)  # needs no grad

    def fn(pair, scale, *, shift):
        h = lin(pair[0] * pair[1]).tanh()
        return {"out": h * scale + shift["t"], "aux": [h.sum(), 3]}

    def loss_of(res):
        return (res["out"] ** 2).sum() + res["aux"][0]

    shift = genesis.randn(2, 4, dtype=genesis.float64, device=device, requires_grad=True)
    plain = loss_of(fn((a, b), 2.0, shift={"t": shift}))
    expected = genesis.autograd.grad(plain, [a, shift, lin.weight, lin.bias])
    res = checkpoint(fn, (a, b), 2.0, shift={"t": shift}, use_reentrant=False)
    assert res["aux"][1] == 3
    got_a, got_shift = genesis.autograd.grad(loss_of(res), [a, shift])
    for g, e in zip((got_a, got_shift, lin.weight.grad, lin.bias.grad), expected, strict=True):
        np.testing.assert_allclose(g.cpu().numpy(), e.cpu().numpy(), rtol=1e-12, atol=1e-12)


def test_non_reentrant_gives_parameter_gradients_when_no_input_requires_grad(device):
    model = _model(device).eval()
    x = genesis.randn(5, 6, dtype=genesis.float64, device=device)
    model(x).sum().backward()
    expected = [p.grad.cpu().numpy() for p in model.parameters()]
    model.zero_grad()
    checkpoint(model, x, use_reentrant=False).sum().backward()
    for p, e in zip(model.parameters(), expected, strict=True):
        np.testing.assert_allclose(p.grad.cpu().numpy(), e, rtol=1e-12, atol=1e-12)


def test_checkpoint_preserves_autocast(device):
    genesis.manual_seed(5)
    lin = nn.Linear(8, 8).to(device)
    x = genesis.randn(4, 8, device=device, requires_grad=True)
    with genesis.autocast(device, dtype=genesis.bfloat16):
        plain = lin(x)
        plain.float().sum().backward()
        expected = (lin.weight.grad.cpu().numpy(), x.grad.cpu().numpy())
        lin.zero_grad()
        x.grad = None
        out = checkpoint(lin, x, use_reentrant=False)
        assert out.dtype == genesis.bfloat16
    out.float().sum().backward()  # backward outside the region: the recomputation re-enters autocast
    np.testing.assert_array_equal(lin.weight.grad.cpu().numpy(), expected[0])
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expected[1])


def test_warnings_and_errors_as_torch():
    lin = nn.Linear(3, 3)
    x = genesis.randn(2, 3, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lin, x)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint_sequential(nn.Sequential(lin, nn.Linear(3, 3)), 2, x)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lin, genesis.randn(2, 3), use_reentrant=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda x, scale: x * scale, x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lin, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint_sequential(nn.Sequential(lin), 1, x, use_reentrant=False, foo=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lin, genesis.randn(2, 3), use_reentrant=False)  # no warning for the non-reentrant variant


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])  # live device bytes: a cuda measure
def test_checkpoint_keeps_fewer_live_bytes_on_cuda(device, use_reentrant):
    genesis.manual_seed(0)
    blocks = nn.Sequential(*[nn.Sequential(nn.Linear(128, 128), nn.GELU()) for _ in range(8)]).to(device)
    x = genesis.randn(64, 128, device=device, requires_grad=True)

    def live_after(run):
        gc.collect()  # last run's graph (a cycle) would otherwise free its 512-byte loss during this one
        genesis.cuda.synchronize()
        before = genesis.cuda.memory_allocated()
        out = run(x)
        genesis.cuda.synchronize()
        held = genesis.cuda.memory_allocated() - before
        out.sum().backward()
        return held

    # One (64, 128) float32 activation: 32 KiB, a multiple of the allocator's 512-byte granule, so the counts
    # below are exact. Each block keeps its Linear output (GELU's saved input) and its GELU output (the next
    # Linear's saved input; the last one is the result): 16 activations without checkpointing.
    activation = 64 * 128 * 4
    assert live_after(blocks) == 16 * activation
    # The whole stack checkpointed keeps its output only.
    assert live_after(lambda x: checkpoint(blocks, x, use_reentrant=use_reentrant)) == activation
    # Four segments of two blocks: the first three checkpointed keep their outputs (the next segment's saved
    # input); the last runs without checkpoint, as torch's, and keeps its two blocks' four activations.
    segmented = live_after(lambda x: checkpoint_sequential(blocks, 4, x, use_reentrant=use_reentrant))
    assert segmented == (3 + 4) * activation
