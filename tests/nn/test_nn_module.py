"""The Module API against torch.nn.Module: registration and attribute semantics, traversal, modes, moves
and casts, state dicts, hooks, reprs, Parameter."""

from __future__ import annotations

import copy

import pytest
import torch
from nn_helpers import assert_close, g, module_repr, to_torch

import genesis
import genesis.nn as nn
import genesis_autograd
from device_support import requires_cuda


def build_net(lib):
    """The same small model from torch.nn or genesis.nn: nested modules, a tied weight, a shared submodule,
    persistent and non-persistent buffers."""

    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(4, 4)
            self.norm = lib.nn.LayerNorm(4)
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("cache", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.norm(self.fc(x)).relu()

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = lib.nn.Embedding(10, 4)
            self.blocks = lib.nn.ModuleList([Block(), Block()])
            self.shared = self.blocks[0]
            self.head = lib.nn.Linear(4, 10, bias=False)
            self.head.weight = self.embed.weight  # tied
            self.scale = lib.nn.Parameter(lib.ones(1))

        def forward(self, idx):
            h = self.embed(idx)
            for block in self.blocks:
                h = block(h)
            return self.head(h) * self.scale

    return Net()


def names(pairs):
    return [n for n, _ in pairs]


# ---------------------------------------------------------------- traversal
def test_traversal_matches_torch():
    net, tnet = build_net(genesis), build_net(torch)
    assert names(net.named_parameters()) == names(tnet.named_parameters())
    assert names(net.named_parameters(remove_duplicate=False)) == names(tnet.named_parameters(remove_duplicate=False))
    assert names(net.named_parameters(prefix="model", recurse=False)) == ["model.scale"]
    assert names(net.named_buffers()) == names(tnet.named_buffers())
    assert names(net.named_modules()) == names(tnet.named_modules())
    assert names(net.named_modules(remove_duplicate=False)) == names(tnet.named_modules(remove_duplicate=False))
    assert names(net.named_modules(prefix="m")) == names(tnet.named_modules(prefix="m"))
    assert names(net.named_children()) == names(tnet.named_children())
    assert len(list(net.parameters())) == len(list(tnet.parameters())) == 10  # tied and shared ones once
    assert len(list(net.buffers())) == 4 and len(list(net.modules())) == len(list(tnet.modules()))
    assert [type(m).__name__ for m in net.children()] == [type(m).__name__ for m in tnet.children()]
    # parameters() walks without names: the same objects in the same order as named_parameters()
    for recurse in (True, False):
        assert [id(p) for p in net.parameters(recurse)] == [id(p) for _, p in net.named_parameters(recurse=recurse)]
    net.blocks[1].fc.bias = None  # a None parameter is skipped
    assert len(list(net.parameters())) == 9


def test_parameters_follows_an_overridden_named_parameters():
    class Filtered(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)

        def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
            listed = super().named_parameters(prefix, recurse, remove_duplicate)
            return ((n, p) for n, p in listed if n.startswith("a."))

    module = Filtered()
    assert [id(p) for p in module.parameters()] == [id(module.a.weight), id(module.a.bias)]


def test_state_dict_matches_torch_and_loads_torch_tensors(device):
    net, tnet = build_net(genesis), build_net(torch)
    state, tstate = net.state_dict(), tnet.state_dict()
    assert list(state) == list(tstate)  # order; tied and shared tensors under every name; no "cache"
    assert "blocks.0.cache" not in state and "blocks.0.steps" in state and "shared.fc.weight" in state
    assert all(not v.requires_grad and v.grad_fn is None for v in state.values())
    assert list(net.state_dict(prefix="p.")) == ["p." + k for k in state]
    kept = net.state_dict(keep_vars=True)
    assert kept["scale"] is net.scale and kept["embed.weight"] is net.embed.weight
    net.to(device)
    assert net.load_state_dict(tnet.state_dict()) == ([], [])  # torch tensors, through DLPack
    idx = torch.randint(0, 10, (2, 3))
    assert_close(net(g(idx, device)), tnet(idx), rtol=1e-5, atol=1e-6)


def test_load_state_dict_reports_keys_like_torch():
    net, tnet = build_net(genesis), build_net(torch)
    state = net.state_dict()
    del state["head.weight"]
    state["extra.weight"] = genesis.zeros(1)
    tstate = tnet.state_dict()
    del tstate["head.weight"]
    tstate["extra.weight"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as error:
        net.load_state_dict(state)
    with pytest.raises(RuntimeError) as terror:
        tnet.load_state_dict(tstate)
    assert str(error.value) == str(terror.value)
    result, tresult = net.load_state_dict(state, strict=False), tnet.load_state_dict(tstate, strict=False)
    assert result == tresult and result.missing_keys == ["head.weight"] and result.unexpected_keys == ["extra.weight"]
    assert repr(result) == repr(tresult)
    assert repr(net.load_state_dict(net.state_dict())) == "<All keys matched successfully>"
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])


def test_load_state_dict_shape_mismatch_names_key_and_shapes_and_changes_nothing():
    net, other = build_net(genesis), build_net(genesis)
    before = {k: to_torch(v).clone() for k, v in net.state_dict().items()}
    state = other.state_dict()
    state["blocks.1.fc.weight"] = genesis.zeros(3, 4)  # after several good keys
    with pytest.raises(
        RuntimeError,
        match=r"size mismatch for blocks\.1\.fc\.weight: copying a param with shape "
        r"\[3, 4\] from checkpoint, the shape in current model is \[4, 4\]",
    ):
        net.load_state_dict(state)
    with pytest.raises(RuntimeError, match="size mismatch"):
        net.load_state_dict(state, strict=False)  # shapes are checked whatever strict says
    del state["blocks.1.fc.weight"]
    with pytest.raises(RuntimeError, match="Missing key"):
        net.load_state_dict(state)
    for k, v in net.state_dict().items():
        assert torch.equal(to_torch(v), before[k]), k


def test_load_state_dict_copies_or_assigns():
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    weight = b.weight
    b.load_state_dict(a.state_dict())
    assert b.weight is weight and b.weight.data_ptr() != a.weight.data_ptr()
    assert torch.equal(to_torch(b.weight), to_torch(a.weight))
    new = {"weight": genesis.randn(2, 3), "bias": genesis.randn(2)}
    b.load_state_dict(new, assign=True)
    assert isinstance(b.weight, nn.Parameter) and b.weight.requires_grad
    assert b.weight.data_ptr() == new["weight"].data_ptr()
    bn = nn.BatchNorm1d(3)
    stats = genesis.randn(3)
    bn.load_state_dict(dict(bn.state_dict(), running_mean=stats), assign=True)
    assert bn.running_mean is stats
    with pytest.raises(RuntimeError, match=r"expected torch\.Tensor or Tensor-like object"):
        b.load_state_dict({"weight": [[1.0] * 3] * 2, "bias": genesis.zeros(2)})


# ---------------------------------------------------------------- registration and attributes
def test_attribute_assignment_semantics():
    m = nn.Module()
    m.w = nn.Parameter(genesis.ones(2))
    m.sub = nn.Linear(2, 2)
    m.plain = genesis.zeros(3)  # a plain tensor attribute: no state
    m.register_buffer("buf", genesis.zeros(1))
    assert names(m.named_parameters()) == ["w", "sub.weight", "sub.bias"]
    assert list(m.state_dict()) == ["w", "buf", "sub.weight", "sub.bias"]
    m.w = None  # a parameter slot can hold None
    assert "w" in m._parameters and m.w is None and names(m.named_parameters()) == ["sub.weight", "sub.bias"]
    with pytest.raises(TypeError, match=r"cannot assign '.*Tensor' as parameter 'w' \(torch.nn.Parameter or None"):
        m.w = genesis.ones(2)
    m.buf = genesis.ones(1)
    assert m._buffers["buf"] is m.buf
    with pytest.raises(TypeError, match=r"cannot assign 'int' as buffer 'buf' \(torch.Tensor or None expected\)"):
        m.buf = 3
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'sub'"):
        m.sub = 3
    m.sub = None
    assert m.sub is None and names(m.named_children()) == []
    m.plain = nn.Parameter(genesis.ones(1))  # a plain attribute becomes a parameter
    assert "plain" not in m.__dict__ and "plain" in m._parameters
    del m.plain, m.buf, m.sub
    assert not m._parameters.get("plain") and "buf" not in m._buffers and "sub" not in m._modules
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'missing'"):
        _ = m.missing
    assert "w" in dir(m)


def _raises(error: type, fragment: str, call) -> None:
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value.args[0]), info.value.args[0]


@pytest.mark.parametrize("lib", [torch, genesis], ids=["torch", "genesis"])
def test_registration_errors_match_torch(lib):
    m = lib.nn.Module()
    m.x = 1
    _raises(KeyError, 'buffer name can\'t contain "."', lambda: m.register_buffer("a.b", None))
    _raises(KeyError, "attribute 'x' already exists", lambda: m.register_buffer("x", None))
    _raises(
        TypeError,
        "cannot assign 'int' object to buffer 'y' (torch Tensor or None required)",
        lambda: m.register_buffer("y", 3),
    )
    _raises(KeyError, 'parameter name can\'t be empty string ""', lambda: m.register_parameter("", None))
    _raises(
        TypeError,
        "object to parameter 'p' (torch.nn.Parameter or None required)",
        lambda: m.register_parameter("p", lib.zeros(1)),
    )
    _raises(
        ValueError,
        "Cannot assign non-leaf Tensor to parameter 'p'",
        lambda: m.register_parameter("p", _non_leaf_parameter(lib)),
    )
    _raises(TypeError, "int is not a Module subclass", lambda: m.add_module("q", 3))
    _raises(KeyError, 'module name can\'t contain ".", got: a.b', lambda: m.register_module("a.b", lib.nn.ReLU()))


def test_assigning_before_init_is_an_attribute_error():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(genesis.ones(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()


def _non_leaf_parameter(lib):
    out = lib.nn.Parameter(lib.ones(1)) * 2
    out.__class__ = lib.nn.Parameter  # a Parameter-typed tensor that has a grad_fn
    return out


def test_get_submodule_parameter_buffer_like_torch():
    net, tnet = build_net(genesis), build_net(torch)
    assert net.get_submodule("blocks.1.fc") is net.blocks[1].fc and net.get_submodule("") is net
    assert net.get_parameter("blocks.0.norm.bias") is net.blocks[0].norm.bias
    assert net.get_buffer("blocks.1.steps") is net.blocks[1].steps
    for call in [
        lambda m: m.get_submodule("blocks.7"),
        lambda m: m.get_submodule("scale.x"),
        lambda m: m.get_parameter("blocks.0.steps"),
        lambda m: m.get_buffer("scale"),
        lambda m: m.get_parameter("head.nothing"),
    ]:
        with pytest.raises(AttributeError) as error:
            call(net)
        with pytest.raises(AttributeError) as terror:
            call(tnet)
        assert str(error.value) == str(terror.value)


def test_apply_modes_requires_grad_and_zero_grad():
    net, tnet = build_net(genesis), build_net(torch)
    order, torder = [], []
    net.apply(lambda m: order.append(type(m).__name__))
    tnet.apply(lambda m: torder.append(type(m).__name__))
    assert order == torder
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    net(genesis.tensor([[1, 2]])).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not to_torch(p.grad).any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_and_casts(device):
    net = build_net(genesis)
    params = list(net.parameters())
    before = [to_torch(p).clone() for p in params]
    net(genesis.tensor([[1, 2]])).sum().backward()
    assert net.to(device) is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]  # the same Parameter objects
    here = genesis_autograd.resolve_device(device)  # "cuda": the current device, as torch reads it
    assert all(p.device == here and p.grad.device == here for p in params)
    assert net.blocks[0].steps.device == here
    assert all(torch.equal(to_torch(p), b) for p, b in zip(params, before))
    net.to(genesis.float64, non_blocking=True)
    assert all(p.dtype == genesis.float64 and p.grad.dtype == genesis.float64 for p in params)
    assert net.embed.weight is net.head.weight  # still tied
    net.to(device, genesis.float32)
    assert all(p.dtype == genesis.float32 for p in params)
    net.to(genesis.zeros(1, dtype=genesis.float16, device=device))
    assert all(p.dtype == genesis.float16 for p in params)
    for cast, dtype in [
        ("double", genesis.float64),
        ("bfloat16", genesis.bfloat16),
        ("half", genesis.float16),
        ("float", genesis.float32),
    ]:
        assert getattr(net, cast)() is net and all(p.dtype == dtype for p in params)
    bn = nn.BatchNorm1d(2).double()
    assert bn.num_batches_tracked.dtype == genesis.int64 and bn.running_mean.dtype == genesis.float64
    with pytest.raises(TypeError, match=r"nn\.Module\.to only accepts floating point or complex dtypes"):
        net.to(genesis.int32)


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_module_moves_to_cuda_and_back(device):
    net = build_net(genesis).cuda()
    net(genesis.tensor([[1, 2]], device=device)).sum().backward()
    net.cpu()
    assert all(p.device == genesis.device("cpu") and p.grad.device == genesis.device("cpu") for p in net.parameters())


def test_deepcopy_gives_an_independent_module():
    net = build_net(genesis)
    twin = copy.deepcopy(net)
    assert twin.head.weight is twin.embed.weight and twin.blocks[0] is twin.shared  # ties survive
    assert twin.scale is not net.scale and isinstance(twin.scale, nn.Parameter)
    with genesis.no_grad():
        twin.scale.fill_(5.0)
    assert to_torch(net.scale).item() == 1.0


# ---------------------------------------------------------------- hooks
def test_forward_hooks():
    lin = nn.Linear(3, 3)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append("post") or out + 1)
    h3 = lin.register_forward_hook(lambda m, args, out: calls.append("first"), prepend=True)
    out = lin(genesis.randn(2, 3))
    assert calls == ["first", "post"]
    assert torch.allclose(to_torch(out), to_torch(lin.bias).expand(2, 3) + 1)
    for h in (h1, h2, h3):
        h.remove()
    x = genesis.randn(2, 3)
    assert torch.equal(to_torch(lin(x)), to_torch(lin.forward(x)))

    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = Scaled()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    seen = []
    with m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs) or out * 2, with_kwargs=True):
        assert to_torch(m(genesis.ones(1))).item() == 6.0
    assert seen == [{"scale": 3.0}] and to_torch(m(genesis.ones(1))).item() == 3.0  # handle removed on exit
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(genesis.ones(1))


def test_forward_hook_always_call_runs_when_forward_raises():
    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    m = Broken()
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(genesis.ones(1))
    assert seen == [None]


class Mix(torch.nn.Module):
    def forward(self, a, b, flag):
        return a * b, (a + b).sum(1)


class GMix(nn.Module):
    def forward(self, a, b, flag):
        return a * b, (a + b).sum(1)


def _record_backward_hooks(module) -> list:
    """Hooks that log what they see; the pre-hook doubles grad_output[0], the hook drops grad_input[1]."""
    seen = []
    module.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", go)) or (go[0] * 2, go[1]))
    module.register_full_backward_hook(lambda m, gi, go: seen.append(("post", gi, go)) or (gi[0], None, None))
    return seen


def test_full_backward_hooks_see_torchs_gradients(device):
    a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    results = {}
    for lib, module, put in [(torch, Mix(), lambda t: t), (genesis, GMix(), lambda t: g(t, device))]:
        seen = _record_backward_hooks(module)
        x, y = put(a).requires_grad_(), put(b).requires_grad_()
        out, total = module(x, y, True)
        (out.sum() + (total * 3).sum()).backward()
        results[lib] = (seen, x.grad, y.grad)
    (seen, gx, gy), (tseen, tx, ty) = results[genesis], results[torch]
    assert [s[0] for s in seen] == [s[0] for s in tseen] == ["pre", "post"]
    for ours, theirs in zip(seen[0][1], tseen[0][1]):
        assert_close(ours, theirs)  # grad_output before the pre-hook doubled the first
    assert seen[1][1][2] is None and tseen[1][1][2] is None  # flag: not a tensor
    for ours, theirs in zip(seen[1][1][:2] + seen[1][2], tseen[1][1][:2] + tseen[1][2]):
        assert_close(ours, theirs)
    assert_close(gx, tx)
    assert gy is None and ty is None  # the hook replaced b's gradient by None


def test_full_backward_hook_without_input_gradients(device):
    lin = nn.Linear(3, 2).to(device)
    seen = []
    handle = lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    lin(genesis.randn(4, 3, device=device)).sum().backward()
    assert seen == [((None,), (4, 2))]
    handle.remove()
    lin(genesis.randn(4, 3, device=device)).sum().backward()
    assert len(seen) == 1


# ---------------------------------------------------------------- reprs and Parameter
def test_repr_matches_torch():
    def build(lib):
        return lib.nn.Sequential(
            lib.nn.Conv2d(3, 8, 3, padding=1),
            lib.nn.BatchNorm2d(8),
            lib.nn.ReLU(),
            lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(8, 2, bias=False)),
            lib.nn.ModuleDict({"a": lib.nn.GELU(approximate="tanh")}),
        )

    assert module_repr(build(genesis)) == repr(build(torch))
    assert module_repr(build_net(genesis)).replace("genesis", "torch") == repr(build_net(torch))

    class Multi(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    class TMulti(torch.nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Multi()) == repr(TMulti()).replace("TMulti", "Multi")


def test_parameter():
    data = genesis.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))
    assert p.requires_grad and p.is_leaf and p.data_ptr() == data.data_ptr()
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        nn.Parameter(genesis.tensor([1, 2]))
    assert type(p * 2) is genesis.Tensor and type(p.detach()) is genesis.Tensor
