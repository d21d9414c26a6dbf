"""nn modules and losses against torch.nn, and the Module API."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, copy_weights, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
from device_support import requires_cuda


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("in_shape", [(5, 4), (2, 3, 4), (4,)], ids=str)
def test_linear_matches_torch(device, bias, in_shape):
    torch_layer = torch.nn.Linear(4, 3, bias=bias)
    layer = nn.Linear(4, 3, bias=bias, device=device)
    copy_weights(torch_layer, layer)
    x = torch.randn(in_shape)  # raw data: needs no gradient (the wrong-input-gradient bug class)
    out, tout = layer(g(x, device)), torch_layer(x)
    assert_close(out, tout)
    w = torch.randn(tout.shape)
    (out * g(w, device)).sum().backward()
    (tout * w).sum().backward()
    assert_close(layer.weight.grad, torch_layer.weight.grad)
    if bias:
        assert_close(layer.bias.grad, torch_layer.bias.grad)
    else:
        assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]


def test_linear_input_gradient_and_init_bounds(device):
    layer = nn.Linear(16, 8, device=device)
    bound = 1 / 16 ** 0.5
    weights = torch.from_numpy(layer.weight.detach().cpu().numpy())
    assert weights.abs().max() <= bound and weights.std() > bound / 4
    assert torch.from_numpy(layer.bias.detach().cpu().numpy()).abs().max() <= bound
    torch_layer = torch.nn.Linear(16, 8)
    copy_weights(torch_layer, layer)
    x = torch.randn(3, 16, requires_grad=True)
    gx = g(x, device, requires_grad=True)
    layer(gx).tanh().sum().backward()
    torch_layer(x).tanh().sum().backward()
    assert_close(gx.grad, x.grad)


def test_linear_shape_mismatch_names_both_shapes(device):
    layer = nn.Linear(4, 3, device=device)
    with pytest.raises(RuntimeError, match=r"5x6.*4x3"):
        layer(genesis.randn(5, 6, device=device))


def _mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.ReLU(), lib.nn.Linear(8, 8), lib.nn.Tanh(),
                             lib.nn.Linear(8, 3))


def test_sequential_mlp_matches_torch(device):
    torch_model, model = _mlp(torch), _mlp(genesis).to(device)
    copy_weights(torch_model, model)
    assert len(model) == 5 and isinstance(model[1], nn.ReLU)
    x = torch.randn(7, 6)
    out, tout = model(g(x, device)), torch_model(x)
    assert_close(out, tout)
    y = torch.randint(0, 3, (7,))
    nn.CrossEntropyLoss()(out, g(y, device)).backward()
    torch.nn.CrossEntropyLoss()(tout, y).backward()
    for (name, p), (_, tp) in zip(model.named_parameters(), torch_model.named_parameters()):
        assert_close(p.grad, tp.grad), name


LOSS_CASES = [
    ("ce-mean", dict(), dict()),
    ("ce-sum", dict(reduction="sum"), dict()),
    ("ce-none", dict(reduction="none"), dict()),
    ("ce-ignore", dict(ignore_index=1), dict(ignore=1)),
    ("ce-ignore-sum", dict(ignore_index=-100, reduction="sum"), dict(ignore=-100)),
    ("ce-smoothing", dict(label_smoothing=0.2), dict()),
    ("ce-smoothing-sum", dict(label_smoothing=0.1, reduction="sum"), dict()),
    ("ce-smoothing-none", dict(label_smoothing=0.3, reduction="none"), dict()),
]


@pytest.mark.parametrize("kwargs,extra", [pytest.param(k, e, id=n) for n, k, e in LOSS_CASES] + [
    pytest.param(dict(ignore_index=2, label_smoothing=0.2), dict(ignore=2), id="ce-ignore-smoothing"),
    pytest.param(dict(ignore_index=0, label_smoothing=0.1, reduction="none"), dict(ignore=0),
                 id="ce-ignore-smoothing-none"),
])
def test_cross_entropy_loss_matches_torch(device, kwargs, extra):
    logits = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, 4, (6,))
    if "ignore" in extra:
        target[[1, 4]] = extra["ignore"]
    x = g(logits, device, requires_grad=True)
    loss = nn.CrossEntropyLoss(**kwargs)(x, g(target, device))
    tloss = torch.nn.CrossEntropyLoss(**kwargs)(logits, target)
    assert_close(loss, tloss)
    w = torch.randn(tloss.shape, dtype=torch.float64)
    (loss * g(w, device)).sum().backward()
    (tloss * w).sum().backward()
    assert_close(x.grad, logits.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 0])
def test_nll_loss_matches_torch(device, reduction, ignore_index):
    logp = torch.randn(5, 3, dtype=torch.float64).log_softmax(1).requires_grad_()
    target = torch.tensor([0, 2, 1, 0, 2])
    x = g(logp, device, requires_grad=True)
    loss = nn.NLLLoss(reduction=reduction, ignore_index=ignore_index)(x, g(target, device))
    tloss = torch.nn.NLLLoss(reduction=reduction, ignore_index=ignore_index)(logp, target)
    assert_close(loss, tloss)
    w = torch.randn(tloss.shape, dtype=torch.float64)
    (loss * g(w, device)).sum().backward()
    (tloss * w).sum().backward()
    assert_close(x.grad, logp.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("loss_name", ["MSELoss", "L1Loss"])
def test_regression_losses_match_torch(device, reduction, loss_name):
    pred = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    target = torch.randn(4, 3, dtype=torch.float64)
    x = g(pred, device, requires_grad=True)
    loss = getattr(nn, loss_name)(reduction=reduction)(x, g(target, device))
    tloss = getattr(torch.nn, loss_name)(reduction=reduction)(pred, target)
    assert_close(loss, tloss)
    w = torch.randn(tloss.shape, dtype=torch.float64)
    (loss * g(w, device)).sum().backward()
    (tloss * w).sum().backward()
    assert_close(x.grad, pred.grad)


@pytest.mark.parametrize("bad", [3, 7, -1])
def test_cross_entropy_target_out_of_range_raises_index_error(device, bad):
    logits = genesis.randn(2, 3, device=device)
    target = genesis.tensor([0, bad], device=device)
    with pytest.raises(IndexError):
        torch.nn.functional.cross_entropy(torch.randn(2, 3), torch.tensor([0, bad]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(logits, target)


def test_cross_entropy_with_a_float_target_raises(device):
    with pytest.raises(RuntimeError, match="Long"):
        F.cross_entropy(genesis.randn(2, 3, device=device), genesis.tensor([0.0, 1.0], device=device))


def test_dropout_train_and_eval(device):
    genesis.manual_seed(0)
    layer = nn.Dropout(0.5)
    x = genesis.ones(4000, device=device)
    y = torch.from_numpy(layer(x).cpu().numpy())
    assert set(y.unique().tolist()) == {0.0, 2.0}
    assert abs((y == 0).double().mean().item() - 0.5) < 0.05
    layer.eval()
    assert layer(x) is x


# ---------------------------------------------------------------- Module API
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 5), nn.ReLU())
        self.head = nn.Linear(5, 2)
        self.scale = nn.Parameter(genesis.ones(2))
        self.register_buffer("steps", genesis.zeros(1))

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU())
        self.head = torch.nn.Linear(5, 2)
        self.scale = torch.nn.Parameter(torch.ones(2))
        self.register_buffer("steps", torch.zeros(1))


def test_parameters_and_state_dict_names_match_torch():
    net, tnet = Net(), TorchNet()
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    assert sorted(net.state_dict()) == sorted(tnet.state_dict())
    assert len(list(net.parameters())) == 5
    assert [n for n, _ in net.named_modules()] == [n for n, _ in tnet.named_modules()]
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())


def test_state_dict_order_matches_torch():
    assert list(Net().state_dict()) == list(TorchNet().state_dict())


def test_state_dict_round_trip_and_errors():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (_, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert (pa.detach().numpy() == pb.detach().numpy()).all()
        assert pa.data_ptr() != pb.data_ptr()
    state = a.state_dict()
    state["head.weight"] = genesis.zeros(3, 5)
    with pytest.raises(RuntimeError, match=r"head\.weight.*\[3, 5\].*\[2, 5\]"):
        b.load_state_dict(state)
    state = a.state_dict()
    del state["head.bias"]
    with pytest.raises(RuntimeError, match=r"head\.bias"):
        b.load_state_dict(state)
    missing, unexpected = b.load_state_dict(state, strict=False)
    assert missing == ["head.bias"] and unexpected == []


def test_train_eval_and_zero_grad():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert net.body[1].training
    net(genesis.randn(3, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_module_to_device_and_dtype(device):
    net = Net()
    params = list(net.parameters())
    before = [p.detach().numpy().copy() for p in params]
    assert net.to(device) is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]  # same Parameter objects
    assert all(p.device == genesis.device(device) for p in net.parameters())
    assert net.steps.device == genesis.device(device)
    for p, b in zip(net.parameters(), before):
        assert (p.detach().cpu().numpy() == b).all()
    net.to(genesis.float64)
    assert all(p.dtype == genesis.float64 for p in net.parameters())
    out = net(genesis.randn(3, 4, dtype=genesis.float64, device=device))
    assert out.device == genesis.device(device) and out.dtype == genesis.float64


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_module_moves_to_cuda_and_back(device):
    net = Net().to(device)
    net(genesis.randn(2, 4, device=device)).sum().backward()
    net.cpu()
    assert all(p.device == genesis.device("cpu") and p.grad.device == genesis.device("cpu")
               for p in net.parameters())
