"""genesis.X against torch.X for the top-level functions (genesis/_torch_functions.py): each called the
same way in both libraries on small fresh inputs, results compared (values, dtypes, shapes, tuples)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_helpers import g

import genesis
from device_support import requires_cuda
from genesis import _torch_functions

DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


def _x(*shape, domain="any", dtype=torch.float64):
    """Fresh random values (never zeros): any: normal away from 0; pos: uniform in [0.5, 2); small: |x| < 1."""
    if domain == "pos":
        return (torch.rand(shape, dtype=torch.float64) * 1.5 + 0.5).to(dtype)
    if domain == "small":
        return (torch.rand(shape, dtype=torch.float64) * 1.8 - 0.9).to(dtype)
    if domain == "int":
        return torch.randint(1, 6, shape).to(dtype)
    t = torch.randn(shape, dtype=torch.float64)
    return (t + 0.1 * torch.where(t >= 0, 1.0, -1.0)).to(dtype)


def _same(actual, expected) -> None:
    """A genesis result equals torch's: Tensors by value and dtype, tuples item by item, plain values exactly."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, genesis.Tensor), type(actual)
        assert tuple(actual.shape) == tuple(expected.shape), (tuple(actual.shape), tuple(expected.shape))
        assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
        got = torch.from_numpy(np.array(actual.detach().cpu().numpy()))
        tol = dict(rtol=1e-7, atol=1e-9) if expected.dtype.is_floating_point else dict(rtol=0, atol=0)
        torch.testing.assert_close(got, expected.detach(), **tol)
    elif isinstance(expected, tuple | list):
        assert isinstance(actual, tuple | list) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _same(a, e)
    else:
        assert actual == expected, (actual, expected)


UNARY = {
    "abs": "any",
    "neg": "any",
    "negative": "any",
    "exp": "any",
    "exp2": "any",
    "expm1": "any",
    "log": "pos",
    "log2": "pos",
    "log10": "pos",
    "log1p": "pos",
    "sqrt": "pos",
    "rsqrt": "pos",
    "square": "any",
    "reciprocal": "any",
    "sin": "any",
    "cos": "any",
    "tan": "small",
    "tanh": "any",
    "sigmoid": "any",
    "relu": "any",
    "erf": "any",
    "sign": "any",
    "floor": "any",
    "ceil": "any",
    "round": "any",
    "trunc": "any",
    "isnan": "any",
    "isinf": "any",
    "isfinite": "any",
    "logical_not": "any",
    "clone": "any",
    "detach": "any",
    "t": "any",
    "numel": "any",
    "is_tensor": "any",
    "is_floating_point": "any",
}
BINARY = {
    "add": "any",
    "sub": "any",
    "subtract": "any",
    "mul": "any",
    "multiply": "any",
    "div": "any",
    "divide": "any",
    "true_divide": "any",
    "pow": "pos",
    "remainder": "pos",
    "floor_divide": "pos",
    "fmod": "pos",
    "atan2": "any",
    "arctan2": "any",
    "maximum": "any",
    "minimum": "any",
    "eq": "int",
    "ne": "int",
    "lt": "any",
    "le": "int",
    "gt": "any",
    "ge": "int",
    "logical_and": "int",
    "logical_or": "int",
    "logical_xor": "int",
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions(name, device):
    t = _x(3, 4, domain=UNARY[name])
    _same(getattr(genesis, name)(g(t, device)), getattr(torch, name)(t))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_functions(name, device):
    a, b = _x(2, 3, 4, domain=BINARY[name]), _x(3, 1, domain=BINARY[name])
    _same(getattr(genesis, name)(g(a, device), g(b, device)), getattr(torch, name)(a, b))


def test_binary_functions_take_numbers():
    a = _x(3, 4)
    for name, args in [
        ("add", (a, 2.0)),
        ("sub", (1.5, a)),
        ("mul", (a, 3)),
        ("div", (2.0, a)),
        ("pow", (a.abs(), 1.5)),
        ("remainder", (a, 0.7)),
        ("floor_divide", (a, 0.4)),
        ("fmod", (a, -0.6)),
        ("eq", (a, 1.0)),
    ]:
        gargs = [g(x, "cpu") if isinstance(x, torch.Tensor) else x for x in args]
        _same(getattr(genesis, name)(*gargs), getattr(torch, name)(*args))
    b = _x(3, 4)
    _same(genesis.add(g(a, "cpu"), g(b, "cpu"), alpha=2), torch.add(a, b, alpha=2))
    _same(genesis.sub(g(a, "cpu"), g(b, "cpu"), alpha=-0.5), torch.sub(a, b, alpha=-0.5))


# name -> a function of (lib, *inputs) with the inputs' (shape, domain)
CALLS = {
    "clamp-numbers": (lambda lib, x: lib.clamp(x, -0.5, 0.5), [((3, 4), "any")]),
    "clamp-tensors": (lambda lib, x, lo, hi: lib.clamp(x, lo, hi), [((3, 4), "any"), ((3, 1), "small"), ((4,), "pos")]),
    "clip": (lambda lib, x: lib.clip(x, max=0.2), [((3, 4), "any")]),
    "clamp_min": (lambda lib, x: lib.clamp_min(x, 0.1), [((3, 4), "any")]),
    "clamp_max": (lambda lib, x: lib.clamp_max(x, -0.1), [((3, 4), "any")]),
    "where": (lambda lib, c, x, y: lib.where(c > 0, x, y), [((3, 4), "any"), ((3, 4), "any"), ((4,), "any")]),
    "lerp": (lambda lib, a, b, w: lib.lerp(a, b, w), [((3, 4), "any"), ((4,), "any"), ((3, 1), "small")]),
    "lerp-number": (lambda lib, a, b: lib.lerp(a, b, 0.7), [((3, 4), "any"), ((3, 4), "any")]),
    "addcmul": (
        lambda lib, x, a, b: lib.addcmul(x, a, b, value=0.5),
        [((3, 4), "any"), ((3, 1), "any"), ((4,), "any")],
    ),
    "addcdiv": (
        lambda lib, x, a, b: lib.addcdiv(x, a, b, value=2),
        [((3, 4), "any"), ((3, 4), "any"), ((3, 4), "pos")],
    ),
    "sum": (lambda lib, x: lib.sum(x), [((3, 4), "any")]),
    "sum-dims": (lambda lib, x: lib.sum(x, (0, 2), keepdim=True), [((2, 3, 4), "any")]),
    "sum-dtype": (lambda lib, x: lib.sum(x, 1, dtype=lib.float32), [((3, 4), "int")]),
    "mean": (lambda lib, x: lib.mean(x, -1), [((3, 4), "any")]),
    "prod": (lambda lib, x: lib.prod(x), [((3, 4), "pos")]),
    "prod-dim": (lambda lib, x: lib.prod(x, 1, keepdim=True), [((3, 4), "any")]),
    "amax": (lambda lib, x: lib.amax(x, 1), [((3, 4), "any")]),
    "amin": (lambda lib, x: lib.amin(x, (0, 1)), [((3, 4), "any")]),
    "max": (lambda lib, x: lib.max(x), [((3, 4), "any")]),
    "max-dim": (lambda lib, x: tuple(lib.max(x, 1, keepdim=True)), [((3, 4), "any")]),
    "max-other": (lambda lib, x, y: lib.max(x, y), [((3, 4), "any"), ((4,), "any")]),
    "min": (lambda lib, x: lib.min(x), [((3, 4), "any")]),
    "min-dim": (lambda lib, x: tuple(lib.min(x, 0)), [((3, 4), "any")]),
    "argmax": (lambda lib, x: lib.argmax(x, 1), [((3, 4), "any")]),
    "argmin": (lambda lib, x: lib.argmin(x), [((3, 4), "any")]),
    "var": (lambda lib, x: lib.var(x, 1), [((3, 4), "any")]),
    "var-correction": (lambda lib, x: lib.var(x, 0, correction=0, keepdim=True), [((3, 4), "any")]),
    "std": (lambda lib, x: lib.std(x), [((3, 4), "any")]),
    "std-unbiased": (lambda lib, x: lib.std(x, 1, unbiased=False), [((3, 4), "any")]),
    "logsumexp": (lambda lib, x: lib.logsumexp(x, 1), [((3, 4), "any")]),
    "all": (lambda lib, x: lib.all(x > 0, 1), [((3, 4), "any")]),
    "any": (lambda lib, x: lib.any(x > 0), [((3, 4), "any")]),
    "cumsum": (lambda lib, x: lib.cumsum(x, 1), [((3, 4), "any")]),
    "cumsum-dtype": (lambda lib, x: lib.cumsum(x, 0, dtype=lib.float64), [((3, 4), "int")]),
    "cumprod": (lambda lib, x: lib.cumprod(x, -1), [((3, 4), "any")]),
    "matmul": (lambda lib, a, b: lib.matmul(a, b), [((2, 3, 4), "any"), ((4, 5), "any")]),
    "softmax": (lambda lib, x: lib.softmax(x, 1), [((3, 4), "any")]),
    "log_softmax": (lambda lib, x: lib.log_softmax(x, 0), [((3, 4), "any")]),
    "tril": (lambda lib, x: lib.tril(x, -1), [((3, 4), "any")]),
    "triu": (lambda lib, x: lib.triu(x, 1), [((3, 4), "any")]),
    "reshape": (lambda lib, x: lib.reshape(x, (4, -1)), [((2, 3, 4), "any")]),
    "transpose": (lambda lib, x: lib.transpose(x, 0, 2), [((2, 3, 4), "any")]),
    "permute": (lambda lib, x: lib.permute(x, (2, 0, 1)), [((2, 3, 4), "any")]),
    "squeeze": (lambda lib, x: lib.squeeze(x), [((3, 1, 4), "any")]),
    "squeeze-dim": (lambda lib, x: lib.squeeze(x, 1), [((3, 1, 4), "any")]),
    "unsqueeze": (lambda lib, x: lib.unsqueeze(x, -1), [((3, 4), "any")]),
    "flatten": (lambda lib, x: lib.flatten(x, 1), [((2, 3, 4), "any")]),
    "narrow": (lambda lib, x: lib.narrow(x, 1, 1, 2), [((3, 4), "any")]),
    "split": (lambda lib, x: lib.split(x, 2, 1), [((3, 5), "any")]),
    "split-sizes": (lambda lib, x: lib.split(x, [1, 2], 0), [((3, 5), "any")]),
    "chunk": (lambda lib, x: lib.chunk(x, 2, -1), [((3, 5), "any")]),
    "cat": (lambda lib, a, b: lib.cat([a, b], 1), [((3, 4), "any"), ((3, 2), "any")]),
    "stack": (lambda lib, a, b: lib.stack([a, b]), [((3, 4), "any"), ((3, 4), "any")]),
}
# Functions over Tensor methods that other parts of Genesis provide: checked once the method exists.
INDEXED = {
    "gather": (lambda lib, x: lib.gather(x, 1, lib.tensor([[0, 2], [1, 1], [3, 0]])), [((3, 4), "any")]),
    "scatter": (
        lambda lib, x, s: lib.scatter(x, 1, lib.tensor([[0, 2], [1, 3], [3, 0]]), s),
        [((3, 4), "any"), ((3, 2), "any")],
    ),
    "scatter_add": (
        lambda lib, x, s: lib.scatter_add(x, 0, lib.tensor([[0, 2, 1, 1], [2, 2, 0, 1]]), s),
        [((3, 4), "any"), ((2, 4), "any")],
    ),
    "index_select": (lambda lib, x: lib.index_select(x, 1, lib.tensor([3, 0, 0])), [((3, 4), "any")]),
    "index_add": (lambda lib, x, s: lib.index_add(x, 0, lib.tensor([2, 0]), s), [((3, 4), "any"), ((2, 4), "any")]),
    "masked_fill": (lambda lib, x: lib.masked_fill(x, x > 0, -1.5), [((3, 4), "any")]),
    "masked_select": (lambda lib, x: lib.masked_select(x, x > 0), [((3, 4), "any")]),
    "nonzero": (lambda lib, x: lib.nonzero(x > 0), [((3, 4), "any")]),
    "take_along_dim": (lambda lib, x: lib.take_along_dim(x, lib.tensor([[0], [3], [1]]), 1), [((3, 4), "any")]),
    "sort": (lambda lib, x: tuple(lib.sort(x, 1, descending=True)), [((3, 4), "any")]),
    "argsort": (lambda lib, x: lib.argsort(x, 0), [((3, 4), "any")]),
    "topk": (lambda lib, x: tuple(lib.topk(x, 2, 1)), [((3, 4), "any")]),
    "diagonal": (lambda lib, x: lib.diagonal(x, 1), [((3, 4), "any")]),
    "movedim": (lambda lib, x: lib.movedim(x, 0, 2), [((2, 3, 4), "any")]),
    "swapaxes": (lambda lib, x: lib.swapaxes(x, 0, 1), [((2, 3, 4), "any")]),
    "swapdims": (lambda lib, x: lib.swapdims(x, 2, 1), [((2, 3, 4), "any")]),
    "unflatten": (lambda lib, x: lib.unflatten(x, 1, (2, 2)), [((3, 4), "any")]),
}
METHOD_OF = {"swapdims": "swapaxes"}


def _run(fn, specs, device):
    inputs = [_x(*shape, domain=domain) for shape, domain in specs]
    expected = fn(torch, *inputs)
    _same(fn(_GenesisLib(device), *[g(t, device) for t in inputs]), expected)


class _GenesisLib:
    """genesis, with tensor(...) made on the test's device (for index tensors)."""

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(genesis, name)

    def tensor(self, data):
        return genesis.tensor(data, device=self._device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_functions_match_torch(name, device):
    _run(*CALLS[name], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(INDEXED))
def test_indexing_and_view_functions_match_torch(name, device):
    _run(*INDEXED[name], device)


def test_randperm_is_a_permutation():
    perm = genesis.randperm(7)
    assert perm.dtype == genesis.int64 and sorted(perm.tolist()) == list(range(7))


def test_bernoulli_draws_zeros_and_ones():
    p = genesis.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    assert genesis.bernoulli(p).tolist() == p.tolist()
    assert set(genesis.bernoulli(genesis.full((64,), 0.5)).tolist()) == {0.0, 1.0}


def test_functions_are_exported_and_keep_gradients():
    names = set(_torch_functions.__all__)
    assert names <= set(genesis.__all__)
    for name in genesis.__all__:
        assert hasattr(genesis, name), name
    public = {
        n
        for n, v in vars(_torch_functions).items()
        if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == _torch_functions.__name__
    }
    assert public <= names, public - names
    assert genesis.exp is _torch_functions.exp and genesis.matmul is _torch_functions.matmul
    x = genesis.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=genesis.float64, requires_grad=True)
    genesis.sum(genesis.cumprod(genesis.lerp(x, genesis.exp(x), 0.25), 1)).backward()
    t = torch.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=torch.float64, requires_grad=True)
    torch.sum(torch.cumprod(torch.lerp(t, torch.exp(t), 0.25), 1)).backward()
    _same(x.grad, t.grad)


def test_matmul_runs_in_the_autocast_dtype():
    a, b = g(_x(3, 4, dtype=torch.float32), "cpu"), g(_x(4, 2, dtype=torch.float32), "cpu")
    with genesis.amp.autocast("cpu", dtype=genesis.bfloat16):
        assert genesis.matmul(a, b).dtype == genesis.bfloat16
    assert genesis.matmul(a, b).dtype == genesis.float32


def test_a_missing_method_fails_only_when_called():
    class Bare:
        pass

    with pytest.raises(AttributeError, match="gather"):
        genesis.gather(Bare(), 0, None)
