"""PixelShuffle / PixelUnshuffle, ChannelShuffle, Bilinear, CosineSimilarity, PairwiseDistance, pdist and
nn.Buffer against torch in float64: values, gradients, reprs, state dicts, torch's errors, and the
top-level forms (genesis.pixel_shuffle, genesis.pdist, ...)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as TF
from nn_helpers import assert_close, check_forward_backward, check_module, g, module_repr, to_torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


SHUFFLES = [
    ("pixel-shuffle", lambda f: lambda t: f.pixel_shuffle(t, 2), (2, 8, 3, 4)),
    ("pixel-shuffle-unbatched", lambda f: lambda t: f.pixel_shuffle(t, 3), (9, 2, 2)),
    ("pixel-shuffle-2-batch-dims", lambda f: lambda t: f.pixel_shuffle(t, 2), (2, 1, 4, 2, 3)),
    ("pixel-unshuffle", lambda f: lambda t: f.pixel_unshuffle(t, 2), (2, 3, 4, 6)),
    ("pixel-unshuffle-unbatched", lambda f: lambda t: f.pixel_unshuffle(t, 3), (2, 3, 6)),
    ("channel-shuffle", lambda f: lambda t: f.channel_shuffle(t, 3), (2, 6, 4)),
    ("channel-shuffle-4d", lambda f: lambda t: f.channel_shuffle(t, 2), (2, 4, 3, 2)),
]


@pytest.mark.parametrize("fn,shape", [pytest.param(f, s, id=n) for n, f, s in SHUFFLES])
def test_shuffles_match_torch(device, fn, shape):
    check_forward_backward(fn(TF), fn(F), [rand(*shape)], device)


def test_native_channel_shuffle_is_channel_shuffle(device):
    data = rand(2, 6, 3)
    x = g(data, device, requires_grad=True)
    out = F.native_channel_shuffle(x, 3)
    assert_close(out, torch.native_channel_shuffle(data, 3))
    out.backward(g(data, device))  # torch's has no derivative; ours is channel_shuffle's: the inverse shuffle
    assert_close(x.grad, TF.channel_shuffle(data, 2))


def test_pixel_unshuffle_inverts_pixel_shuffle(device):
    x = g(rand(2, 12, 3, 5), device)
    assert torch.equal(to_torch(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2)), to_torch(x))


def test_shuffle_errors_match_torch(device):
    with pytest.raises(RuntimeError, match=r"pixel_shuffle expects input to have at least 3 dimensions, but got input"):
        F.pixel_shuffle(g(rand(4, 4), device), 2)
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=5 is not divisible by 4"):
        F.pixel_shuffle(g(rand(5, 4, 4), device), 2)
    with pytest.raises(RuntimeError, match="pixel_shuffle expects a positive upscale_factor, but got 0"):
        F.pixel_shuffle(g(rand(4, 4, 4), device), 0)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle expects height to be divisible by downscale_factor"):
        F.pixel_unshuffle(g(rand(4, 5, 4), device), 2)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle expects width to be divisible by downscale_factor"):
        F.pixel_unshuffle(g(rand(4, 4, 5), device), 2)
    with pytest.raises(RuntimeError, match="pixel_unshuffle expects a positive downscale_factor, but got -1"):
        F.pixel_unshuffle(g(rand(4, 4, 4), device), -1)
    x = g(rand(2, 3, 4, 5), device)
    with pytest.raises(
        RuntimeError, match=r"Number of groups to divide channels in must be positive\. Value of groups:0"
    ):
        F.channel_shuffle(x, 0)
    with pytest.raises(
        RuntimeError, match=r"Number of channels must be divisible by groups\. Got 3 channels and 2 groups"
    ):
        F.native_channel_shuffle(x, 2)
    with pytest.raises(
        RuntimeError, match=r"channel_shuffle expects input with > 2 dims, but got input with sizes \[4, 4\]"
    ):
        F.channel_shuffle(g(rand(4, 4), device), 2)
    with pytest.raises(TypeError, match="must be int, not float"):
        F.channel_shuffle(x, 1.5)


BILINEAR = [
    ("bias", [(4, 3), (4, 5), (6, 3, 5), (6,)]),
    ("no-bias", [(4, 3), (4, 5), (6, 3, 5)]),
    ("3d", [(2, 4, 3), (2, 4, 5), (6, 3, 5), (6,)]),
    ("1d", [(3,), (5,), (2, 3, 5), (2,)]),
]


@pytest.mark.parametrize("shapes", [pytest.param(s, id=n) for n, s in BILINEAR])
def test_bilinear_matches_torch(device, shapes):
    check_forward_backward(TF.bilinear, F.bilinear, [rand(*s) for s in shapes], device)


def test_bilinear_errors_match_torch(device):
    a, b, w = g(rand(2, 3), device), g(rand(2, 4), device), g(rand(5, 3, 4), device)
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input dimensions do not match: got 3 and 2"):
        F.bilinear(g(rand(2, 2, 3), device), b, w)
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 2 and 3"):
        F.bilinear(a, g(rand(3, 4), device), w)
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 4 but expected 5"):
        F.bilinear(a, b, g(rand(5, 3, 5), device))
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 3 but expected 2"):
        F.bilinear(a, b, g(rand(5, 2, 4), device))
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 4 but expected 5"):
        F.bilinear(a, b, w, g(rand(4), device))
    with pytest.raises(RuntimeError, match="All tensors must have the same dtype, got input1: float, input2: double"):
        F.bilinear(a.float(), b, w.float())


MODULES = [
    ("pixel-shuffle", lambda m: m.PixelShuffle(2), [(2, 8, 2, 3)]),
    ("pixel-unshuffle", lambda m: m.PixelUnshuffle(2), [(2, 2, 4, 6)]),
    ("channel-shuffle", lambda m: m.ChannelShuffle(2), [(2, 4, 3)]),
    ("bilinear", lambda m: m.Bilinear(3, 4, 5), [(6, 3), (6, 4)]),
    ("bilinear-no-bias", lambda m: m.Bilinear(3, 4, 2, bias=False), [(2, 6, 3), (2, 6, 4)]),
    ("cosine-similarity", lambda m: m.CosineSimilarity(), [(4, 5, 3), (4, 5, 3)]),
    ("cosine-similarity-dim", lambda m: m.CosineSimilarity(dim=-1, eps=1e-6), [(4, 5), (1, 5)]),
    ("pairwise-distance", lambda m: m.PairwiseDistance(), [(4, 5), (4, 5)]),
    ("pairwise-distance-p1-keepdim", lambda m: m.PairwiseDistance(1.0, 1e-3, True), [(4, 5), (5,)]),
]


@pytest.mark.parametrize("build,shapes", [pytest.param(b, s, id=n) for n, b, s in MODULES])
def test_module_matches_torch(device, build, shapes):
    tmod, gmod = build(torch.nn).double(), build(nn).double()
    assert module_repr(gmod) == repr(tmod)
    gmod.to(device)
    check_module(tmod, gmod, [rand(*s) for s in shapes], device)


def test_bilinear_initialisation_and_state_dict():
    layer = nn.Bilinear(4, 3, 2)
    assert list(layer.state_dict()) == list(torch.nn.Bilinear(4, 3, 2).state_dict()) == ["weight", "bias"]
    assert tuple(layer.weight.shape) == (2, 4, 3)
    bound = 1 / 4**0.5
    for p in (layer.weight, layer.bias):
        values = to_torch(p)
        assert values.abs().max() <= bound and values.std() > 0
    assert nn.Bilinear(4, 3, 2, bias=False).bias is None
    assert nn.Bilinear(2, 2, 2, dtype=genesis.float64).weight.dtype == genesis.float64


COSINE = [
    ("dim1", dict(), [(4, 5, 3), (4, 5, 3)]),
    ("broadcast", dict(dim=-1), [(4, 5), (5,)]),
    ("broadcast-along-dim", dict(dim=1), [(4, 1), (4, 6)]),
    ("eps", dict(dim=0, eps=1e-3), [(3, 4), (3, 4)]),
]


@pytest.mark.parametrize("kwargs,shapes", [pytest.param(k, s, id=n) for n, k, s in COSINE])
def test_cosine_similarity_matches_torch(device, kwargs, shapes):
    check_forward_backward(
        lambda a, b: TF.cosine_similarity(a, b, **kwargs),
        lambda a, b: F.cosine_similarity(a, b, **kwargs),
        [rand(*s) for s in shapes],
        device,
    )


def test_cosine_similarity_of_a_zero_vector_is_zero(device):
    a, b = torch.zeros(2, 3, dtype=torch.float64), rand(2, 3)
    assert_close(F.cosine_similarity(g(a, device), g(b, device)), TF.cosine_similarity(a, b))
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet common dtype is Long"):
        F.cosine_similarity(genesis.arange(3, device=device), genesis.arange(3, device=device), dim=0)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\)"):
        F.cosine_similarity(g(rand(2, 3), device), g(rand(4), device))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.0])
def test_pairwise_distance_matches_torch(device, p):
    check_forward_backward(
        lambda a, b: TF.pairwise_distance(a, b, p),
        lambda a, b: F.pairwise_distance(a, b, p),
        [rand(4, 5), rand(4, 5)],
        device,
    )
    check_forward_backward(
        lambda a, b: TF.pairwise_distance(a, b, p, 1e-2, True),
        lambda a, b: F.pairwise_distance(a, b, p, 1e-2, True),
        [rand(5), rand(3, 5)],
        device,
    )


@pytest.mark.parametrize("p", [2.0, 1.0, 1.5, float("inf")])
def test_pdist_matches_torch(device, p):
    check_forward_backward(lambda t: TF.pdist(t, p), lambda t: F.pdist(t, p), [rand(5, 3)], device)


def test_pdist_edges_and_errors(device):
    assert tuple(F.pdist(g(rand(1, 3), device)).shape) == (0,)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(g(rand(3), device))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(g(rand(3, 3), device), -1)
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        F.pdist(genesis.arange(6, device=device).reshape(2, 3))


def test_top_level_names_match_torch(device):
    data = rand(2, 8, 3, 4)
    x = g(data, device)
    for name, args in (
        ("pixel_shuffle", (2,)),
        ("pixel_unshuffle", (1,)),
        ("channel_shuffle", (4,)),
        ("native_channel_shuffle", (2,)),
    ):
        assert_close(getattr(genesis, name)(x, *args), getattr(torch, name)(data, *args))
    a, b = rand(4, 5), rand(4, 5)
    assert_close(genesis.pdist(g(a, device)), torch.pdist(a))
    assert_close(genesis.pairwise_distance(g(a, device), g(b, device)), torch.pairwise_distance(a, b))
    assert_close(genesis.cosine_similarity(g(a, device), g(b, device)), torch.cosine_similarity(a, b))


class _WithBuffers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.kept = nn.Buffer(genesis.ones(3))
        self.scratch = nn.Buffer(genesis.zeros(2), persistent=False)
        self.plain = genesis.ones(1)  # a plain tensor attribute: not state


def test_buffer_registers_on_assignment():
    module = _WithBuffers()
    assert [n for n, _ in module.named_buffers()] == ["kept", "scratch"]
    assert list(module.state_dict()) == ["kept"]
    assert isinstance(module.kept, nn.Buffer) and isinstance(module.kept, genesis.Tensor)
    assert module.kept.persistent and not module.scratch.persistent
    module.scratch = nn.Buffer(genesis.ones(2))  # re-registered with the new flag
    assert list(module.state_dict()) == ["kept", "scratch"]
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        module.plain = nn.Buffer(genesis.ones(1))
    with pytest.raises(TypeError, match="cannot assign"):
        module.register_parameter("weight", nn.Parameter(genesis.ones(1)))
        module.weight = nn.Buffer(genesis.ones(1))
    torch_module = torch.nn.Module()
    torch_module.kept = torch.nn.Buffer(torch.ones(3))
    torch_module.scratch = torch.nn.Buffer(torch.zeros(2), persistent=False)
    assert list(torch_module.state_dict()) == ["kept"]


def test_buffer_shares_memory_and_keeps_requires_grad():
    data = genesis.zeros(3)
    buffer = nn.Buffer(data)
    data.add_(1.0)
    assert to_torch(buffer).tolist() == [1.0, 1.0, 1.0]
    source = genesis.ones(2, requires_grad=True)
    assert nn.Buffer(source).requires_grad and nn.Buffer(source * 2).is_leaf
    assert tuple(nn.Buffer().shape) == (0,)
