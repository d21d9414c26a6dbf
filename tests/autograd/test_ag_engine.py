"""The backward engine: retain_graph, create_graph, autograd.grad, accumulation, grad modes,
detach / retain_grad / hooks, in-place checks, error messages; user-defined Functions; repr."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from ag_helpers import assert_close, leaf, to_genesis, values

import genesis
import genesis_autograd
from device_support import requires_cuda


# ---------------------------------------------------------------- retain_graph / freed graphs
def test_second_backward_without_retain_graph_raises(device):
    _, x = leaf((3,), device)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward_and_accumulates(device):
    tx, x = leaf((2, 3), device)
    y, ty = (x.exp() * x).sum(), (tx.exp() * tx).sum()
    y.backward(retain_graph=True)
    first = x.grad.detach().cpu().numpy().copy()
    y.backward()
    ty.backward(retain_graph=True)
    ty.backward()
    assert_close(x.grad, tx.grad)
    assert_close(x.grad, torch.from_numpy(first) * 2)


def test_grad_accumulates_across_two_graphs(device):
    tx, x = leaf((4,), device)
    (x * x).sum().backward()
    x.sin().sum().backward()
    (tx * tx).sum().backward()
    tx.sin().sum().backward()
    assert_close(x.grad, tx.grad)


def test_tensor_used_twice_sums_its_gradients(device):
    tx, x = leaf((3, 4), device)
    (x * x.T.T + x.sum(0) * x).sum().backward()
    (tx * tx.T.T + tx.sum(0) * tx).sum().backward()
    assert_close(x.grad, tx.grad)


# ---------------------------------------------------------------- create_graph / double backward
DOUBLE = [
    ("cube", lambda x, w: (x**3 * w).sum()),
    ("tanh", lambda x, w: (x.tanh() * w).sum()),
    ("exp-log", lambda x, w: ((x * x + 1).log() * x.exp() * w).sum()),
    ("matmul", lambda x, w: ((x @ x.T) * (w @ w.T)).sum()),
    ("softmax", lambda x, w: (x.softmax(1) * w).sum()),
    ("log_softmax", lambda x, w: (x.log_softmax(1) * w).sum()),
    ("logsumexp-var", lambda x, w: x.logsumexp(1).sum() + (x * w).var()),
    ("sigmoid-mean", lambda x, w: (x.sigmoid() * w).mean()),
    ("sqrt-div", lambda x, w: ((x * x + 1).sqrt() / (w * w + 1)).sum()),
]


@pytest.mark.parametrize("fn", [f for _, f in DOUBLE], ids=[n for n, _ in DOUBLE])
def test_create_graph_double_backward_matches_torch(device, fn):
    tx, x = leaf((3, 4), device)
    tw = values((3, 4))
    w = to_genesis(tw, device)
    (tg,) = torch.autograd.grad(fn(tx, tw), tx, create_graph=True)
    (g,) = genesis.autograd.grad(fn(x, w), x, create_graph=True)
    assert g.requires_grad
    assert_close(g, tg)
    tv = values((3, 4))
    (tgg,) = torch.autograd.grad((tg * tv).sum(), tx)
    (gg,) = genesis.autograd.grad((g * to_genesis(tv, device)).sum(), x)
    assert_close(gg, tgg)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_with_create_graph_leaves_a_differentiable_grad(device):
    tx, x = leaf((3,), device)
    (x**3).sum().backward(create_graph=True)
    (tx**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    assert_close(x.grad, tx.grad)
    (gg,) = genesis.autograd.grad(x.grad.sum(), x)
    (tgg,) = torch.autograd.grad(tx.grad.sum(), tx)
    assert_close(gg, tgg)


# ---------------------------------------------------------------- autograd.grad
def test_autograd_grad_returns_and_leaves_grad_untouched(device):
    tx, x = leaf((3,), device)
    ty, y = leaf((3,), device)
    gx, gy = genesis.autograd.grad((x * y.exp()).sum(), [x, y])
    tgx, tgy = torch.autograd.grad((tx * ty.exp()).sum(), [tx, ty])
    assert_close(gx, tgx)
    assert_close(gy, tgy)
    assert x.grad is None and y.grad is None


def test_autograd_grad_with_grad_outputs(device):
    tx, x = leaf((2, 3), device)
    tv = values((2, 3))
    (g,) = genesis.autograd.grad(x.sin(), x, grad_outputs=to_genesis(tv, device))
    (tg,) = torch.autograd.grad(tx.sin(), tx, grad_outputs=tv)
    assert_close(g, tg)


def test_autograd_grad_allow_unused(device):
    _, x = leaf((3,), device)
    _, unused = leaf((3,), device)
    out = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        genesis.autograd.grad(out, [x, unused], retain_graph=True)
    gx, gu = genesis.autograd.grad(out, [x, unused], allow_unused=True, retain_graph=True)
    assert gu is None
    assert_close(gx, torch.full((3,), 2.0, dtype=torch.float64))
    gx, gu = genesis.autograd.grad(out, [x, unused], materialize_grads=True)
    assert_close(gu, torch.zeros(3, dtype=torch.float64))


def test_autograd_grad_of_an_input_that_does_not_require_grad_raises(device):
    _, x = leaf((3,), device)
    c = to_genesis(values((3,)), device)
    with pytest.raises(RuntimeError, match="does not require grad"):
        genesis.autograd.grad((x * c).sum(), [c])


# ---------------------------------------------------------------- grad modes
def test_no_grad_enable_grad_set_grad_enabled(device):
    _, x = leaf((3,), device)
    with genesis.no_grad():
        y = x * 2
        assert not genesis.is_grad_enabled()
        with genesis.enable_grad():
            z = x * 2
        w = x * 2
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert z.requires_grad and z.grad_fn is not None
    assert not w.requires_grad
    assert genesis.is_grad_enabled()
    with genesis.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert (x + 1).requires_grad
    genesis.set_grad_enabled(False)
    try:
        assert not (x + 1).requires_grad
    finally:
        genesis.set_grad_enabled(True)
    assert genesis.is_grad_enabled()


def test_grad_modes_as_decorators(device):
    _, x = leaf((3,), device)

    @genesis.no_grad()
    def f(t):
        return t * 2

    @genesis.enable_grad()
    def g(t):
        return t * 2

    assert not f(x).requires_grad
    with genesis.no_grad():
        assert g(x).requires_grad
    assert genesis.is_grad_enabled()


def test_inference_mode(device):
    _, x = leaf((3,), device)
    with genesis.inference_mode():
        y = x.exp()
        assert genesis.autograd.inference_mode is genesis.inference_mode
        assert not genesis.is_grad_enabled()
    assert not y.requires_grad
    with genesis.inference_mode(False):
        assert x.exp().requires_grad
    assert genesis.is_grad_enabled()


def test_grad_mode_is_thread_local(device):
    _, x = leaf((3,), device)
    seen = {}

    def worker():
        seen["enabled"] = genesis.is_grad_enabled()
        seen["requires_grad"] = (x * 2).requires_grad
        with genesis.no_grad():
            seen["inner"] = (x * 2).requires_grad

    with genesis.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert not (x * 2).requires_grad
    assert seen == {"enabled": True, "requires_grad": True, "inner": False}
    assert genesis.is_grad_enabled()
    # and no_grad in the other thread did not leak into this one
    assert (x * 2).requires_grad


# ---------------------------------------------------------------- requires_grad, detach, hooks
def test_requires_grad_propagation(device):
    _, x = leaf((3,), device)
    c = to_genesis(values((3,)), device)
    assert not (c * 2).requires_grad
    y = c * x
    assert y.requires_grad and not y.is_leaf and x.is_leaf
    assert not (x > 0).requires_grad and (x > 0).dtype == genesis.bool
    assert not x.argmax().requires_grad
    values_, indices = x.max(0)
    assert values_.requires_grad and not indices.requires_grad and indices.dtype == genesis.int64
    with pytest.raises(RuntimeError, match="floating point"):
        genesis.tensor([1, 2], device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)


def test_detach_shares_memory_and_leaves_the_graph(device):
    _, x = leaf((3,), device)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == y.data_ptr()
    d.fill_(5.0)
    assert y.tolist() == [5.0, 5.0, 5.0]
    z = x * 3
    z.detach_()
    assert not z.requires_grad and z.is_leaf


def test_retain_grad_on_a_non_leaf(device):
    tx, x = leaf((3,), device)
    y, ty = x.exp(), tx.exp()
    y.retain_grad()
    ty.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert y.grad is not None
    assert_close(y.grad, ty.grad)
    assert_close(x.grad, tx.grad)


def test_retain_grad_on_a_leaf_is_a_no_op(device):
    _, x = leaf((3,), device)
    x.retain_grad()
    (x * 2).sum().backward()
    assert_close(x.grad, torch.full((3,), 2.0, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        to_genesis(values((3,)), device).retain_grad()


def test_register_hook_on_a_leaf(device):
    tx, x = leaf((3,), device)
    seen = []
    handle = x.register_hook(lambda g: seen.append(g) or g * 2)
    (x * x).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], 2 * tx.detach())
    assert_close(x.grad, 4 * tx.detach())
    handle.remove()
    x.grad = None
    (x * x).sum().backward()
    assert_close(x.grad, 2 * tx.detach())
    assert len(seen) == 1


def test_register_hook_on_a_non_leaf(device):
    tx, x = leaf((3,), device)
    y = x * 3
    seen = []
    y.register_hook(lambda g: seen.append(g) or g * 10)
    (y * y).sum().backward()
    assert len(seen) == 1
    ty = tx * 3
    ty.register_hook(lambda g: g * 10)
    (ty * ty).sum().backward()
    assert_close(x.grad, tx.grad)


def test_register_hook_needs_requires_grad(device):
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        to_genesis(values((3,)), device).register_hook(lambda g: g)


# ---------------------------------------------------------------- in-place rules
@pytest.mark.parametrize(
    "op",
    [
        lambda x: x.add_(1.0),
        lambda x: x.mul_(2.0),
        lambda x: x.exp_(),
        lambda x: x.__setitem__(0, 1.0),
        lambda x: x.fill_(0.5),
        lambda x: x.zero_(),
        lambda x: x.clamp_(0, 1),
    ],
    ids=["add_", "mul_", "exp_", "setitem", "fill_", "zero_", "clamp_"],
)
def test_inplace_on_a_leaf_that_requires_grad_raises(device, op):
    _, x = leaf((3,), device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        op(x)
    with genesis.no_grad():
        op(x)  # allowed without recording, as in torch


SAVERS = [
    ("exp", lambda a: a.exp()),
    ("sigmoid", lambda a: a.sigmoid()),
    ("tanh", lambda a: a.tanh()),
    ("sqrt", lambda a: a.sqrt()),
    ("softmax", lambda a: a.softmax(1)),
    ("sin", lambda a: a.sin()),
    ("mul", lambda a: a * a),
    ("log", lambda a: a.log()),
    ("matmul", lambda a: a @ a.T),
    ("relu", lambda a: a.relu()),
    ("div", lambda a: 1 / a),
]
_OUTPUT_SAVERS = {"exp", "sigmoid", "tanh", "sqrt", "softmax"}


def _saved_params():
    out = []
    for name, fn in SAVERS:
        for which in ("input", "output"):
            out.append(pytest.param(fn, which, id=f"{name}-{which}"))
    return out


@pytest.mark.parametrize("saver,which", _saved_params())
def test_inplace_change_after_use_never_gives_a_wrong_gradient(device, saver, which):
    """Modify an op's input or output in place after the op, then backward.

    Which tensors an op saves is its own choice (torch and genesis differ for relu and 1 / a), so
    either answer is allowed: the version-counter error, or the true gradient of what was computed.
    A gradient computed from the modified values, silently, is not.
    """
    tx, x = leaf((3, 3), device, domain="pos")
    factor = 2.0 if which == "output" else 1.0
    (saver(tx * 1) * factor).sum().backward()  # the reference: the same function, without in-place ops
    a = x * 1
    out = saver(a)
    target = a if which == "input" else out
    version = target._version_counter
    target.mul_(2)
    assert target._version_counter == version + 1
    try:
        out.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return
    assert_close(x.grad, tx.grad)


def test_inplace_change_through_a_view_of_a_saved_tensor_raises(device):
    _, x = leaf((2, 3), device, domain="pos")
    a = x * 1
    out = a.sin()
    a.reshape(6).add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_inplace_on_a_view_reaches_the_base_gradient(device):
    tx, x = leaf((3,), device)
    a, ta = x * 1, tx * 1
    a[0].mul_(2)
    ta[0].mul_(2)
    a.sum().backward()
    ta.sum().backward()
    assert_close(x.grad, tx.grad)


# ---------------------------------------------------------------- backward errors
def test_backward_on_a_non_scalar_needs_a_gradient(device):
    _, x = leaf((2, 3), device)
    with pytest.raises(RuntimeError, match=r"scalar outputs.*\[2, 3\]"):
        (x * 2).backward()


def test_backward_with_a_gradient_of_the_wrong_shape(device):
    _, x = leaf((2, 3), device)
    with pytest.raises(RuntimeError, match=r"\[3, 2\].*\[2, 3\]"):
        (x * 2).backward(genesis.ones(3, 2, dtype=genesis.float64, device=device))


def test_backward_with_an_explicit_gradient(device):
    tx, x = leaf((2, 3), device)
    tv = values((2, 3))
    (x * x).backward(to_genesis(tv, device))
    (tx * tx).backward(tv)
    assert_close(x.grad, tx.grad)


def test_backward_on_a_tensor_without_grad_raises(device):
    t = to_genesis(values((3,)), device)
    with pytest.raises(RuntimeError, match="does not require grad"):
        t.sum().backward()


# ---------------------------------------------------------------- devices
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_gradient_flows_back_across_devices(device):
    tx, x = leaf((3, 4), "cpu")
    y = x.to(device)
    assert y.device == genesis_autograd.resolve_device(device) and y.requires_grad
    z = (y.exp() * 2).cpu()
    z.sum().backward()
    assert x.grad.device == genesis.device("cpu")
    (tx.exp() * 2).sum().backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_mixing_devices_in_one_op_raises(device):
    a = genesis.randn(3, device="cpu", requires_grad=True)
    b = genesis.randn(3, device=device)
    for fn in (lambda p, q: p + q, lambda p, q: p * q, lambda p, q: p.reshape(1, 3) @ q.reshape(3, 1)):
        with pytest.raises(RuntimeError, match="same device") as info:
            fn(a, b)
        assert "cpu" in str(info.value) and "cuda" in str(info.value)


# ---------------------------------------------------------------- user-defined Functions
class ScaledExp(genesis.Function):
    """y = exp(a) * k, with a non-tensor argument k; records what backward was asked for."""

    calls: list = []

    @staticmethod
    def forward(ctx, a, k):
        y = a.data.exp() * k
        ctx.save_for_backward(a)
        ctx.k = k
        return y

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        ScaledExp.calls.append(ctx.needs_input_grad)
        return g * a.exp() * ctx.k, None


class MulAdd(genesis.Function):
    """(a * b, a + b) with gradients only where needs_input_grad asks for them."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.data * b.data, a.data + b.data

    @staticmethod
    def backward(ctx, g_mul, g_add):
        a, b = ctx.saved_tensors
        ga = g_mul * b + g_add if ctx.needs_input_grad[0] else None
        gb = g_mul * a + g_add if ctx.needs_input_grad[1] else None
        return ga, gb


class DoubleWithArgmax(genesis.Function):
    """(a * 2, argmax(a)): the index output is marked non-differentiable, as in torch's docs.

    forward works on Tensors (recording is off inside forward), so the marked output is a Tensor.
    """

    @staticmethod
    def forward(ctx, a):
        index = a.argmax()
        doubled = a * 2
        ctx.mark_non_differentiable(index)
        return doubled, index

    @staticmethod
    def backward(ctx, g, g_index):
        return g * 2


class DoubleWithArgmaxNd(genesis.Function):
    """The same, with forward written on NDArrays (a.data), which Function's docs allow."""

    @staticmethod
    def forward(ctx, a):
        index = a.data.argmax()
        ctx.mark_non_differentiable(index)
        return a.data * 2, index

    @staticmethod
    def backward(ctx, g, g_index):
        return g * 2


def test_custom_function_with_saved_tensors_and_a_constant(device):
    tx, x = leaf((2, 3), device)
    ScaledExp.calls.clear()
    y = ScaledExp.apply(x, 1.5)
    assert y.grad_fn is not None and y.requires_grad
    assert_close(y, tx.detach().exp() * 1.5)
    y.sum().backward()
    assert ScaledExp.calls == [(True, False)]
    assert_close(x.grad, tx.detach().exp() * 1.5)


def test_custom_function_needs_input_grad_and_two_outputs(device):
    _, a = leaf((3,), device)
    tb = values((3,))
    b = to_genesis(tb, device)  # needs no gradient, and comes second
    p, s = MulAdd.apply(a, b)
    assert p.grad_fn is s.grad_fn
    assert p.grad_fn.needs_input_grad == (True, False)
    (p * 2 + s * 3).sum().backward()
    assert_close(a.grad, 2 * tb + 3)
    assert b.grad is None
    # only one output used: the other's gradient is materialized as zeros
    a.grad = None
    p, s = MulAdd.apply(a, b)
    s.sum().backward()
    assert_close(a.grad, torch.ones(3, dtype=torch.float64))
    # no input requires grad: no graph
    out, _ = MulAdd.apply(b, b)
    assert out.grad_fn is None and not out.requires_grad


@pytest.mark.parametrize(
    "fn,argmax_at",
    [
        pytest.param(DoubleWithArgmax, 2, id="tensor-argmax-2"),
        pytest.param(DoubleWithArgmax, 0, id="tensor-argmax-0"),
        pytest.param(DoubleWithArgmaxNd, 2, id="ndarray"),
    ],
)
def test_custom_function_mark_non_differentiable(device, fn, argmax_at):
    v = values((4,))
    v[argmax_at] = v.abs().max() + 1
    x = to_genesis(v, device, requires_grad=True)
    doubled, index = fn.apply(x)
    assert doubled.requires_grad and not index.requires_grad
    assert index.item() == argmax_at
    doubled.sum().backward()
    assert_close(x.grad, torch.full((4,), 2.0, dtype=torch.float64))


def test_custom_function_second_backward_needs_retain_graph(device):
    _, x = leaf((3,), device)
    y = ScaledExp.apply(x, 2.0).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


# ---------------------------------------------------------------- repr
REPRS = [
    pytest.param([1, 2, 3], {}, id="int64"),
    pytest.param([True, False], {}, id="bool"),
    pytest.param(7, {}, id="int-scalar"),
    pytest.param([[0.1234567, 2.0], [3.5, -4.0]], {}, id="float-2d"),
    pytest.param([1.0, 2.0], {"dtype": "float64"}, id="float64-integral"),
    pytest.param([1, 2], {"dtype": "int32"}, id="int32"),
    pytest.param([[]], {}, id="empty"),
    pytest.param([1.0, 2.5], {}, id="float"),
    pytest.param(3.5, {}, id="float-scalar"),
    pytest.param([1.25, 2.0], {"requires_grad": True}, id="requires-grad"),
    pytest.param([0.5, 1.5], {"dtype": "float16"}, id="float16"),
    pytest.param([1e-5, 1.0], {}, id="scientific"),
]


def _torch_style(text: str) -> str:
    return text.replace("torch.", "genesis.")


@pytest.mark.parametrize("data,kwargs", REPRS)
def test_repr_like_torch(data, kwargs):
    tk = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    gk = {k: getattr(genesis, v) if k == "dtype" else v for k, v in kwargs.items()}
    assert repr(genesis.tensor(data, **gk)) == _torch_style(repr(torch.tensor(data, **tk)))


def test_repr_grad_fn_and_device(device):
    x = genesis.tensor([1.0, 2.0], device=device, requires_grad=True)
    text = repr(x * 2)
    assert text.startswith("tensor([2., 4.]") and text.endswith("grad_fn=<MulBackward0>)")
    assert ("device='cuda:0'" in text) == (device == "cuda")


# ---------------------------------------------------------------- gradcheck itself
def test_gradcheck_catches_a_wrong_gradient():
    class WrongExp(genesis.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.data.exp()

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a.exp() * 1.01

    x = to_genesis(values((3,)), "cpu", requires_grad=True)
    with pytest.raises(genesis.autograd.GradcheckError, match="Jacobian mismatch"):
        genesis.autograd.gradcheck(WrongExp.apply, (x,))
    assert genesis.autograd.gradcheck(WrongExp.apply, (x,), raise_exception=False) is False


def test_gradcheck_refuses_float32_inputs():
    x = genesis.randn(3, requires_grad=True)
    with pytest.raises(genesis.autograd.GradcheckError, match="float64"):
        genesis.autograd.gradcheck(lambda a: a.exp(), (x,))


# ---------------------------------------------------------------- the Tensor class of results
def test_ops_on_a_tensor_subclass_give_plain_tensors(device):
    """Functions make their outputs with the inputs' _result_type: a subclass (nn.Parameter) gets Tensors."""
    p = genesis.nn.Parameter(genesis.randn(2, 3, dtype=genesis.float64, device=device))
    for out in (p * 2, p.exp(), p.sum(), p[0], p.t(), p.sort()[0], genesis.cat([p, p])):
        assert type(out) is genesis.Tensor and out.requires_grad
    (p * 2).sum().backward()
    assert type(p.grad) is genesis.Tensor


def test_function_without_tensor_arguments(device):
    """Outputs take the class of a Tensor the forward returned; with no Tensor anywhere, a TypeError."""

    class Made(genesis.Function):
        @staticmethod
        def forward(ctx, n):
            return genesis.arange(n, dtype=genesis.float64, device=device)

    class Raw(genesis.Function):
        @staticmethod
        def forward(ctx, n):
            return genesis.arange(n, device=device).data

    out = Made.apply(3)
    assert type(out) is genesis.Tensor and out.tolist() == [0.0, 1.0, 2.0] and not out.requires_grad
    with pytest.raises(TypeError, match="needs a Tensor"):
        Raw.apply(3)


GRAD_FN_OPS = {
    "mul": lambda x: x * 2,
    "add": lambda x: x + x,
    "sub": lambda x: x - 1,
    "div": lambda x: x / 3,
    "sum": lambda x: x.sum(),
    "mean": lambda x: x.mean(),
    "exp": lambda x: x.exp(),
    "relu": lambda x: x.relu(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "mm": lambda x: x @ x.transpose(0, 1),
    "softmax": lambda x: x.softmax(-1),
    "log_softmax": lambda x: x.log_softmax(-1),
    "view": lambda x: x.view(-1),
    "permute": lambda x: x.permute(1, 0),
    "transpose": lambda x: x.transpose(0, 1),
    "clone": lambda x: x.clone(),
    "to": lambda x: x.float(),
    "pow": lambda x: x**2,
    "neg": lambda x: -x,
    "unsqueeze": lambda x: x.unsqueeze(0),
    "abs": lambda x: x.abs(),
}


@pytest.mark.parametrize("op", list(GRAD_FN_OPS))
def test_grad_fn_names_are_torchs(op):
    fn = GRAD_FN_OPS[op]
    t = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    x = genesis.tensor(t.detach().numpy(), requires_grad=True)
    assert fn(x).grad_fn.name() == fn(t).grad_fn.name()
    assert repr(fn(x).grad_fn).startswith(f"<{fn(t).grad_fn.name()} object at 0x")


def test_shape_is_a_size_like_torchs():
    x = genesis.randn(3, 4)
    assert isinstance(x.shape, tuple) and x.shape == (3, 4) and x.size() == x.shape
    assert repr(x.shape) == repr(torch.randn(3, 4).shape).replace("torch.", "genesis.")
    assert x.shape.numel() == 12 and x.shape[1:] == (4,) and repr(x.shape[1:]) == "genesis.Size([4])"
    assert x.size(1) == 4 and isinstance(x.size(1), int)


def test_deepcopy_copies_memory_grad_and_sharing(device):
    import copy

    a = genesis.randn(3, device=device, requires_grad=True)
    a.grad = genesis.randn(3, device=device)
    copied = copy.deepcopy({"x": a, "y": a, "n": 1})
    assert copied["x"] is copied["y"] and copied["x"].requires_grad and copied["x"].is_leaf
    assert copied["x"].data_ptr() != a.data_ptr()
    assert (copied["x"] == a).all().item() and (copied["x"].grad == a.grad).all().item()
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(a * 2)


# ---------------------------------------------------------------- post-accumulate-grad hooks, final callbacks
def test_post_accumulate_grad_hook_sees_the_accumulated_grad_as_torch(device):
    tx, x = leaf((3, 2), device)
    seen, tseen = [], []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.detach().clone()))
    tx.register_post_accumulate_grad_hook(lambda p: tseen.append(p.grad.detach().clone()))
    for _ in range(2):  # the second call sees the sum of both passes
        (x.exp() * x).sum().backward()
        (tx.exp() * tx).sum().backward()
    assert len(seen) == len(tseen) == 2
    for got, expected in zip(seen, tseen):
        assert_close(got, expected)


def test_post_accumulate_grad_hook_may_replace_grad_and_is_removable(device):
    _, x = leaf((4,), device)
    handle = x.register_post_accumulate_grad_hook(lambda p: setattr(p, "grad", p.grad * 0))
    x.sum().backward()
    assert float(x.grad.abs().sum().item()) == 0.0
    handle.remove()
    x.sum().backward()
    assert float(x.grad.sum().item()) == 4.0


def test_post_accumulate_grad_hook_rules_as_torch(device):
    _, x = leaf((2,), device)
    y = x * 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        y.register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        genesis.ones(2, device=device).register_post_accumulate_grad_hook(lambda p: None)
    calls = []
    x.register_post_accumulate_grad_hook(calls.append)
    genesis.autograd.grad((x * x).sum(), x)  # accumulates nothing: no call, as torch
    assert calls == []


def test_queue_callback_runs_after_every_grad_is_accumulated(device):
    _, x = leaf((3,), device)
    _, w = leaf((3,), device)
    order = []

    def hook(p):
        order.append("hook")
        if len(order) == 1:
            genesis_autograd.queue_callback(lambda: order.append(("callback", x.grad is not None, w.grad is not None)))

    x.register_post_accumulate_grad_hook(hook)
    w.register_post_accumulate_grad_hook(hook)
    (x * w).sum().backward()
    assert order == ["hook", "hook", ("callback", True, True)]
    with pytest.raises(RuntimeError, match="only be installed during backward"):
        genesis_autograd.queue_callback(lambda: None)


# ------------------------------------------------------------------ a leaf's first gradient without a copy
# The engine hands a leaf a gradient nothing else holds as its .grad (no copy, as torch's AccumulateGrad);
# these check that a gradient someone else can see is still copied, and that accumulation stays right.
def test_first_grad_is_never_shared_with_the_caller_or_another_leaf(device):
    ta, tb = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    a = genesis.tensor(ta.numpy(), device=device, requires_grad=True)
    b = genesis.tensor(tb.numpy(), device=device, requires_grad=True)
    gout = genesis.tensor(np.random.randn(4, 3), device=device)
    expected = gout.detach().cpu().numpy().copy()
    (a + b).backward(gout)  # add's backward hands the same gradient to both leaves
    a.grad.add_(1.0)
    gout.mul_(0.0)
    np.testing.assert_allclose(b.grad.cpu().numpy(), expected)
    np.testing.assert_allclose(a.grad.cpu().numpy(), expected + 1.0)


def test_stolen_first_grad_accumulates_once(device):
    tx, tw = torch.randn(5, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    tb = torch.randn(3, dtype=torch.float64, requires_grad=True)
    x = genesis.tensor(tx.numpy(), device=device)
    w = genesis.tensor(tw.detach().numpy(), device=device, requires_grad=True)
    b = genesis.tensor(tb.detach().numpy(), device=device, requires_grad=True)
    for _ in range(2):  # the second backward adds to the gradients the first kept
        genesis.nn.functional.linear(x, w, b).relu().square().sum().backward()
        torch.nn.functional.linear(tx, tw, tb).relu().square().sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.cpu().numpy(), tb.grad.numpy(), rtol=1e-10)
    w.grad = None  # a fresh first gradient after set-to-none, as zero_grad makes it
    genesis.nn.functional.linear(x, w, b).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.tile(tx.numpy().sum(0), (3, 1)), rtol=1e-10)


def test_first_grad_seen_by_a_hook_is_copied(device):
    w = genesis.tensor(np.random.randn(3, 2), device=device, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g))
    (w * 2).sum().backward()
    seen[0].data.mul_(0.0)  # the hook's tensor changes; .grad must not
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.full((3, 2), 2.0))
