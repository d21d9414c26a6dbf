"""The registry's resolved entries (the hot path, registry.py): they give what the general path gives,
with the result dtypes torch gives, and they are forgotten when what they were resolved from changes."""

from __future__ import annotations

import re

import pytest
import torch

import genesis_ndarray as nd
from genesis_ndarray import ALL_DTYPES, DType, registry
from genesis_ndarray.dtypes import binary_result_dtype

BINARY_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
              "logical_and", "logical_or", "logical_xor", "pow", "remainder")  # fmt: skip


def _sample(dtype: DType, shape: tuple[int, ...] = (3, 4)) -> torch.Tensor:
    if dtype.name == "bool":
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, dtype=torch.float64) * 3).to(dtype.torch)
    return torch.randint(1, 5, shape, dtype=dtype.torch)


@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_binary_result_dtype_is_torchs(op: str, dtype: DType) -> None:
    """Where the rule names a dtype, it is torch.result_type's (operands of one dtype, and numbers)."""
    a, b = _sample(dtype), _sample(dtype)
    for other, operand in ((dtype, b), (int, 2), (float, 2.5), (bool, True)):
        known = binary_result_dtype(op, dtype, other)
        if known is None:
            continue
        try:
            ref = getattr(torch, op)(a, operand if isinstance(operand, torch.Tensor) else torch.tensor(operand))
        except RuntimeError:  # torch refuses the op (sub with a bool): the entry's call raises that same error
            continue
        assert known.torch == ref.dtype, (op, dtype.name, other)


@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("dtype", ("float32", "float16", "int64", "int32", "uint8", "bool"))
def test_binary_through_the_entry_equals_the_general_path(op: str, dtype: str) -> None:
    """NDArray.binary (the resolved path) gives what the backend's general binary gives (torch's own
    function): values, dtype, or the same error, with a second array of one dtype, of another dtype,
    0-d, and a Python number."""
    d = nd.as_dtype(dtype)
    a = _sample(d)
    general = registry.lookup("binary", "cpu")
    for other in (_sample(d), _sample(nd.float64), _sample(d, ()), 2, 2.5, True):
        mine = nd.from_torch(a)
        theirs = nd.from_torch(other) if isinstance(other, torch.Tensor) else other
        try:
            ref = general(op, a, other)
        except Exception as error:  # whatever torch raises, the entry must raise alike, with that message
            with pytest.raises(type(error), match=re.escape(str(error))):
                mine.binary(op, theirs)
            continue
        for _ in range(2):  # the first call resolves the entry, the second takes it from the cache
            got = mine.binary(op, theirs)
            assert got.dtype.torch == ref.dtype, (op, dtype, type(other).__name__)
            torch.testing.assert_close(got.native, ref, equal_nan=True)


def test_unary_reduce_matmul_entries_equal_torch() -> None:
    x = torch.randn(5, 6, dtype=torch.float64).to(torch.float32)
    a = nd.array(x.numpy())
    for op in ("relu", "exp", "sigmoid", "isnan", "neg", "floor"):
        got = getattr(a, op)()
        ref = getattr(torch, op)(x)
        assert got.dtype.torch == ref.dtype
        torch.testing.assert_close(torch.from_numpy(got.numpy()), ref)
    for got, ref in ((a.sum(), x.sum()), (a.sum(1), x.sum(1)), (a.mean(0, keepdim=True), x.mean(0, keepdim=True))):
        assert got.dtype.torch == ref.dtype and tuple(got.shape) == tuple(ref.shape)
        torch.testing.assert_close(torch.from_numpy(got.numpy()), ref)
    ints = torch.randint(0, 9, (4, 3))
    got = nd.array(ints.numpy()).sum()
    assert got.dtype.name == "int64" and got.item() == ints.sum().item()
    w = torch.randn(6, 2)
    torch.testing.assert_close(torch.from_numpy(a.matmul(nd.array(w.numpy())).numpy()), x @ w)


def test_inplace_entry_equals_torch() -> None:
    x = torch.randn(4, 4)
    a = nd.array(x.numpy().copy())
    a.mul_(3)
    a.add_(nd.array(x.numpy()))
    torch.testing.assert_close(torch.from_numpy(a.numpy()), x * 3 + x)
    with pytest.raises(RuntimeError):  # torch's refusal of a float result written into an int array
        nd.array(torch.ones(3, dtype=torch.int64).numpy()).mul_(2.5)


@pytest.fixture
def fake_device():
    """A device type of this test's own, taken out of the registry afterwards."""
    yield "resolved-test"
    registry._TABLES.pop("resolved-test", None)


def test_entries_are_cached_and_forgotten_on_registration(fake_device: str) -> None:
    asked: list[tuple] = []

    @registry.register_resolver("binary", fake_device)
    def resolve(op: str, dtype: object, other: object) -> object:
        asked.append((op, dtype, other))
        return None if op == "sub" else ("entry", op)

    f32 = nd.float32
    assert registry.resolve("binary", "add", fake_device, f32, f32) == ("entry", "add")
    assert registry.resolve("binary", "add", fake_device, f32, f32) == ("entry", "add")
    assert registry.resolve("binary", "sub", fake_device, f32, f32) is None
    assert registry.resolve("binary", "sub", fake_device, f32, f32) is None  # "no entry" is cached too
    assert len(asked) == 2
    registry.register("binary", fake_device)(lambda op, a, b: None)  # a new implementation: resolve again
    registry.resolve("binary", "add", fake_device, f32, f32)
    assert len(asked) == 3
    registry.invalidate()
    registry.resolve("binary", "add", fake_device, f32, f32)
    assert len(asked) == 4
    assert registry.resolve("unary", "relu", fake_device, f32) is None  # a family without a resolver


def test_both_backends_resolve_the_same_families() -> None:
    def families(device_type: str) -> set[str]:
        return set(registry.table(device_type).resolved.resolvers)

    assert families("cpu") == families("cuda") == {"binary", "binary_", "unary", "reduce", "matmul"}


def test_default_dtype_change_reaches_resolved_division() -> None:
    ints = nd.array(torch.arange(1, 5).numpy())
    assert (ints / ints).dtype.name == "float32"
    nd.set_default_dtype(nd.float64)
    try:
        assert (ints / ints).dtype.name == "float64"
        assert (ints / 2).dtype.name == "float64"
    finally:
        nd.set_default_dtype(nd.float32)
    assert (ints / ints).dtype.name == "float32"
