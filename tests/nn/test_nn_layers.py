"""Layers against torch.nn in float64: the same state dict (torch's, loaded into ours), forward values,
input and parameter gradients, reprs; containers; layer-specific behaviour and errors."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, check_module, g, module_repr, to_torch

import genesis
import genesis.nn as nn


def x(*shape):
    return lambda: [torch.randn(*shape, dtype=torch.float64)]


def indices(high, *shape):
    return lambda: [torch.randint(0, high, shape)]


# (id, build(nn) -> module, inputs() -> list of torch tensors). Modules are built the same way from torch.nn and
# genesis.nn, then cast with .double().
CASES = [
    ("linear", lambda nn: nn.Linear(5, 3), x(4, 5)),
    ("linear-3d-nobias", lambda nn: nn.Linear(5, 3, bias=False), x(2, 4, 5)),
    ("linear-1d-input", lambda nn: nn.Linear(5, 3), x(5)),
    ("identity", lambda nn: nn.Identity(3, unused=True), x(2, 3)),
    ("flatten", lambda nn: nn.Flatten(), x(2, 3, 4, 5)),
    ("flatten-range", lambda nn: nn.Flatten(0, 2), x(2, 3, 4, 5)),
    ("unflatten", lambda nn: nn.Unflatten(1, (3, 4)), x(2, 12, 5)),
    ("relu", lambda nn: nn.ReLU(), x(3, 7)),
    ("leaky-relu", lambda nn: nn.LeakyReLU(0.2), x(3, 7)),
    ("gelu", lambda nn: nn.GELU(), x(3, 7)),
    ("gelu-tanh", lambda nn: nn.GELU(approximate="tanh"), x(3, 7)),
    ("silu", lambda nn: nn.SiLU(), x(3, 7)),
    ("mish", lambda nn: nn.Mish(), lambda: [torch.randn(3, 7, dtype=torch.float64) * 10]),
    ("tanh", lambda nn: nn.Tanh(), x(3, 7)),
    ("sigmoid", lambda nn: nn.Sigmoid(), x(3, 7)),
    ("softplus", lambda nn: nn.Softplus(), lambda: [torch.randn(3, 7, dtype=torch.float64) * 30]),
    (
        "softplus-beta-threshold",
        lambda nn: nn.Softplus(beta=2.0, threshold=3.0),
        lambda: [torch.randn(3, 7, dtype=torch.float64) * 3],
    ),
    ("softmax", lambda nn: nn.Softmax(dim=1), x(3, 7, 2)),
    ("log-softmax", lambda nn: nn.LogSoftmax(dim=-1), x(3, 7)),
    ("embedding", lambda nn: nn.Embedding(10, 4), indices(10, 3, 5)),
    (
        "embedding-padding",
        lambda nn: nn.Embedding(10, 4, padding_idx=2),
        lambda: [torch.tensor([[2, 1, 2], [9, 2, 0]])],
    ),
    (
        "embedding-padding-negative",
        lambda nn: nn.Embedding(10, 4, padding_idx=-1),
        lambda: [torch.tensor([[9, 1, 9], [9, 2, 0]])],
    ),
    (
        "embedding-scale-grad",
        lambda nn: nn.Embedding(6, 3, scale_grad_by_freq=True),
        lambda: [torch.tensor([1, 1, 1, 4, 5, 4])],
    ),
    ("embedding-bag-2d-mean", lambda nn: nn.EmbeddingBag(10, 4), indices(10, 3, 5)),
    (
        "embedding-bag-2d-sum-padding",
        lambda nn: nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0),
        lambda: [torch.tensor([[0, 3, 3], [0, 0, 0], [1, 2, 0]])],
    ),
    (
        "embedding-bag-offsets-mean",
        lambda nn: nn.EmbeddingBag(10, 4, padding_idx=3),
        lambda: [torch.tensor([1, 3, 4, 3, 9, 9, 0]), torch.tensor([0, 2, 2, 5])],
    ),
    (
        "embedding-bag-last-offset",
        lambda nn: nn.EmbeddingBag(10, 4, mode="sum", include_last_offset=True),
        lambda: [torch.tensor([1, 3, 4, 3, 9, 9, 0]), torch.tensor([0, 3, 3, 7])],
    ),
    (
        "embedding-bag-per-sample-weights",
        lambda nn: nn.EmbeddingBag(10, 4, mode="sum"),
        lambda: [torch.tensor([1, 3, 4, 3, 9]), torch.tensor([0, 1, 3]), torch.randn(5, dtype=torch.float64)],
    ),
    ("embedding-bag-2d-max", lambda nn: nn.EmbeddingBag(10, 4, mode="max"), indices(10, 3, 5)),
    (
        "embedding-bag-offsets-max-padding-empty-bags",
        lambda nn: nn.EmbeddingBag(10, 4, mode="max", padding_idx=3),
        lambda: [torch.tensor([1, 3, 4, 3, 9, 3, 0]), torch.tensor([0, 2, 2, 5, 6])],
    ),
    ("layer-norm", lambda nn: nn.LayerNorm(6), x(3, 4, 6)),
    ("layer-norm-2d-shape", lambda nn: nn.LayerNorm((4, 6), eps=1e-3), x(3, 4, 6)),
    ("layer-norm-no-affine", lambda nn: nn.LayerNorm(6, elementwise_affine=False), x(3, 6)),
    ("layer-norm-no-bias", lambda nn: nn.LayerNorm(6, bias=False), x(3, 6)),
    ("rms-norm", lambda nn: nn.RMSNorm(6), x(3, 4, 6)),
    ("rms-norm-eps", lambda nn: nn.RMSNorm([4, 6], eps=1e-2), x(3, 4, 6)),
    ("rms-norm-no-affine", lambda nn: nn.RMSNorm(6, elementwise_affine=False), x(3, 6)),
    ("group-norm", lambda nn: nn.GroupNorm(3, 6), x(2, 6, 5)),
    ("group-norm-4d", lambda nn: nn.GroupNorm(2, 4, eps=1e-3), x(2, 4, 3, 3)),
    ("group-norm-no-affine", lambda nn: nn.GroupNorm(1, 4, affine=False), x(2, 4, 3)),
    ("batch-norm-1d", lambda nn: nn.BatchNorm1d(5), x(8, 5)),
    ("batch-norm-1d-3d", lambda nn: nn.BatchNorm1d(5, momentum=0.3), x(4, 5, 3)),
    ("batch-norm-2d", lambda nn: nn.BatchNorm2d(3), x(4, 3, 2, 5)),
    ("batch-norm-2d-no-affine", lambda nn: nn.BatchNorm2d(3, affine=False), x(4, 3, 2, 2)),
    ("batch-norm-no-stats", lambda nn: nn.BatchNorm1d(5, track_running_stats=False), x(6, 5)),
    ("dropout-zero", lambda nn: nn.Dropout(0.0), x(3, 4)),
]


def _pair(build):
    return build(torch.nn).double(), build(nn).double()


@pytest.mark.parametrize("build,inputs", [pytest.param(b, i, id=n) for n, b, i in CASES])
def test_layer_matches_torch(device, build, inputs):
    tmod, gmod = _pair(build)
    assert module_repr(gmod) == repr(tmod)
    gmod.to(device)
    check_module(tmod, gmod, inputs(), device)


@pytest.mark.parametrize("build,inputs", [pytest.param(b, i, id=n) for n, b, i in CASES if "batch-norm" in n])
def test_batch_norm_running_stats_and_eval_match_torch(device, build, inputs):
    tmod, gmod = _pair(build)
    gmod.to(device)
    gmod.load_state_dict(tmod.state_dict())
    for _ in range(3):
        data = inputs()[0] * 3 + 1
        assert_close(gmod(g(data, device)), tmod(data))
    for name, tb in tmod.named_buffers():
        assert_close(gmod.get_buffer(name), tb)
    tmod.eval(), gmod.eval()
    check_module(tmod, gmod, inputs(), device)


@pytest.mark.parametrize("cls", ["BatchNorm1d", "BatchNorm2d"])
def test_batch_norm_cumulative_average_when_momentum_is_none(device, cls):
    tmod, gmod = getattr(torch.nn, cls)(3, momentum=None).double(), getattr(nn, cls)(3, momentum=None).double()
    gmod.to(device)
    shape = (5, 3) if cls == "BatchNorm1d" else (5, 3, 2, 2)
    for _ in range(4):
        data = torch.randn(shape, dtype=torch.float64) * 2 - 1
        gmod(g(data, device)), tmod(data)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(gmod, name), getattr(tmod, name))


def test_batch_norm_errors(device):
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3).to(device)(genesis.randn(2, 3, device=device))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3).to(device)(genesis.randn(2, 3, 1, 1, device=device))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3).to(device)(genesis.randn(1, 3, device=device))
    assert [n for n, _ in nn.BatchNorm2d(3).named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert nn.BatchNorm2d(3).num_batches_tracked.dtype == genesis.int64


def test_embedding_padding_row_starts_at_zero_and_gets_no_gradient(device):
    emb = nn.Embedding(7, 3, padding_idx=4).to(device)
    assert not to_torch(emb.weight[4]).any() and to_torch(emb.weight[3]).any()
    emb(genesis.tensor([[4, 1], [4, 4]], device=device)).sum().backward()
    grad = to_torch(emb.weight.grad)
    assert not grad[4].any() and (grad[1] == 1).all() and not grad[0].any()


def test_embedding_max_norm_renormalises_looked_up_rows_like_torch(device):
    tmod, gmod = _pair(lambda nn: nn.Embedding(6, 4, max_norm=1.0, norm_type=1.5))
    with torch.no_grad():
        tmod.weight.mul_(3)
    gmod.to(device)
    idx = torch.tensor([[0, 2], [2, 5]])
    check_module(tmod, gmod, [idx], device)
    assert_close(gmod.weight, tmod.weight)  # rows 0, 2, 5 scaled in place, the others untouched


def test_embedding_from_pretrained(device):
    weights = genesis.randn(5, 3, dtype=genesis.float64, device=device)
    frozen = nn.Embedding.from_pretrained(weights)
    assert not frozen.weight.requires_grad and frozen.weight.data_ptr() == weights.data_ptr()
    trainable = nn.Embedding.from_pretrained(weights, freeze=False, padding_idx=1)
    assert trainable.weight.requires_grad and trainable.padding_idx == 1
    out = trainable(genesis.tensor([4, 1], device=device))
    assert_close(out, to_torch(weights)[[4, 1]])
    bag = nn.EmbeddingBag.from_pretrained(weights, mode="sum")
    assert_close(bag(genesis.tensor([[0, 1]], device=device)), to_torch(weights)[:2].sum(0, keepdim=True))
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(genesis.randn(5))


def test_embedding_errors(device):
    emb = nn.Embedding(4, 2).to(device)
    with pytest.raises(RuntimeError, match="Long, Int"):
        emb(genesis.tensor([0.0, 1.0], device=device))
    with pytest.raises(IndexError):
        emb(genesis.tensor([0, 4], device=device))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(4, 2, padding_idx=4)
    with pytest.raises(ValueError, match="offsets has to be None"):
        nn.EmbeddingBag(4, 2).to(device)(genesis.tensor([[0, 1]], device=device), genesis.tensor([0], device=device))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        nn.EmbeddingBag(4, 2).to(device)(
            genesis.tensor([[0, 1]], device=device), per_sample_weights=genesis.ones(1, 2, device=device)
        )


def test_norm_errors(device):
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        nn.LayerNorm(4).to(device)(genesis.randn(2, 3, device=device))
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(2, 5)
    with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got 1\.5"):
        nn.Dropout(1.5)


def test_dropout_train_and_eval(device):
    genesis.manual_seed(0)
    layer = nn.Dropout(0.5)
    ones = genesis.ones(4000, device=device)
    y = to_torch(layer(ones))
    assert set(y.unique().tolist()) == {0.0, 2.0}
    assert abs((y == 0).double().mean().item() - 0.5) < 0.05
    layer.eval()
    assert layer(ones) is ones


def test_dropout_gradient_follows_the_mask(device):
    genesis.manual_seed(1)
    inp = genesis.randn(200, device=device, requires_grad=True)
    out = nn.Dropout(0.25)(inp)
    out.sum().backward()
    kept = to_torch(out) != 0
    assert_close(inp.grad, kept.to(torch.float32) / 0.75)


def test_inplace_activations_write_their_input(device):
    for layer, ref in [
        (nn.ReLU(inplace=True), torch.relu),
        (nn.LeakyReLU(0.1, inplace=True), lambda t: torch.nn.functional.leaky_relu(t, 0.1)),
    ]:
        data = torch.randn(10)
        gx = g(data, device)
        assert layer(gx) is gx
        assert_close(gx, ref(data))
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(0.1, inplace=True)) == "LeakyReLU(negative_slope=0.1, inplace=True)"


# ---------------------------------------------------------------- containers
def test_sequential_indexing_slicing_and_editing():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [a, b]
    assert [n for n, _ in head.named_children()] == ["0", "1"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    seq.append(nn.Tanh())
    assert len(seq) == 4 and isinstance(seq[3], nn.Tanh)
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"] and seq[1] is c
    seq.insert(1, b)
    assert list(seq)[:3] == [a, b, c]
    seq[3] = nn.Sigmoid()
    assert isinstance(seq[3], nn.Sigmoid)
    assert seq.pop(3).__class__ is nn.Sigmoid and len(seq) == 3
    assert len(seq + nn.Sequential(nn.ReLU())) == 4 and len(seq * 2) == 6
    seq.extend([nn.ReLU()])
    assert len(seq) == 4
    out = seq(genesis.randn(5, 2))
    assert out.shape == (5, 1)


def test_sequential_from_ordered_dict_keeps_names():
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    tseq = torch.nn.Sequential(OrderedDict([("fc", torch.nn.Linear(2, 2)), ("act", torch.nn.ReLU())]))
    assert list(seq.state_dict()) == list(tseq.state_dict()) == ["fc.weight", "fc.bias"]
    assert module_repr(seq) == repr(tseq)
    assert isinstance(seq[:1], nn.Sequential) and [n for n, _ in seq[:1].named_children()] == ["fc"]


def test_module_list_and_repr_matches_torch():
    def build(lib):
        layers = lib.nn.ModuleList([lib.nn.Linear(3, 3) for _ in range(3)])
        layers.append(lib.nn.ReLU())
        layers.extend([lib.nn.Linear(3, 3)])
        layers.insert(0, lib.nn.Tanh())
        return layers

    layers, tlayers = build(genesis), build(torch)
    assert module_repr(layers) == repr(tlayers)
    assert [n for n, _ in layers.named_parameters()] == [n for n, _ in tlayers.named_parameters()]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    del layers[0]
    assert isinstance(layers[0], nn.Linear) and len(layers) == 5
    layers += [nn.ReLU()]
    assert len(layers) == 6 and len(layers + [nn.ReLU()]) == 7
    with pytest.raises(TypeError, match=r"ModuleList\.extend should be called with an iterable"):
        layers.extend(nn.ReLU)
    with pytest.raises(NotImplementedError, match="forward"):
        layers(genesis.randn(2, 3))
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList()) == "ModuleList()"


def test_module_dict():
    md = nn.ModuleDict({"b": nn.Linear(2, 2), "a": nn.ReLU()})
    tmd = torch.nn.ModuleDict({"b": torch.nn.Linear(2, 2), "a": torch.nn.ReLU()})
    assert list(md) == list(tmd) == ["b", "a"] and "a" in md and len(md) == 2
    assert module_repr(md) == repr(tmd)
    md["c"] = nn.Tanh()
    md.update([("d", nn.Sigmoid())])
    assert list(md.keys()) == ["b", "a", "c", "d"] and isinstance(md.pop("c"), nn.Tanh)
    assert [n for n, _ in md.named_parameters()] == ["b.weight", "b.bias"]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        md.update([("x",)])
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict_register_like_torch():
    plist = nn.ParameterList([genesis.randn(2), nn.Parameter(genesis.randn(3, 4))])
    tlist = torch.nn.ParameterList([torch.randn(2), torch.nn.Parameter(torch.randn(3, 4))])
    assert all(isinstance(p, nn.Parameter) for p in plist)
    plist.append(genesis.randn(1))
    tlist.append(torch.randn(1))
    assert [n for n, _ in plist.named_parameters()] == [n for n, _ in tlist.named_parameters()] == ["0", "1", "2"]
    assert repr(plist) == repr(tlist).replace("torch.", "genesis.")
    assert len(plist) == 3 and plist[-1].shape == (1,) and len(plist[:2]) == 2
    pdict = nn.ParameterDict({"w": genesis.randn(2), "a": genesis.randn(3)})
    tdict = torch.nn.ParameterDict({"w": torch.randn(2), "a": torch.randn(3)})
    # torch's ParameterDict names the legacy tensor type (torch.FloatTensor); ours the dtype, as ParameterList.
    assert list(pdict) == list(tdict) and repr(pdict) == repr(tdict).replace("torch.FloatTensor", "genesis.float32")
    pdict["z"] = genesis.randn(1)
    assert isinstance(pdict["z"], nn.Parameter) and "z" in pdict and pdict.get("q") is None
    assert [n for n, _ in pdict.named_parameters()] == list(pdict.keys())
    assert pdict.pop("z").shape == (1,) and len(pdict) == 2
    with pytest.raises(TypeError, match="cannot be used as a key"):
        pdict[3] = genesis.randn(1)
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        plist()


def test_linear_init_bounds():
    layer = nn.Linear(16, 8)
    bound = 1 / 16**0.5  # kaiming_uniform_(a=sqrt(5)) on fan_in, and the bias from the same bound
    weights = to_torch(layer.weight)
    assert weights.abs().max() <= bound and weights.std() > bound / 4
    assert to_torch(layer.bias).abs().max() <= bound


def _mlp(lib):
    return lib.nn.Sequential(
        lib.nn.Linear(6, 8), lib.nn.ReLU(), lib.nn.Linear(8, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3)
    )


def test_sequential_mlp_with_cross_entropy_float32_matches_torch(device):
    tmodel, model = _mlp(torch), _mlp(genesis).to(device)
    model.load_state_dict(tmodel.state_dict())
    y = torch.randint(0, 3, (7,))
    check_forward_backward(
        lambda t: torch.nn.functional.cross_entropy(tmodel(t), y),
        lambda t: nn.functional.cross_entropy(model(t), g(y, device)),
        [torch.randn(7, 6)],
        device,
        rtol=1e-5,
        atol=1e-6,
    )
    for (_, p), (_, tp) in zip(model.named_parameters(), tmodel.named_parameters(), strict=True):
        assert_close(p.grad, tp.grad, rtol=1e-5, atol=1e-6)
