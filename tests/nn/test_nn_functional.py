"""nn.functional against torch.nn.functional in float64 (values and gradients), for what the layer
tests do not reach: the namespace itself, function-only arguments, pad / one_hot / normalize /
interpolate, and the library's own activation ops."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as TF
from nn_helpers import assert_close, check_forward_backward, g, to_torch

import genesis
import genesis.nn.functional as F


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


# Genesis extensions that torch.nn.functional does not have (documented as such in their docstrings and in
# packages/genesis-nn/README.md): the fused gated units, rotary embeddings and residual add + norm.
GENESIS_ONLY = {"swiglu", "geglu", "apply_rotary_emb", "add_rms_norm", "add_layer_norm"}  # fused ops torch lacks
# torch.nn.functional names newer than the oldest torch genesis is tested with (2.11, the GPU machine's).
SINCE_TORCH_2_13 = {"linear_cross_entropy"}


def test_namespace_exports_only_functions():
    assert "annotations" not in dir(F) and "Tensor" not in dir(F) and "arange" not in dir(F)
    assert sorted(F.__all__) == sorted(set(F.__all__))
    for name in F.__all__:
        known = hasattr(TF, name) or name in GENESIS_ONLY or name in SINCE_TORCH_2_13
        assert callable(getattr(F, name)) and known, name
    for name in GENESIS_ONLY:
        assert not hasattr(TF, name), f"torch now has F.{name}: match its signature and drop it from GENESIS_ONLY"
    namespace: dict = {}
    exec("from genesis.nn.functional import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(F.__all__)


def test_gelu_and_silu_are_the_library_ops(device):
    data = rand(4, 5) * 3
    x = g(data, device)
    assert torch.equal(to_torch(F.gelu(x)), to_torch(x.gelu()))
    assert torch.equal(to_torch(F.gelu(x, approximate="tanh")), to_torch(x.gelu("tanh")))
    assert torch.equal(to_torch(F.silu(x)), to_torch(x.silu()))
    tight = dict(rtol=1e-12, atol=1e-14)  # an erf approximation (1.5e-7) would not pass
    check_forward_backward(TF.gelu, F.gelu, [data], device, **tight)
    check_forward_backward(TF.silu, F.silu, [data], device, **tight)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="erf")


ACTIVATIONS = [
    ("relu", lambda f: f.relu, [rand(3, 4)]),
    ("relu6", lambda f: f.relu6, [rand(3, 4) * 5]),
    ("hardtanh", lambda f: lambda t: f.hardtanh(t, -0.5, 2.0), [rand(3, 4) * 2]),
    ("leaky-relu", lambda f: lambda t: f.leaky_relu(t, 0.3), [rand(3, 4)]),
    ("mish", lambda f: f.mish, [rand(3, 4) * 5]),
    ("softplus", lambda f: lambda t: f.softplus(t, 0.5, 5.0), [rand(3, 4) * 20]),
    ("logsigmoid", lambda f: f.logsigmoid, [rand(3, 4) * 50]),
    ("glu", lambda f: lambda t: f.glu(t, 0), [rand(4, 3)]),
    (
        "softmax-dtype",
        lambda f: lambda t: f.softmax(t, 1, dtype=torch.float64 if f is TF else genesis.float64),
        [torch.randn(3, 4)],
    ),
    ("softmin", lambda f: lambda t: f.softmin(t, 0), [rand(3, 4)]),
    ("log-softmax", lambda f: lambda t: f.log_softmax(t, -1), [rand(3, 4)]),
    ("tanh", lambda f: f.tanh, [rand(3, 4)]),
    ("sigmoid", lambda f: f.sigmoid, [rand(3, 4)]),
]


@pytest.mark.parametrize("fn,inputs", [pytest.param(f, i, id=n) for n, f, i in ACTIVATIONS])
def test_activation_matches_torch(device, fn, inputs):
    check_forward_backward(fn(TF), fn(F), inputs, device)


def test_implicit_softmax_dim_warns_and_picks_torchs_dim(device):
    data = rand(2, 3, 4)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(g(data, device))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(out, TF.softmax(data))


def test_inplace_forms_keep_gradients(device):
    data = rand(3, 4)
    for name, kwargs in [("leaky_relu", dict(negative_slope=0.2)), ("silu", {}), ("mish", {})]:

        def fn(f, t, name=name, kwargs=kwargs):
            y = t * 1.0
            out = getattr(f, name)(y, inplace=True, **kwargs)
            assert out is y
            return out

        check_forward_backward(lambda t: fn(TF, t), lambda t: fn(F, t), [data], device)


NORMS = [
    ("layer-norm", lambda f, t, w, b: f.layer_norm(t, (5,), w, b, eps=1e-3), [rand(3, 5), rand(5), rand(5)]),
    ("layer-norm-weight-only", lambda f, t, w: f.layer_norm(t, [2, 5], w), [rand(3, 2, 5), rand(2, 5)]),
    ("rms-norm", lambda f, t, w: f.rms_norm(t, (5,), w), [rand(3, 5), rand(5)]),
    ("rms-norm-float32-eps", lambda f, t: f.rms_norm(t, (5,)), [torch.randn(3, 5) * 1e-3]),
    ("group-norm", lambda f, t, w, b: f.group_norm(t, 2, w, b), [rand(3, 4, 5), rand(4), rand(4)]),
    ("normalize", lambda f, t: f.normalize(t), [rand(3, 5)]),
    ("normalize-p1", lambda f, t: f.normalize(t, p=1.0, dim=0), [rand(3, 5)]),
    ("normalize-inf", lambda f, t: f.normalize(t, p=float("inf"), dim=-1), [rand(3, 5)]),
    ("normalize-eps", lambda f, t: f.normalize(t, eps=10.0), [rand(3, 5)]),
    ("linear-no-bias", lambda f, t, w: f.linear(t, w), [rand(2, 3, 4), rand(5, 4)]),
    ("linear", lambda f, t, w, b: f.linear(t, w, b), [rand(3, 4), rand(5, 4), rand(5)]),
]


@pytest.mark.parametrize("fn,inputs", [pytest.param(f, i, id=n) for n, f, i in NORMS])
def test_function_matches_torch(device, fn, inputs):
    tol = {}
    if inputs[0].dtype == torch.float32:
        # A normalization's input gradient scales as 1 / rms(x): for the 1e-3-scaled input it is ~1e3,
        # and an element that cancels to a few units carries the fp32 roundoff of those 1e3-sized
        # terms. So the absolute floor scales the same way; for inputs of unit size it stays 1e-7.
        scale = float(inputs[0].pow(2).mean().sqrt())
        tol = dict(rtol=1e-5, atol=1e-7 if scale >= 0.1 else 1e-7 / scale)
    check_forward_backward(lambda *a: fn(TF, *a), lambda *a: fn(F, *a), inputs, device, **tol)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_function_matches_torch(device, training):
    mean, var = torch.randn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
    gmean, gvar = g(mean, device), g(var, device)
    check_forward_backward(
        lambda t, w, b: TF.batch_norm(t, mean, var, w, b, training, 0.2, 1e-3),
        lambda t, w, b: F.batch_norm(t, gmean, gvar, w, b, training, 0.2, 1e-3),
        [rand(4, 3, 2), rand(3), rand(3)],
        device,
    )
    assert_close(gmean, mean)
    assert_close(gvar, var)
    check_forward_backward(
        lambda t: TF.batch_norm(t, None, None, training=True),
        lambda t: F.batch_norm(t, None, None, training=True),
        [rand(4, 3)],
        device,
    )


PADS = [
    ("constant-last", dict(pad=(1, 2)), (2, 3, 4)),
    ("constant-value-2d", dict(pad=(1, 0, 2, 3), value=1.5), (2, 3, 4)),
    ("constant-negative", dict(pad=(-1, 2, 0, -1)), (2, 3, 4)),
    ("constant-all-dims", dict(pad=(1, 1, 1, 1, 1, 1)), (2, 3, 4)),
    ("reflect-1d", dict(pad=(2, 3), mode="reflect"), (2, 3, 5)),
    ("reflect-2d", dict(pad=(1, 2, 2, 1), mode="reflect"), (1, 2, 4, 5)),
    ("replicate-2d", dict(pad=(3, 1, 0, 2), mode="replicate"), (1, 2, 4, 5)),
    ("replicate-3d", dict(pad=(1, 1, 2, 0, 1, 2), mode="replicate"), (1, 2, 3, 4, 3)),
    ("circular-2d", dict(pad=(2, 1, 1, 3), mode="circular"), (1, 2, 4, 5)),
]


@pytest.mark.parametrize("kwargs,shape", [pytest.param(k, s, id=n) for n, k, s in PADS])
def test_pad_matches_torch(device, kwargs, shape):
    check_forward_backward(lambda t: TF.pad(t, **kwargs), lambda t: F.pad(t, **kwargs), [rand(*shape)], device)


def test_pad_errors(device):
    data = genesis.randn(1, 2, 3, device=device)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(data, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times"):
        F.pad(data, (1,) * 8)
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode mirror"):
        F.pad(data, (1, 1), mode="mirror")
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension"):
        F.pad(data, (3, 3), mode="reflect")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value argument'):
        F.pad(data, (1, 1), mode="reflect", value=2.0)


INTERPOLATIONS = [
    ("nearest-recompute", dict(scale_factor=1.7, recompute_scale_factor=True), (1, 2, 4, 5)),
    ("nearest-1d", dict(size=7), (2, 3, 4)),
    ("nearest-exact-scale", dict(scale_factor=2.5, mode="nearest-exact"), (1, 2, 3, 4)),
    ("bilinear-down", dict(size=(3, 2), mode="bilinear"), (1, 2, 7, 5)),
    ("bilinear-scale-pair", dict(scale_factor=(0.7, 2.0), mode="bilinear", align_corners=True), (1, 2, 7, 5)),
    ("linear", dict(scale_factor=3.0, mode="linear"), (2, 2, 4)),
    ("bicubic-up", dict(size=(9, 4), mode="bicubic"), (1, 2, 5, 3)),
    ("bicubic-scale", dict(scale_factor=(0.6, 2.5), mode="bicubic"), (2, 1, 7, 4)),
    ("bicubic-corners", dict(size=(4, 6), mode="bicubic", align_corners=True), (1, 2, 6, 5)),
    ("area-1d", dict(size=4, mode="area"), (2, 2, 11)),
    ("area-2d-uneven", dict(size=(3, 5), mode="area"), (1, 2, 7, 9)),
    ("area-3d", dict(scale_factor=0.5, mode="area"), (1, 1, 4, 6, 5)),
]


@pytest.mark.parametrize("kwargs,shape", [pytest.param(k, s, id=n) for n, k, s in INTERPOLATIONS])
def test_interpolate_matches_torch(device, kwargs, shape):
    check_forward_backward(
        lambda t: TF.interpolate(t, **kwargs), lambda t: F.interpolate(t, **kwargs), [rand(*shape)], device
    )


def test_interpolate_float32_picks_torchs_pixels(device):
    # float32 source positions: 5 / 3 and friends round the way torch's kernel rounds them
    for size in [(5, 3), (7, 11), (13, 6)]:
        data = torch.arange(4 * 9, dtype=torch.float32).reshape(1, 1, 4, 9)
        assert_close(F.interpolate(g(data, device), size=size), TF.interpolate(data, size=size))


def test_one_hot(device):
    idx = torch.tensor([[0, 3], [2, 1]])
    assert_close(F.one_hot(g(idx, device)), TF.one_hot(idx))
    assert_close(F.one_hot(g(idx, device), 6), TF.one_hot(idx, 6))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(g(idx, device), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(genesis.tensor([-1, 0], device=device))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(genesis.tensor([1.0], device=device))


def test_embedding_functions_match_torch(device):
    idx = torch.tensor([[1, 4, 4], [0, 4, 2]])
    check_forward_backward(
        lambda w: TF.embedding(idx, w, padding_idx=4),
        lambda w: F.embedding(g(idx, device), w, padding_idx=4),
        [rand(6, 3)],
        device,
    )
    flat, offsets = torch.tensor([1, 4, 4, 0, 4, 2]), torch.tensor([0, 1, 1, 4])
    check_forward_backward(
        lambda w, s: TF.embedding_bag(flat, w, offsets, mode="sum", per_sample_weights=s),
        lambda w, s: F.embedding_bag(g(flat, device), w, g(offsets, device), mode="sum", per_sample_weights=s),
        [rand(6, 3), rand(6)],
        device,
    )


def test_dropout_function(device):
    data = genesis.randn(50, device=device, requires_grad=True)
    assert F.dropout(data, 0.3, training=False) is data
    zero = F.dropout(data, 1.0)
    assert not to_torch(zero).any()
    zero.sum().backward()
    assert not to_torch(data.grad).any()
    with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got -0\.1"):
        F.dropout(data, -0.1)
    plain = genesis.ones(1000, device=device)
    assert F.dropout(plain, 0.5, inplace=True) is plain
    assert set(to_torch(plain).unique().tolist()) == {0.0, 2.0}
    leaf = genesis.ones(1000, device=device, requires_grad=True)
    hidden = leaf * 1.0
    F.dropout(hidden, 0.5, inplace=True).sum().backward()
    assert torch.equal(to_torch(leaf.grad), to_torch(hidden))  # d(mask * x)/dx = mask = the output here


def test_linear_shape_mismatch_names_both_shapes(device):
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(5x6 and 4x3\)"):
        F.linear(genesis.randn(5, 6, device=device), genesis.randn(3, 4, device=device))
